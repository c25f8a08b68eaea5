"""Argument groups shared by every `mem4d` subcommand: the model, the training config, memory sizes."""
from __future__ import annotations

import argparse
import re

from ..config.dtypes import JAX_COMPUTE_DTYPE, JAX_PARAM_DTYPE
from ..config.errors import ConfigError
from ..config.shapes import DEFAULT_MODEL, ModelShape, resolve_model
from ..config.training import RECOMPUTE, ZERO_STAGES, Training, training_from_json

_UNITS = {
    "": 1, "b": 1,
    "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9, "t": 10**12, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}


def parse_bytes(text: str) -> int:
    """'80GiB', '141GB', '8e10', '96 GiB' -> bytes; anything else is a one-line ConfigError."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*", str(text))
    if not match or match.group(2).lower() not in _UNITS:
        raise ConfigError(f"cannot parse memory size {text!r}: use a number with an optional unit such as 80GiB, 141GB or 8e10")
    value = float(match.group(1)) * _UNITS[match.group(2).lower()]
    if value <= 0:
        raise ConfigError(f"memory size must be positive, got {text!r}")
    return int(value)


def positive_int(text: str) -> int:
    """argparse type: a strictly positive integer."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def stage_layers(text: str) -> tuple[int, ...]:
    """argparse type of --stage-layers: '7,8,8,7' -> (7, 8, 8, 7), positive integers."""
    try:
        layers = tuple(int(x) for x in text.split(","))
    except ValueError:
        layers = ()
    if not layers or min(layers) <= 0:
        raise argparse.ArgumentTypeError(f"expected comma-separated positive layer counts such as 7,8,8,7, got {text!r}")
    return layers


def add_model_args(parser: argparse.ArgumentParser, default: str = DEFAULT_MODEL) -> None:
    parser.add_argument("--model", default=default, metavar="M",
                        help=f"preset name or path to a Hugging Face config.json (default: {default})")


def add_training_args(parser: argparse.ArgumentParser, defaults: Training = Training()) -> None:
    """--dp --tp --pp --cp --vpp --seq --mbs --gbs --recompute and the on/off switches."""
    g = parser.add_argument_group("parallelism and batch")
    g.add_argument("--dp", type=positive_int, default=defaults.d, help="data parallel size d")
    g.add_argument("--tp", type=positive_int, default=defaults.t, help="tensor (+sequence) parallel size t")
    g.add_argument("--pp", type=positive_int, default=defaults.p, help="pipeline parallel size p")
    g.add_argument("--cp", type=positive_int, default=defaults.c, help="context parallel size c")
    g.add_argument("--vpp", type=positive_int, default=defaults.vpp, help="virtual pipeline stages per rank")
    g.add_argument("--seq", type=positive_int, default=defaults.s, help="sequence length s")
    g.add_argument("--mbs", type=positive_int, default=defaults.b, help="micro batch size b")
    g.add_argument("--gbs", type=positive_int, default=defaults.gbs, help="global batch in sequences (default: mbs*dp*pp)")
    g.add_argument("--stage-layers", type=stage_layers, default=defaults.stage_layers, metavar="N,N,...",
                   help="layers of each pipeline stage, pp entries summing to L (with --vpp, each a multiple of vpp: "
                        "the stage's chunks); default L/pp each")
    add_switch_args(g, defaults)


def add_switch_args(group, defaults: Training = Training()) -> None:
    """--recompute, --no-sp, --no-flash-attn, --zero (aliases --dist-opt / --no-dist-opt): what shapes the formulas."""
    group.add_argument("--recompute", default=defaults.recompute, metavar="{none,selective,full}",
                       help="activation recomputation (default: %(default)s)")
    group.add_argument("--no-sp", dest="sp", action="store_false", default=defaults.sp,
                       help="disable sequence parallelism")
    group.add_argument("--no-flash-attn", dest="flash_attn", action="store_false", default=defaults.flash_attn,
                       help="keep s x s attention scores and softmax for backward")
    group.add_argument("--zero", type=int, choices=ZERO_STAGES, default=defaults.zero,
                       help="ZeRO stage, what is sharded over d*c: 0 nothing, 1 optimizer states, 2 also gradients, "
                            "3 also weights (FSDP) (default: %(default)s)")
    group.add_argument("--dist-opt", dest="zero", action="store_const", const=1, default=argparse.SUPPRESS,
                       help="alias of --zero 1 (Megatron's distributed optimizer)")
    group.add_argument("--no-dist-opt", dest="zero", action="store_const", const=0, default=argparse.SUPPRESS,
                       help="alias of --zero 0")


def model_from_args(args: argparse.Namespace) -> ModelShape:
    return resolve_model(args.model)


def training_from_args(args: argparse.Namespace, shape: ModelShape | None = None, profile: str | None = None) -> Training:
    """Build and (given the model) check the training config, with the byte widths `profile` models (default: the
    Training defaults, Megatron's bf16 mixed precision); errors are one-line ConfigErrors."""
    from ..profiles import widths

    training = training_from_json({**vars(args), **(widths(profile) if profile else {})})
    return training.check(shape) if shape is not None else training


def add_target_args(group) -> None:
    """--target NAME (cpu or a shipped GPU card) and --target-config FILE (any other card), on one argument group."""
    from jaxcheck.targets import DEFAULT, names  # no jax

    group.add_argument("--target", default=None, metavar="NAME",
                       help=f"compile for cpu (simulated CPU devices) or a GPU card, compiled by XLA:GPU without a GPU: "
                            f"{', '.join(names()[1:])} (default: {DEFAULT})")
    group.add_argument("--target-config", default=None, metavar="FILE",
                       help="a GpuTargetConfigProto text file for another card (instead of --target)")


def target_from_args(args: argparse.Namespace):
    """The jaxcheck.targets.Target the flags name; both flags at once, an unknown name or a bad file: one line."""
    from jaxcheck.targets import DEFAULT, load

    if args.target is not None and args.target_config is not None:
        raise ConfigError(f"--target {args.target} and --target-config {args.target_config} conflict: give one")
    return load(args.target_config or args.target or DEFAULT)


def add_step_args(parser: argparse.ArgumentParser):
    """The jax step's flags of compile and verify (--remat, --zero1/--no-zero1, dtypes, --target, --no-measure,
    --json); returns their argument group for the command's own."""
    j = parser.add_argument_group("jax step")
    j.add_argument("--remat", dest="recompute", default=argparse.SUPPRESS, metavar="{none,selective,full}",
                   help="alias of --recompute (the remat policy)")
    j.add_argument("--zero1", dest="zero", action="store_const", const=1, default=argparse.SUPPRESS,
                   help="alias of --zero 1: AdamW states sharded over data x context")
    j.add_argument("--no-zero1", dest="zero", action="store_const", const=0, default=argparse.SUPPRESS,
                   help="alias of --zero 0: AdamW states replicated like the params")
    j.add_argument("--param-dtype", default=JAX_PARAM_DTYPE, help="parameter / gradient / Adam dtype (default: %(default)s)")
    j.add_argument("--compute-dtype", default=JAX_COMPUTE_DTYPE, help="matmul and activation dtype (default: %(default)s)")
    add_target_args(j)
    j.add_argument("--no-measure", dest="measure", action="store_false",
                   help="on this machine's GPUs of the target card, skip running the step to read the measured peak")
    j.add_argument("--json", action="store_true", help="print one JSON object")
    return j


def spec_from_args(args: argparse.Namespace):
    """The checked jaxcheck.spec.StepSpec of compile's or verify's flags (jaxcheck's spec imported here, no jax)."""
    if args.recompute not in RECOMPUTE:
        raise ConfigError(f"--remat/--recompute must be one of {', '.join(RECOMPUTE)}, got {args.recompute!r}")
    from jaxcheck.spec import JaxOptions, StepSpec

    shape = model_from_args(args)
    opts = JaxOptions(param_dtype=args.param_dtype, compute_dtype=args.compute_dtype)
    return StepSpec(shape, training_from_args(args, shape), opts).check()
