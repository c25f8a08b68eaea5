"""`mem4d verify`: the `jax` profile's components vs XLA's memory analysis (vs the measured GPU peak).
Without flags: llama3-8b on a 2x2x2x2 mesh compiled by XLA:GPU for an H100 (no GPU needed), s = 1024, full remat,
ZeRO-1 (abstract, seconds)."""

from __future__ import annotations

import argparse
import json

from ..config.parallel import ZERO_OPTIMIZER
from ..config.shapes import DEFAULT_MODEL
from ..config.training import Training
from ..flags.training import add_model_args, add_training_args
from .args import add_step_args, spec_from_args, target_from_args

DEFAULT = Training(d=2, t=2, p=2, c=2, s=1024, b=1, gbs=8, recompute="full", zero=ZERO_OPTIMIZER)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from jaxcheck.targets import DEFAULT as TARGET  # no jax

    shown = " ".join(f"{key}={value}" for key, value in DEFAULT.flags(widths=False).items())
    parser.description = (
        f"{parser.description or 'mem4d verify'}. Without flags, the cross-check configuration: "
        f"{DEFAULT_MODEL} {shown}, target {TARGET}"
    )
    add_model_args(parser)
    add_training_args(parser, defaults=DEFAULT)
    j = add_step_args(parser)
    j.add_argument(
        "--explain",
        action="store_true",
        help="take XLA's temp apart: its live bytes per phase (from a dump of the compile) beside the profile's, "
        "compiled variants (2L layers, 2m micro batches, the other remat policy, forward only) and "
        "the residuals saved per layer",
    )


def run(args: argparse.Namespace) -> int:
    spec = spec_from_args(args)
    target = target_from_args(args)
    import os

    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # the measuring subprocess needs the GPU memory
    from jaxcheck.crosscheck.verify import verify

    result = verify(spec.shape, spec.train, spec.opts, target=target, explain=args.explain, measure=args.measure)
    if args.json:
        print(json.dumps(result))
    else:
        from jaxcheck.crosscheck.tables import print_verify

        print_verify(result)
    return 0
