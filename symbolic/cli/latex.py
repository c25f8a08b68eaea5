"""`mem4d latex`: write a standalone LaTeX report (glossary, formulas per component, numbers for one config)."""

from __future__ import annotations

import argparse
import sys

from ..flags.training import add_model_args, add_recipe_arg, add_training_args, model_from_args, profile_from_args
from .args import add_fit_args, check_output_file
from .estimate import add_balance_arg, chosen_training


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", default="-", metavar="FILE", help="where to write the .tex (- is stdout)")
    add_model_args(parser)
    add_recipe_arg(parser)
    add_training_args(parser)
    g = parser.add_argument_group("memory")
    add_fit_args(g)
    g.add_argument("--no-overheads", dest="overheads", action="store_false", help="drop the overhead components")
    add_balance_arg(parser)


def run(args: argparse.Namespace) -> int:
    args.profile = profile_from_args(args)
    from ..estimator.estimate import estimate
    from ..render.report import document

    if args.output != "-":
        check_output_file(args.output, "-o/--output", ("tex",))  # LaTeX source (mem4d report writes PDFs)
    shape = model_from_args(args)
    training, _ = chosen_training(args, shape)
    text = document(estimate(shape, training, args.profile, overheads=args.overheads), args.gpu_mem, args.threshold)
    if args.output == "-":
        sys.stdout.write(text)
        return 0
    from ..render.files import replaced

    with replaced(args.output, encoding="utf-8") as handle:  # Ctrl-C leaves no partial file
        handle.write(text)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0
