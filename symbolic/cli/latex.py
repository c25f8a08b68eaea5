"""`mem4d latex`: write a standalone LaTeX report (glossary, formulas per component, numbers for one config)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..config.errors import ConfigError
from .args import add_model_args, add_training_args, model_from_args, parse_bytes, training_from_args


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", default="-", metavar="FILE", help="where to write the .tex (default: stdout)")
    add_model_args(parser)
    parser.add_argument("--profile", default="paper", help="memory profile (default: %(default)s)")
    add_training_args(parser)
    parser.add_argument("--gpu-mem", default="80GiB", help="memory of one GPU (default: %(default)s)")
    parser.add_argument("--threshold", type=float, default=0.8, help="fit rule (default: %(default)s)")
    parser.add_argument("--no-overheads", dest="overheads", action="store_false", help="drop the overhead components")


def run(args: argparse.Namespace) -> int:
    from ..estimator.estimate import estimate
    from ..profiles import load
    from ..render.report import document
    from .estimate import check_threshold

    load(args.profile)
    gpu = parse_bytes(args.gpu_mem)
    threshold = check_threshold(args.threshold)
    shape = model_from_args(args)
    training = training_from_args(args, shape, args.profile)
    text = document(estimate(shape, training, args.profile, overheads=args.overheads), gpu, threshold)
    if args.output == "-":
        sys.stdout.write(text)
        return 0
    try:
        Path(args.output).write_text(text)
    except OSError as err:
        raise ConfigError(f"cannot write {args.output}: {err.strerror}") from None
    print(f"wrote {args.output}", file=sys.stderr)
    return 0
