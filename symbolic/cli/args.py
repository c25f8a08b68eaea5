"""Argument groups shared by every `mem4d` subcommand: the model, the training config, memory sizes."""
from __future__ import annotations

import argparse
import os
import re
import tempfile
from pathlib import Path

from ..config.dtypes import FLOATS
from ..config.errors import ConfigError
from ..config.hfconfig import resolve_model
from ..config.shapes import DEFAULT_MODEL, MAX_SIZE, ModelShape
from ..config import precision
from ..recipes.jax.step import COMPUTE_DTYPE as JAX_COMPUTE_DTYPE, PARAM_DTYPE as JAX_PARAM_DTYPE
from ..config.training import RECOMPUTE, RECOMPUTE_MODULES, SCHEDULES, ZERO_STAGES, Training, training_from_json

_UNITS = {
    "": 1, "b": 1,
    "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9, "t": 10**12, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}
UNITS_HELP = "GiB = 2^30 bytes (KiB, MiB, TiB alike), GB or G = 10^9 bytes (KB, MB, TB alike), no unit = bytes"
MAX_BYTES = 2**63 - 1  # what a memory size may be: 1 byte to 8 EiB


def parse_bytes(text: str, where: str | None = None) -> int:
    """'80GiB', '141GB', '8e10', '96 GiB' -> bytes; anything else (no number, an unknown unit, not finite, under one
    byte, over 8 EiB) is a one-line ConfigError naming the text, what is allowed and, given, `where` (flag=value)."""
    prefix = f"{where}: " if where else ""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*", str(text))
    if not match or match.group(2).lower() not in _UNITS:
        raise ConfigError(f"{prefix}cannot parse memory size {text!r}: use a number with an optional unit such as "
                          f"80GiB, 141GB or 8e10 ({UNITS_HELP})")
    value = float(match.group(1)) * _UNITS[match.group(2).lower()]
    if not 1 <= value <= MAX_BYTES:  # inf and nan fail too
        raise ConfigError(f"{prefix}memory size {text!r} must be from 1 byte to 8 EiB, got {value:g} bytes")
    return int(value)


def memory_size(text: str) -> int:
    """argparse type of a memory size: parse_bytes, its message kept (argparse prefixes the flag)."""
    try:
        return parse_bytes(text)
    except ConfigError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def describe_bytes(n: int) -> str:
    """A parsed memory size with its units, e.g. '80,000,000,000 bytes = 74.51 GiB = 80.00 GB'."""
    return f"{n:,} bytes = {n / 2**30:,.2f} GiB = {n / 10**9:,.2f} GB"


def positive_int(text: str) -> int:
    """argparse type: an integer from 1 to 2^40."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if not 1 <= value <= MAX_SIZE:
        raise argparse.ArgumentTypeError(f"expected a positive integer up to 2^40, got {text!r}")
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


def capacity(text: str) -> float:
    """argparse type of --moe-capacity: a number above 0 and at most MAX_CAPACITY."""
    from ..config.training import MAX_CAPACITY

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {text!r}") from None
    if not 0 < value <= MAX_CAPACITY:  # nan and inf fail too
        raise argparse.ArgumentTypeError(f"expected a number above 0 and at most {MAX_CAPACITY:g}, got {text!r}")
    return value


def fraction(text: str) -> float:
    """argparse type of --threshold: a number in (0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1], got {text!r}") from None
    if not 0 < value <= 1:  # nan fails too
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1], got {text!r}")
    return value


def add_fit_args(group, default_gpu_mem: str = "80GiB") -> None:
    """--gpu-mem and --threshold: the GPU's memory and the share of it an estimate must stay under."""
    group.add_argument("--gpu-mem", type=memory_size, default=default_gpu_mem, metavar="SIZE",
                       help=f"memory of one GPU: a number and a unit, {UNITS_HELP}; 80G is 80 GB = 74.5 GiB")
    group.add_argument("--threshold", type=fraction, default=0.8,
                       help="fits when the peak (max of the total and every exact stage) is under threshold x GPU "
                            "memory, a number in (0, 1]")


def add_model_args(parser: argparse.ArgumentParser, default: str = DEFAULT_MODEL) -> None:
    parser.add_argument("--model", default=default, metavar="M",
                        help=f"preset name or path to a Hugging Face config.json (default: {default})")


