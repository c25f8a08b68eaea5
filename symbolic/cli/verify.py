"""`mem4d verify`: the `jax` profile's components vs XLA's memory analysis (vs the measured GPU peak).
Without flags: llama3-8b on a 2x2x2x2 mesh of simulated CPU devices, s = 1024, full remat, ZeRO-1 (abstract, seconds)."""
from __future__ import annotations

import argparse
import json

from ..config.errors import ConfigError
from ..config.training import RECOMPUTE, Training
from .args import add_model_args, add_training_args, model_from_args, training_from_args

DEFAULT = Training(d=2, t=2, p=2, c=2, s=1024, b=1, gbs=8, recompute="full", zero=1)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_args(parser)
    add_training_args(parser, defaults=DEFAULT)
    j = parser.add_argument_group("jax step")
    j.add_argument("--remat", dest="recompute", default=argparse.SUPPRESS, metavar="{none,selective,full}",
                   help="remat policy (same as --recompute; default: full)")
    j.add_argument("--zero1", dest="zero", action="store_const", const=1, default=argparse.SUPPRESS,
                   help="alias of --zero 1: AdamW states sharded over data x context (the default here)")
    j.add_argument("--no-zero1", dest="zero", action="store_const", const=0, default=argparse.SUPPRESS,
                   help="alias of --zero 0: AdamW states replicated like the params")
    j.add_argument("--param-dtype", default="float32", help="parameter / gradient / Adam dtype (default: float32)")
    j.add_argument("--compute-dtype", default="bfloat16", help="matmul and activation dtype (default: bfloat16)")
    j.add_argument("--platform", choices=("auto", "cpu"), default="auto",
                   help="cpu: compile on d*p*t*c simulated CPU devices even where a GPU is present")
    j.add_argument("--no-measure", dest="measure", action="store_false",
                   help="on a GPU, skip running the step to read the measured peak")
    j.add_argument("--explain", action="store_true",
                   help="also compile variants (2L layers, 2m micro batches, forward only, remat none/full) and list "
                        "the residuals saved per layer, to take XLA's temp apart")
    j.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    if args.recompute not in RECOMPUTE:
        raise ConfigError(f"--remat/--recompute must be one of {', '.join(RECOMPUTE)}, got {args.recompute!r}")
    shape = model_from_args(args)
    train = training_from_args(args, shape)
    from jaxcheck.spec import JaxOptions, StepSpec

    opts = JaxOptions(param_dtype=args.param_dtype, compute_dtype=args.compute_dtype)
    StepSpec(shape, train, opts).check()
    import os

    from jaxcheck import mesh as meshlib

    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # the measuring subprocess needs the GPU memory
    meshlib.request_cpu_devices(train.world, args.platform)
    from jaxcheck.crosscheck.verify import verify

    result = verify(shape, train, opts, explain=args.explain, measure=args.measure)
    if args.json:
        print(json.dumps(result))
    else:
        from jaxcheck.crosscheck.tables import print_verify

        print_verify(result)
    return 0
