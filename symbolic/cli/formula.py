"""`mem4d formula`: each component's simplified closed form (text, LaTeX or JSON), rendered once and cached on disk."""

from __future__ import annotations

import argparse
import json

from ..config.switches import BACKENDS
from ..recipes import DEFAULT_PROFILE, get, select
from ..flags.switches import add_switch_args
from ..flags.training import add_dispatcher_arg, add_recipe_arg, add_text_only_arg, profile_from_args


ARCHITECTURE = ("moe_act needs experts", "mla_up_proj needs MLA")  # rules that read the architecture alone


def switches_from_args(args: argparse.Namespace):
    """The switches of the Training these flags describe (its other fields at their defaults), and of the model's
    architecture (experts, shared experts, biases, q/k norms, tied embeddings) when --model is given."""
    from ..config import rules
    from ..config.hfconfig import resolve_model
    from ..config.switches import Switches
    from ..config.training import training_from_json

    from ..flags.precision import precision_from_args
    from ..flags.training import recipe_defaults

    shape = resolve_model(args.model, args.text_only) if args.model is not None else None
    training = training_from_json(
        {**vars(args), **recipe_defaults(args, args.profile), **precision_from_args(args, args.profile)}
    )  # the profile's own precision
    if shape is not None:  # the rules estimate checks, on the same table: a flag the profile refuses is one line
        training.check(shape, args.profile)
    else:
        rules.check(rules.letters(training), select(args.profile, model=False))
        # the table's rows on what a model's architecture allows, for the dense GQA Llama formula describes
        x = rules.letters(training)
        x.__dict__.update(E=0, mla=False, model="formula's dense Llama (no --model)")
        rules.check(x, tuple(rule for rule in select(args.profile, model=True) if rule.name in ARCHITECTURE))
    return Switches.of(training, overheads=args.overheads, backend=args.backend, shape=shape)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("component", nargs="?", default=None, help="one component (default: all)")
    add_recipe_arg(parser)
    parser.add_argument(
        "--model",
        default=None,
        metavar="M",
        help="a preset or config.json whose architecture sets the terms: routed and shared experts "
        "(MoE components), biases, q/k norms, tied embeddings (default: a dense Llama)",
    )
    add_text_only_arg(parser)
    g = parser.add_argument_group("switches")
    add_switch_args(g, recipe=True)
    add_dispatcher_arg(g)
    g.add_argument("--no-overheads", dest="overheads", action="store_false", help="drop the overhead components")
    g.add_argument(
        "--backend", choices=BACKENDS, default="gpu", help="profile jax: whose compiled program, XLA:GPU's or XLA:CPU's"
    )
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--latex", action="store_true", help="print LaTeX instead of text")
    out.add_argument("--json", action="store_true", help="print JSON (name, doc, text, latex)")
    parser.add_argument(
        "--time",
        action="store_true",
        help="the step-time model's components in seconds (docs/time.md) instead of the bytes",
    )


def run(args: argparse.Namespace) -> int:
    args.profile = profile_from_args(args)
    from ..render.rendered import rendered, select

    switches = switches_from_args(args)
    if args.time:
        from .steptime import print_formulas

        return print_formulas(args, switches)
    done = rendered(args.profile, switches)
    items = select(done["formulas"], args.component)
    buffers = done["buffers"] is not None and args.component is None
    if args.json:
        extra = {"buffers": done["buffers"], "phases": done["phases"]} if buffers else {}
        print(
            json.dumps(
                {
                    "profile": args.profile,
                    "switches": switches.shown(),
                    "unit": "bytes per GPU",
                    "formulas": items,
                    **extra,
                },
                indent=2,
            )
        )
        return 0
    if args.latex:
        for item in items:
            print(f"% {item['name']}: {item['doc']}\n{item['latex']}\n")
        return 0
    from ..render.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(min_width=120)
    model = f", model {args.model}" if args.model is not None else ""
    table = Table(
        title=f"profile {args.profile}{model}: bytes per GPU ({switches.recompute} recompute, sp={switches.sp}, "
        f"flash={switches.flash_attn}, zero={switches.zero}, overheads={switches.overheads})",
        title_justify="left",
    )
    table.add_column("component", no_wrap=True)
    table.add_column("closed form")
    table.add_column("what / source")
    for item in items:
        table.add_row(item["name"], Text(item["text"]), Text(item["doc"]))  # Text: "[c*d > 1]" is not rich markup
    if buffers:
        _print_buffers(console, done, switches)
    console.print(table)
    if args.profile != DEFAULT_PROFILE and get(args.profile).flag and args.component is None:  # a trainer's recipe
        console.print(
            _changes(done["formulas"], rendered(DEFAULT_PROFILE, switches)["formulas"], args.recipe or args.profile)
        )
    return 0


def _changes(recipe: list[dict], megatron: list[dict], name: str) -> str:
    """What a recipe changes against --recipe megatron (the paper profile) at the same switches: the components whose
    closed form differs, those only the recipe has, those only Megatron-LM's accounting has."""
    from ..recipes import RECIPES, widths

    ours, theirs = (
        {item["name"]: item["text"] for item in items if "." not in item["name"] and item["name"] != "total"}
        for items in (recipe, megatron)
    )
    differ = [n for n in ours if n in theirs and ours[n] != theirs[n]]
    only = [n for n in ours if n not in theirs]
    gone = [n for n in theirs if n not in ours]
    mine, base = widths(RECIPES.get(name, name)), widths(DEFAULT_PROFILE)
    precision = [f"{key}={mine[key]} (megatron {base[key]})" for key in mine if mine[key] != base[key]]
    return (
        f"--recipe {name} against --recipe megatron: components whose closed form differs: {', '.join(differ) or '-'};"
        f" only here: {', '.join(only) or '-'}; only in megatron's: {', '.join(gone) or '-'}; precision: "
        f"{', '.join(precision) or 'the same'}"
    )


def _print_buffers(console, done: dict, switches) -> None:
    """The buffer table: each buffer's per-device shape, bytes per element, phases; then each phase's live bytes."""
    from rich.table import Table
    from rich.text import Text

    table = Table(
        title=f"buffers of one device (XLA:{switches.backend.upper()}), in the phases each is live",
        title_justify="left",
    )
    for col in ("buffer", "shape (per device)", "bytes/element", "phases", "what"):
        table.add_column(col)
    for row in done["buffers"]:
        count = f"{row['count']} x " if row["count"] != 1 else ""
        phases = "all" if row["phases"] == done["phase_names"] else ", ".join(row["phases"])
        table.add_row(row["name"], Text(count + row["shape"]), Text(row["width"]), phases, Text(row["doc"]))
    console.print(table)
    sums = Table(title="live temporaries per phase; XLA's temp is the largest", title_justify="left")
    sums.add_column("phase")
    sums.add_column("bytes")
    for phase in done["phases"]:
        sums.add_row(phase["name"], Text(phase["bytes"]))
    console.print(sums)