def add_training_args(parser: argparse.ArgumentParser, defaults: Training = Training()) -> None:
    """--dp --tp --pp --cp --vpp --seq --mbs --gbs --recompute and the on/off switches (help shows `defaults`)."""
    g = parser.add_argument_group("parallelism and batch")
    g.add_argument("--dp", type=positive_int, default=defaults.d, help="data parallel size d")
    g.add_argument("--tp", type=positive_int, default=defaults.t, help="tensor (+sequence) parallel size t")
    g.add_argument("--pp", type=positive_int, default=defaults.p, help="pipeline parallel size p")
    g.add_argument("--cp", type=positive_int, default=defaults.c, help="context parallel size c")
    g.add_argument("--vpp", type=positive_int, default=defaults.vpp, help="virtual pipeline stages per rank")
    g.add_argument("--seq", type=positive_int, default=defaults.s, help="sequence length s")
    g.add_argument("--mbs", type=positive_int, default=defaults.b, help="micro batch size b")
    g.add_argument("--gbs", type=positive_int, default=defaults.gbs, help="global batch in sequences" + (
        " (default: mbs*dp*pp, one micro batch per pipeline stage)" if defaults.gbs is None else ""))
    g.add_argument("--stage-layers", type=stage_layers, default=defaults.stage_layers, metavar="N,N,...",
                   help="layers of each pipeline stage, pp entries summing to L (with --vpp, each a multiple of vpp: "
                        "the stage's chunks); default L/pp each")
    add_expert_args(g, defaults)
    add_switch_args(g, defaults, recipe=defaults == Training())
    add_precision_args(parser)


def add_precision_args(parser) -> None:
    """--weight-dtype --grad-dtype --master-weights/--no-master-weights --optimizer --moment-dtype --logits: each
    defaults to the recipe's (profile's) choice."""
    g = parser.add_argument_group("precision and optimizer (default: the recipe's)")
    g.add_argument("--weight-dtype", choices=precision.DTYPES, default=None,
                   help=f"the weights the step computes with ({_recipes_of('weight_dtype')})")
    g.add_argument("--grad-dtype", choices=precision.GRAD_DTYPES, default=None,
                   help=f"gradients ({_recipes_of('grad_dtype')})")
    g.add_argument("--master-weights", dest="master_weights", action="store_true", default=None,
                   help=f"an fp32 master copy of the weights in the optimizer ({_recipes_of('master_weights', True)})")
    g.add_argument("--no-master-weights", dest="master_weights", action="store_false",
                   help=f"no separate master copy ({_recipes_of('master_weights', False)}: its fp32 shards are the master)")
    g.add_argument("--optimizer", choices=precision.OPTIMIZERS, default=None,
                   help="adamw (two moments), sgd (one momentum), adamw8bit (bitsandbytes: two 1-byte moments)")
    g.add_argument("--moment-dtype", choices=precision.MOMENT_DTYPES, default=None,
                   help="the optimizer moments' dtype (default fp32; Megatron-Core --exp-avg-dtype)")
    g.add_argument("--logits", choices=precision.LOGITS, default=None,
                   help="what the loss keeps of the logits: fp32 (upcast), bf16 (fused cross entropy), none (chunked)")


def _recipes_of(field: str, value=None) -> str:
    """Each trainer recipe's default of a precision field, grouped: 'megatron, deepspeed: bf16; torchtitan: fp32'
    (given `value`, only the recipes whose default it is)."""
    from ..recipes import REGISTRY

    groups: dict = {}
    for recipe in REGISTRY:
        if recipe.flag and (value is None or recipe.precision[field] == value):
            groups.setdefault(recipe.precision[field], []).append(recipe.flag)
    return "; ".join(", ".join(flags) + ("" if value is not None else f": {key}") for key, flags in groups.items())


def add_recipe_arg(parser) -> None:
    """--recipe NAME and --profile: whose accounting (megatron, torchtitan, deepspeed) or jaxcheck's step (jax)."""
    from ..recipes import PROFILES, RECIPES

    parser.add_argument("--recipe", choices=RECIPES, default=None,
                        help="the trainer whose allocations to count (default megatron: the paper's accounting)")
    parser.add_argument("--profile", default=None, choices=PROFILES,
                        help="memory profile (paper = --recipe megatron; jax: jaxcheck's compiled step)")


def profile_from_args(args: argparse.Namespace) -> str:
    """The profile --recipe and --profile name (default paper); both, naming different ones: a one-line error."""
    from ..recipes import RECIPES

    recipe = RECIPES.get(args.recipe) if getattr(args, "recipe", None) else None
    if recipe and args.profile and args.profile != recipe:
        raise ConfigError(f"--recipe {args.recipe} and --profile {args.profile} conflict: give one")
    return recipe or args.profile or "paper"


