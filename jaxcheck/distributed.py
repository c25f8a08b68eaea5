"""One real train step under jax.distributed (or in one process): prints XLA's memory analysis and the loss as JSON.
`python -m jaxcheck.distributed --coordinator HOST:PORT --num-processes N --process-id I [--local-devices D] ...`"""

from __future__ import annotations

import argparse
import json
import sys

from symbolic.flags.training import add_model_args, add_training_args, model_from_args, training_from_args
from symbolic.flags.values import positive_int
from symbolic.config.errors import ConfigError
from symbolic.config.parallel import NO_ZERO
from symbolic.config.training import Training


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m jaxcheck.distributed", description=__doc__.splitlines()[0])
    add_model_args(parser, default="tiny")
    add_training_args(parser, defaults=Training(s=64, zero=NO_ZERO))
    parser.add_argument("--zero1", dest="zero", action="store_const", const=1, help="alias of --zero 1")
    parser.add_argument("--distributed", action="store_true")
    parser.add_argument("--coordinator")
    parser.add_argument("--num-processes", type=positive_int)
    parser.add_argument("--process-id", type=int)
    parser.add_argument("--local-devices", type=positive_int)
    parser.add_argument(
        "--fast-compile", action="store_true", help="XLA CPU's quickest compile, jaxcheck.compile.QUICK_CPU (tests)"
    )
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> dict:
    """Compile, initialise, run one step; XLA's numbers, the argument breakdown and the loss. Process I of N (on CPU,
    D simulated devices each), or alone (auto-detected cluster with --distributed). Every process compiles the same
    SPMD program; params and batch are generated inside jit with their shardings, so each process creates only its
    own shards and the result does not depend on the process layout."""
    from .spec import StepSpec

    spec = StepSpec(model_from_args(args), training_from_args(args, model_from_args(args))).check()
    from . import mesh as meshlib

    if args.coordinator or args.distributed:
        meshlib.request_cpu_devices(args.local_devices or 1)
        meshlib.init_distributed(args.coordinator, args.num_processes, args.process_id)
    else:
        meshlib.request_cpu_devices(args.local_devices or spec.train.world)
    import jax

    from .compile import QUICK_CPU, compile_step
    from .state import init_state, synthetic_batch

    options = QUICK_CPU if args.fast_compile and jax.default_backend() == "cpu" else None
    report, step, built = compile_step(spec, meshlib.make_mesh(spec.train), compiler_options=options)
    params, opt_state = init_state(built)
    params, opt_state, loss = step(params, opt_state, synthetic_batch(built))
    return {
        "process": jax.process_index(),
        "processes": jax.process_count(),
        "devices": report.devices,
        "local_devices": jax.local_device_count(),
        "xla": report.xla,
        "arguments": report.arguments,
        "loss": float(loss),
    }


def main(argv: list[str] | None = None) -> int:
    try:
        print(json.dumps(run(parse(sys.argv[1:] if argv is None else argv))))
    except ConfigError as err:
        print(f"jaxcheck.distributed: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
