"""`mem4d estimate`: per-GPU bytes of one configuration, per component and per pipeline stage, and the 80 % fit verdict."""

from __future__ import annotations

import argparse
import json

from ..config.errors import ConfigError
from ..flags.files import add_file_args, apply_files, pipeline_rank
from ..flags.training import (
    add_model_args,
    add_recipe_arg,
    add_training_args,
    model_from_args,
    profile_from_args,
    training_from_args,
)
from ..flags.values import parse_bytes
from . import steptime
from .args import add_fit_args, add_pad_vocab_arg, padded_vocab
from .estimate_tables import make_console, print_balance, print_tables


def add_arguments(parser: argparse.ArgumentParser, files: bool = True) -> None:
    """estimate's flags; `files`: with --megatron, --gpus and --rank (latex and report take the rest alone)."""
    add_model_args(parser)
    add_recipe_arg(parser)
    add_training_args(parser)
    g = parser.add_argument_group("memory")
    add_fit_args(g)
    g.add_argument(
        "--no-overheads",
        dest="overheads",
        action="store_false",
        help="drop communicator buffers, CUDA context, buckets and fragmentation",
    )
    g.add_argument(
        "--overhead",
        action="append",
        default=[],
        metavar="NAME=SIZE",
        help="replace one component, e.g. cuda_context=0.5GiB (repeatable; SIZE 0 drops it)",
    )
    add_balance_arg(parser)
    add_pad_vocab_arg(parser)
    steptime.add_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    if files:
        add_file_args(parser)


def parse_overrides(items: list[str]) -> dict[str, int]:
    """["cuda_context=0.5GiB", ...] -> {"cuda_context": 536870912}; malformed items are one-line ConfigErrors."""
    out = {}
    for item in items:
        name, sep, size = item.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"--overhead expects NAME=SIZE such as cuda_context=0.5GiB, got {item!r}")
        value = 0 if size.strip() in ("0", "0B", "0b") else parse_bytes(size, f"--overhead {item}")
        if out.get(name.strip(), value) != value:
            raise ConfigError(f"--overhead {name.strip()} given twice with different sizes: give it once")
        out[name.strip()] = value
    return out


def add_balance_arg(parser) -> None:
    """--balance (estimate, report, latex)."""
    parser.add_argument(
        "--balance",
        action="store_true",
        help="choose --stage-layers: the split minimising the most loaded stage's memory (estimate "
        "prints it next to the most even split)",
    )


def chosen_training(args: argparse.Namespace, shape):
    """The flags' Training and, with --balance, plan.balance's Balance whose split it carries (else None)."""
    if not getattr(args, "balance", False):
        return training_from_args(args, shape, args.profile), None
    from ..plan.balance import balance

    given = [
        flag
        for flag, value in (
            ("--stage-layers", args.stage_layers is not None),
            ("--pipeline-layout", args.pipeline_layout),
            ("--account-for-embedding/loss", args.account_embedding or args.account_loss),
        )
        if value
    ]
    if given:
        raise ConfigError(f"--balance chooses the stage split: give it or {given[0]}, not both")
    bal = balance(shape, training_from_args(args, None, args.profile), args.profile, args.overheads)
    return bal.training, bal


def run(args: argparse.Namespace) -> int:
    from ..estimator.estimate import estimate

    overrides = parse_overrides(args.overhead)
    shape, notes = apply_files(args)  # a --torchtitan file sets --recipe torchtitan
    args.profile = profile_from_args(args)
    shape = shape or padded_vocab(model_from_args(args), args.pad_vocab, args.tp)
    training, bal = chosen_training(args, shape)
    rank, stage_rank = pipeline_rank(args.rank, training.world, training.p)
    result = estimate(
        shape, training, args.profile, overheads=args.overheads, overrides=overrides, every_rank=stage_rank is not None
    )
    report = result.as_json(args.gpu_mem, args.threshold)
    report["rank"] = _rank_json(report, rank, stage_rank)
    for reader in ("megatron", "torchtitan", "deepspeed"):
        if getattr(args, reader):
            report[reader] = {"file": getattr(args, reader), "overridden": notes}
    if bal is not None:
        report["balance"] = _balance_json(bal)
    report["time"] = steptime.block(args, shape, training)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_tables(report)
        if bal is not None:
            print_balance(report["balance"], shape.L)
        steptime.print_block(make_console(), report["time"])
    return 0


def _rank_json(report: dict, rank: int | None, stage_rank: int | None) -> dict:
    """--rank: the global rank asked for (None: the most loaded stage's), its pipeline rank and stage, and that
    stage's allocated, reserved and device bytes (the figures a trainer's log compares with)."""
    stage_rank = report["most_loaded_rank"] if stage_rank is None else stage_rank
    stage = next(s for s in report["stages"] if s["rank"] == stage_rank)
    return {"rank": rank, "pipeline_rank": stage_rank, "stage": stage["stage"], "memory": stage["memory"]}


def _balance_json(bal) -> dict:
    """estimate --balance --json: the balanced split and the most even one (plan.balance.Balance), each rank's total
    bytes, the peaks."""
    return {
        "stage_layers": list(bal.split),
        "stages_bytes": list(bal.totals),
        "peak_bytes": bal.peak,
        "even": {"stage_layers": list(bal.even), "stages_bytes": list(bal.even_totals), "peak_bytes": bal.even_peak},
    }