def recipe_defaults(args: argparse.Namespace, profile: str | None) -> dict:
    """--zero and --recompute as given, or (left unset) the recipe's defaults, else Training's."""
    from ..recipes import PROFILES

    own = {"zero": Training().zero, "recompute": Training().recompute,
           **(PROFILES[profile].defaults if profile in PROFILES else {})}
    return {key: own[key] if getattr(args, key, None) is None else getattr(args, key) for key in own}


def precision_from_args(args: argparse.Namespace, profile: str | None) -> dict:
    """The precision choices: the profile's defaults (Training's without a profile), the flags given over them."""
    from ..recipes import widths

    given = {name: getattr(args, name) for name in precision.FIELDS if getattr(args, name, None) is not None}
    return {**(widths(profile) if profile else {}), **given}


def add_expert_args(group, defaults: Training = Training()) -> None:
    """--ep, --etp, --moe-capacity: how a model's routed experts are laid out (Megatron-Core) and how many tokens
    an expert takes."""
    group.add_argument("--ep", type=positive_int, default=defaults.ep,
                       help="expert parallel size e: the routed experts of a layer split over e ranks (folded, with "
                            "etp, over the dp x tp x cp ranks of a stage)")
    group.add_argument("--etp", type=positive_int, default=defaults.etp,
                       help="expert tensor parallel size t_e: each expert's SwiGLU split over t_e ranks "
                            "(default: tp, as Megatron-Core)")
    group.add_argument("--moe-capacity", type=capacity, default=defaults.moe_capacity, metavar="C_f",
                       help="tokens an expert receives over an even share: the capacity factor, or for a dropless "
                            "run the routing imbalance to allow for (1: the even load the load-balancing loss aims at)")


def add_switch_args(group, defaults: Training = Training(), recipe: bool = False) -> None:
    """--recompute, --no-sp, --no-flash-attn, --zero (aliases --dist-opt / --no-dist-opt): what shapes the formulas;
    `recipe`: --zero and --recompute default to the recipe's (recipe_defaults fills them in)."""
    group.add_argument("--recompute", default=None if recipe else defaults.recompute, choices=RECOMPUTE,
                       metavar="{none,selective,full}",
                       help="activation recomputation" + (f" (default: {_own_defaults('recompute')})" if recipe else ""))
    group.add_argument("--ac-every", type=positive_int, default=defaults.ac_every, metavar="N",
                       help="--recipe torchtitan with --recompute selective: checkpoint every N-th block whole and "
                            "keep everything of the others (selective_ac_option = N; default: op-level)")
    group.add_argument("--no-zero-init", dest="zero_init", action="store_false", default=defaults.zero_init,
                       help="--recipe deepspeed --zero 3: the model was built outside deepspeed.zero.Init, so "
                            "F.linear keeps every gathered weight from its forward to its backward")
    group.add_argument("--no-grad-accum-fusion", dest="grad_accum_fusion", action="store_false",
                       default=defaults.grad_accum_fusion,
                       help="--recipe megatron: --no-gradient-accumulation-fusion (no persistent dummy wgrad buffers)")
    group.add_argument("--recompute-modules", default=defaults.recompute_modules, metavar="M,M,...",
                       help="--recipe megatron with --recompute selective: what it reruns in backward, comma-separated "
                            f"from {', '.join(RECOMPUTE_MODULES)} (Megatron-Core --recompute-modules; default: "
                            "core_attn)")
    group.add_argument("--schedule", default=defaults.schedule, choices=SCHEDULES,
                       help="pipeline schedule: 1f1b (rank r holds min(m, p - r) micro batches; the formulas' and "
                            "jaxcheck's default) or gpipe (jaxcheck only: every forward, then every backward)")
    group.add_argument("--no-sp", dest="sp", action="store_false", default=defaults.sp,
                       help="disable sequence parallelism")
    group.add_argument("--no-flash-attn", dest="flash_attn", action="store_false", default=defaults.flash_attn,
                       help="keep s x s attention scores and softmax for backward")
    group.add_argument("--zero", type=int, choices=ZERO_STAGES, default=None if recipe else defaults.zero,
                       help="ZeRO stage, what is sharded over d*c: 0 nothing, 1 optimizer states, 2 also gradients, "
                            "3 also weights (FSDP) (default: " + (f"{_own_defaults('zero')})" if recipe else
                                                                  "%(default)s)"))
    group.add_argument("--dist-opt", dest="zero", action="store_const", const=1, default=argparse.SUPPRESS,
                       help="alias of --zero 1 (Megatron's distributed optimizer)")
    group.add_argument("--no-dist-opt", dest="zero", action="store_const", const=0, default=argparse.SUPPRESS,
                       help="alias of --zero 0")


