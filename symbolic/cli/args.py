"""The command line's own flags: fit (--gpu-mem, --threshold), output paths checked before any work, the jax step's
flags and its target (jaxcheck imported lazily)."""

from __future__ import annotations

import argparse
import dataclasses
import os
import tempfile
from pathlib import Path

from ..config import precision
from ..config.dtypes import FLOATS
from ..config.errors import ConfigError
from ..config.training_checks import RECOMPUTE
from ..flags.switches import add_zero_aliases
from ..flags.training import model_from_args, training_from_args
from ..flags.values import UNITS_HELP, fraction, memory_size
from ..recipes.jax.step import COMPUTE_DTYPE as JAX_COMPUTE_DTYPE, PARAM_DTYPE as JAX_PARAM_DTYPE


def add_fit_args(group, default_gpu_mem: str = "80GiB") -> None:
    """--gpu-mem and --threshold: the GPU's memory and the share of it an estimate must stay under."""
    group.add_argument(
        "--gpu-mem",
        type=memory_size,
        default=default_gpu_mem,
        metavar="SIZE",
        help=f"memory of one GPU: a number and a unit, {UNITS_HELP}; 80G is 80 GB = 74.5 GiB",
    )
    group.add_argument(
        "--threshold",
        type=fraction,
        default=0.8,
        help="fits when the peak (max of the total and every exact stage) is under threshold x GPU "
        "memory, a number in (0, 1]",
    )


def check_output_file(path: str, flag: str, formats: tuple[str, ...] = ()) -> None:
    """Before any work: `path` can be written (an existing writable file, or a new file in an existing folder that
    takes one; probed, nothing left behind) and, given `formats`, ends in one of them; else a one-line ConfigError."""
    target = Path(path)
    if not path.strip():
        raise ConfigError(f"{flag} {path!r}: an empty name; give a file name")
    if target.is_dir():
        raise ConfigError(f"{flag} {path}: is a directory; give a file name")
    if formats and target.suffix.lower().lstrip(".") not in formats:
        raise ConfigError(
            f"{flag} {path}: unknown format {target.suffix or '(no extension)'!r}; "
            f"give a file name ending in one of: {', '.join('.' + f for f in formats)}"
        )
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


def add_target_args(group) -> None:
    """--target NAME (cpu or a shipped GPU card) and --target-config FILE (any other card), on one argument group."""
    from jaxcheck.targets import DEFAULT, names  # no jax

    group.add_argument(
        "--target",
        default=None,
        metavar="NAME",
        help=f"compile for cpu (simulated CPU devices) or a GPU card, compiled by XLA:GPU without a GPU: "
        f"{', '.join(names()[1:])} (default: {DEFAULT})",
    )
    group.add_argument(
        "--target-config",
        default=None,
        metavar="FILE",
        help="a GpuTargetConfigProto text file for another card (instead of --target)",
    )


def target_from_args(args: argparse.Namespace):
    """The jaxcheck.targets.Target the flags name; both flags at once, an unknown name or a bad file: one line."""
    from jaxcheck.targets import DEFAULT, load

    if args.target is not None and args.target_config is not None:
        raise ConfigError(f"--target {args.target} and --target-config {args.target_config} conflict: give one")
    if args.target_config is not None:
        path = Path(args.target_config)
        if not path.is_file():
            raise ConfigError(
                f"--target-config {args.target_config}: "
                + ("is a directory" if path.is_dir() else "no such file")
                + " (a GpuTargetConfigProto text file; shipped cards are --target NAME)"
            )
        return load(str(path))
    return load(args.target or DEFAULT)


def add_step_args(parser: argparse.ArgumentParser):
    """The jax step's flags of compile and verify (--remat, --zero1/--no-zero1, dtypes, --target, --no-measure,
    --json); returns their argument group for the command's own."""
    j = parser.add_argument_group("jax step")
    j.add_argument(
        "--remat",
        dest="recompute",
        default=argparse.SUPPRESS,
        choices=RECOMPUTE,
        metavar="{none,selective,full}",
        help="alias of --recompute (the remat policy)",
    )
    add_zero_aliases(j, "--zero1", "--no-zero1", "AdamW states sharded over data x context")
    j.add_argument("--param-dtype", default=JAX_PARAM_DTYPE, choices=FLOATS, help="parameter / gradient / Adam dtype")
    j.add_argument("--compute-dtype", default=JAX_COMPUTE_DTYPE, choices=FLOATS, help="matmul and activation dtype")
    add_pad_vocab_arg(j)
    add_target_args(j)
    j.add_argument(
        "--no-measure",
        dest="measure",
        action="store_false",
        help="on this machine's GPUs of the target card, skip running the step to read the measured peak",
    )
    j.add_argument("--json", action="store_true", help="print one JSON object")
    return j


def spec_from_args(args: argparse.Namespace):
    """The checked jaxcheck.spec.StepSpec of compile's or verify's flags (jaxcheck's spec imported here, no jax)."""
    if args.recompute not in RECOMPUTE:
        raise ConfigError(f"--remat/--recompute must be one of {', '.join(RECOMPUTE)}, got {args.recompute!r}")
    from jaxcheck.spec import JaxOptions, StepSpec

    given = [name for name in precision.FIELDS if getattr(args, name, None) is not None]
    if given:
        raise ConfigError(
            f"--{given[0].replace('_', '-')}: the jax step's precision is --param-dtype and "
            f"--compute-dtype (AdamW, no master copy, fp32 logits); the other choices are for estimate, "
            f"plan, report and latex"
        )
    shape = padded_vocab(model_from_args(args), getattr(args, "pad_vocab", None), getattr(args, "tp", 1) or 1)
    opts = JaxOptions(param_dtype=args.param_dtype, compute_dtype=args.compute_dtype)
    return StepSpec(shape, training_from_args(args, shape), opts).check()


def add_pad_vocab_arg(group) -> None:
    """--pad-vocab N (estimate, compile, verify): the vocabulary as Megatron-LM pads it (padded_vocab)."""
    group.add_argument(
        "--pad-vocab",
        type=int,
        default=None,
        metavar="N",
        help="pad the vocabulary to a multiple of N x tp rows, as Megatron-LM's "
        "--make-vocab-size-divisible-by N pads it (128 its default); default: as the config.json "
        "says",
    )


def padded_vocab(shape, multiple: int | None, t: int):
    """The shape with its vocabulary padded to a multiple of `multiple` x t rows (Megatron-LM's
    _vocab_size_with_padding: ceil(v / (make_vocab_size_divisible_by x tp)) x that), or as it is (None)."""
    if multiple is None:
        return shape
    if multiple < 1:
        raise ConfigError(f"--pad-vocab must be a positive number of rows, got {multiple}")
    unit = multiple * t
    v = -(-shape.v // unit) * unit
    return shape if v == shape.v else dataclasses.replace(shape, v=v)
