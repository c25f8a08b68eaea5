"""estimate's step-time flags (--gpu, --system) and its `time` block: JSON and a small table of its own."""

from __future__ import annotations

from ..config.errors import ConfigError
from ..time.cards import CARDS
from ..time.systems import SYSTEMS, default_system, system


def add_arguments(parser) -> None:
    """--gpu CARD and --system NAME|FILE.toml."""
    g = parser.add_argument_group("step time")
    g.add_argument(
        "--gpu",
        choices=tuple(CARDS),
        default=None,
        metavar="CARD",
        help=f"the GPU card ({', '.join(CARDS)}): the step-time model's, and the compute capability that sizes "
        "the cuBLAS workspaces (4 MiB for Transformer Engine's below sm90); default: --system's card, else h100-80gb",
    )
    g.add_argument(
        "--system",
        default=None,
        metavar="NAME",
        help=f"the card's system and network ({', '.join(SYSTEMS)}, or a .toml file with a [system] table: "
        "card, domain, nvl_ring, nvl_a2a, net_ring, net_a2a in GB/s); default: the card's DGX / NVL72",
    )


def chosen_system(args):
    """The System of --system / --gpu; a one-line ConfigError when they disagree."""
    if args.system is None:
        return default_system(args.gpu)
    chosen = system(args.system)
    if args.gpu is not None and chosen.card_name != args.gpu:
        raise ConfigError(f"--gpu {args.gpu} disagrees with --system {args.system} (a {chosen.card_name} system)")
    return chosen


def block(args, shape, training) -> dict:
    """estimate's `time`: the step-time model's result, or {"refused": why} for what it does not model."""
    from ..time.evaluate import refusal, step_time

    chosen = chosen_system(args)
    if args.profile != "paper":
        return {
            "refused": f"the step-time model follows Megatron-Core (--recipe megatron); profile {args.profile} "
            "is not modelled"
        }
    reason = refusal(shape)
    try:
        return {"refused": reason} if reason else step_time(shape, training, chosen)
    except ConfigError as err:  # a mechanism the step time cannot state (CPU offload's host link): memory stands
        return {"refused": str(err)}


def print_block(console, time: dict) -> None:
    """The step time's breakdown as its own table, after the memory tables."""
    from rich.table import Table

    if "refused" in time:
        console.print(f"step time: not stated ({time['refused']}).")
        return
    console.print(f"step time on {time['system']} ({time['card']}, linear layers in {time['precision']}):")
    table = Table()
    table.add_column("component", no_wrap=True)
    table.add_column("seconds", justify="right")
    table.add_column("% of step", justify="right")
    for name, value in time["breakdown"].items():
        if value:
            table.add_row(name, f"{value:.4f}", f"{100 * value / time['step_s']:.1f}")
    table.add_section()
    table.add_row("step", f"{time['step_s']:.4f}", "100.0", style="bold")
    console.print(table)
    console.print(
        f"{time['tokens_per_s_per_gpu']:,.0f} tokens/s/GPU, {time['model_tflops_per_gpu']:,.0f} model "
        f"TFLOP/s/GPU, MFU {100 * time['mfu']:.1f} % of the dense BF16 peak (docs/time.md)."
    )


def print_formulas(args, switches) -> int:
    """`mem4d formula --time`: each step-time component's closed form in seconds (the --json/--latex of formula)."""
    import json

    import sympy as sp

    from ..time.choices import Choices
    from ..time.step import step

    ch = Choices(
        switches.moe,
        switches.mla,
        switches.q_lora,
        3 if switches.mlp == "swiglu" else 2,
        switches.recompute,
        tuple(switches.modules.replace("+", ",").split(",")),
        switches.zero,
        switches.dispatcher,
        switches.moe_bias,
        qk_norm=switches.qk_norm != "none",
        rope=not switches.positions,
        out_bias=switches.o_bias,
        mlp_bias=switches.mlp_bias,
    )
    from ..time.symbols import BY_NAME, LATEX

    parts = step(ch)
    names = {BY_NAME[name]: tex for name, tex in LATEX.items()}
    items = [
        {"name": x.name, "doc": x.doc, "text": str(x.expr), "latex": sp.latex(x.expr, symbol_names=names)}
        for x in parts
    ]
    if args.json:
        print(json.dumps({"unit": "seconds per step", "choices": ch._asdict(), "formulas": items}, indent=2))
    else:
        for item in items:
            print(
                f"% {item['name']}: {item['doc']}\n{item['latex']}\n"
                if args.latex
                else f"{item['name']} = {item['text']}\n    {item['doc']}"
            )
    return 0