def _own_defaults(key: str) -> str:
    """Training's default of --zero or --recompute, then each recipe's own: 'none; torchtitan: selective'."""
    from ..recipes import REGISTRY

    own = [f"{recipe.flag}: {recipe.defaults[key]}" for recipe in REGISTRY if recipe.flag and key in recipe.defaults]
    return "; ".join([str(getattr(Training(), key)), *own])


def check_output_file(path: str, flag: str, formats: tuple[str, ...] = ()) -> None:
    """Before any work: `path` can be written (an existing writable file, or a new file in an existing folder that
    takes one; probed, nothing left behind) and, given `formats`, ends in one of them; else a one-line ConfigError."""
    target = Path(path)
    if formats and target.suffix.lower().lstrip(".") not in formats:
        raise ConfigError(f"{flag} {path}: unknown format {target.suffix or '(no extension)'!r}; "
                          f"give a file name ending in one of: {', '.join('.' + f for f in formats)}")
    if target.is_dir():
        raise ConfigError(f"{flag} {path}: is a directory; give a file name")
    if not target.parent.is_dir():
        raise ConfigError(f"{flag} {path}: folder {target.parent} does not exist")
    try:
        if target.exists():
            os.close(os.open(target, os.O_WRONLY | os.O_APPEND))  # opened for writing, not changed
        else:
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            target.unlink()
    except OSError as err:
        raise ConfigError(f"{flag} {path}: cannot write there ({err.strerror})") from None


def check_output_dir(path: str, flag: str) -> None:
    """Before any work: `path` is a directory that takes new files, or can become one (its nearest existing parent
    is a directory that takes new files); else a one-line ConfigError."""
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise ConfigError(f"{flag} {path}: is a file, not a directory")
    existing = target
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigError(f"{flag} {path}: {existing} is a file, not a directory")
    try:
        tempfile.TemporaryFile(dir=existing).close()
    except OSError as err:
        raise ConfigError(f"{flag} {path}: cannot write in {existing} ({err.strerror})") from None


def model_from_args(args: argparse.Namespace) -> ModelShape:
    return resolve_model(args.model)


def training_from_args(args: argparse.Namespace, shape: ModelShape | None = None, profile: str | None = None) -> Training:
    """Build and (given the model) check the training config, with the precision `profile` models by default
    (without one, the Training defaults: Megatron's bf16 mixed precision) and the precision flags over it; errors are
    one-line ConfigErrors."""
    fields = {key: value for key, value in vars(args).items() if key not in precision.FIELDS}
    training = training_from_json({**fields, **recipe_defaults(args, profile), **precision_from_args(args, profile)})
    return training.check(shape, profile or "all") if shape is not None else training


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
    j.add_argument("--remat", dest="recompute", default=argparse.SUPPRESS, choices=RECOMPUTE,
                   metavar="{none,selective,full}",
                   help="alias of --recompute (the remat policy)")
    j.add_argument("--zero1", dest="zero", action="store_const", const=1, default=argparse.SUPPRESS,
                   help="alias of --zero 1: AdamW states sharded over data x context")
    j.add_argument("--no-zero1", dest="zero", action="store_const", const=0, default=argparse.SUPPRESS,
                   help="alias of --zero 0: AdamW states replicated like the params")
    j.add_argument("--param-dtype", default=JAX_PARAM_DTYPE, choices=FLOATS, help="parameter / gradient / Adam dtype")
    j.add_argument("--compute-dtype", default=JAX_COMPUTE_DTYPE, choices=FLOATS, help="matmul and activation dtype")
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

    given = [name for name in precision.FIELDS if getattr(args, name, None) is not None]
    if given:
        raise ConfigError(f"--{given[0].replace('_', '-')}: the jax step's precision is --param-dtype and "
                          f"--compute-dtype (AdamW, no master copy, fp32 logits); the other choices are for estimate, "
                          f"plan, report and latex")
    shape = model_from_args(args)
    opts = JaxOptions(param_dtype=args.param_dtype, compute_dtype=args.compute_dtype)
    return StepSpec(shape, training_from_args(args, shape), opts).check()
