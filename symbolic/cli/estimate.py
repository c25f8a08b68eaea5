"""`mem4d estimate`: per-GPU bytes of one configuration, per component and per pipeline stage, and the 80 % fit verdict."""
from __future__ import annotations

import argparse
import json
import os

from ..config.errors import ConfigError
from .args import add_model_args, add_training_args, model_from_args, parse_bytes, training_from_args

GIB = 2**30


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_args(parser)
    parser.add_argument("--profile", default="paper", help="memory profile (default: %(default)s)")
    add_training_args(parser)
    g = parser.add_argument_group("memory")
    g.add_argument("--gpu-mem", default="80GiB", help="memory of one GPU, e.g. 80GiB, 141GB (default: %(default)s)")
    g.add_argument("--threshold", type=float, default=0.8, help="fits when the peak (max of the total and every exact stage) < threshold x GPU memory (default: %(default)s)")
    g.add_argument("--no-overheads", dest="overheads", action="store_false",
                   help="drop communicator buffers, CUDA context, buckets and fragmentation")
    g.add_argument("--overhead", action="append", default=[], metavar="NAME=SIZE",
                   help="replace one component, e.g. cuda_context=0.5GiB (repeatable)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")


def parse_overrides(items: list[str]) -> dict[str, int]:
    """["cuda_context=0.5GiB", ...] -> {"cuda_context": 536870912}; malformed items are one-line ConfigErrors."""
    out = {}
    for item in items:
        name, sep, size = item.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"--overhead expects NAME=SIZE such as cuda_context=0.5GiB, got {item!r}")
        out[name.strip()] = 0 if size.strip() in ("0", "0B", "0b") else parse_bytes(size)
    return out


def check_threshold(threshold: float) -> float:
    if not 0 < threshold <= 1:
        raise ConfigError(f"--threshold must be in (0, 1], got {threshold}")
    return threshold


def run(args: argparse.Namespace) -> int:
    from ..estimator.estimate import estimate
    from ..profiles import PROFILES

    if args.profile not in PROFILES:
        raise ConfigError(f"unknown profile {args.profile!r} (choose from {', '.join(PROFILES)})")
    gpu = parse_bytes(args.gpu_mem)
    threshold = check_threshold(args.threshold)
    overrides = parse_overrides(args.overhead)
    shape = model_from_args(args)
    training = training_from_args(args, shape, args.profile)
    result = estimate(shape, training, args.profile, overheads=args.overheads, overrides=overrides)
    report = result.as_json(gpu, threshold)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print_tables(report)
    return 0


def _gib(x: int) -> str:
    return f"{x / GIB:,.2f}"


def _print_tables(report: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(no_color=bool(os.environ.get("MEM4D_NO_COLOR")), width=max(100, Console().width))
    cfg, gpu = report["config"], report["gpu_mem_bytes"]
    title = f"{report['model']}  " + " ".join(f"{key}={value}" for key, value in cfg.items()
                                              if key != "model" and not key.endswith("_bytes"))
    title += f"  profile={report['profile']}"
    table = Table(title=title, title_justify="left")
    table.add_column("component", no_wrap=True, min_width=18)
    table.add_column("most loaded (paper) GiB", justify="right")
    table.add_column("% of GPU", justify="right")
    for stage in report["stages"]:
        table.add_column(f"{stage['stage']} (rank {stage['rank']}) GiB", justify="right")
    for name, value in report["bytes"].items():
        if name == "total":
            table.add_section()
        row = [name, _gib(value), f"{100 * value / gpu:.1f}"]
        row += [_gib(stage["bytes"].get(name, 0)) for stage in report["stages"]]
        table.add_row(*row, style="bold" if name == "total" else None)
    peak, source = report["peak_bytes"], report["peak_from"]
    table.add_section()
    decided = ["peak (verdict)", _gib(peak) if source == "total" else "", f"{100 * peak / gpu:.1f}"]
    decided += [_gib(peak) if stage["stage"] == source else "" for stage in report["stages"]]  # where it comes from
    table.add_row(*decided, style="bold")
    console.print(table)
    limit = report["threshold"] * gpu
    verdict = "FITS" if report["fits"] else "DOES NOT FIT"
    if source == "total":
        reason = "the paper's total (no exact stage holds more)"
    else:
        reason = (f"the exact {source} stage, above the paper's total of {_gib(report['bytes']['total'])} GiB"
                  + (" (the closed form omits the LM head weights when p = 1)" if source == "only" else ""))
    console.print(f"{verdict}: peak {_gib(peak)} GiB of {_gib(gpu)} GiB per GPU = {100 * peak / gpu:.1f} % "
                  f"(rule: < {100 * report['threshold']:.0f} % = {_gib(int(limit))} GiB); the peak is {reason}. "
                  f"Most loaded stage (exact placement): {report['most_loaded_stage']}.")
