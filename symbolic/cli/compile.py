"""`mem4d compile`: XLA's per-device memory for the jax train step of one 4D configuration (jax imported in run())."""
from __future__ import annotations

import argparse
import json

from .args import add_model_args, add_step_args, add_training_args, positive_int, spec_from_args


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_args(parser)
    from jaxcheck.spec import DEFAULT_TRAINING

    add_training_args(parser, defaults=DEFAULT_TRAINING)
    j = add_step_args(parser)
    j.add_argument("--mock-gpu-topology", metavar="SxHxD",
                   help="compile only, on one GPU posing as S slices x H hosts x D GPUs (jax_mock_gpu_topology)")
    m = parser.add_argument_group("several processes (jax.distributed)")
    m.add_argument("--distributed", action="store_true",
                   help="jax.distributed.initialize() with auto-detection (SLURM, Kubernetes, ...)")
    m.add_argument("--coordinator", metavar="HOST:PORT", help="coordinator address (process 0)")
    m.add_argument("--num-processes", type=positive_int, help="number of processes")
    m.add_argument("--process-id", type=int, help="this process's id, 0 .. num-processes - 1")
    m.add_argument("--local-devices", type=positive_int, help="simulated CPU devices in this process")


def _gib(n: int) -> str:
    return f"{n / 2**30:,.3f}"


def _print_table(report, spec) -> None:
    from rich.console import Console
    from rich.table import Table

    mesh = report.mesh
    title = (f"{spec.shape.name}: dp={mesh['data']} pp={mesh['pipe']} tp={mesh['tensor']} cp={mesh['context']} "
             f"seq={spec.train.s} mbs={spec.train.b} m={spec.train.m} recompute={spec.train.recompute} "
             f"zero={spec.train.zero} - XLA per device, {report.devices} {mesh['platform']} devices")
    table = Table(title=title)
    table.add_column("buffer")
    table.add_column("GiB", justify="right")
    table.add_column("bytes", justify="right")
    for group, n in report.arguments.items():
        table.add_row(f"  argument: {group}", _gib(n), f"{n:,}")
    for key in ("argument_bytes", "output_bytes", "alias_bytes", "temp_bytes", "generated_code_bytes",
                "host_temp_bytes", "total_bytes"):
        table.add_row(key.removesuffix("_bytes"), _gib(report.xla[key]), f"{report.xla[key]:,}")
    measured = report.measured
    if measured and "peak_bytes" in measured:
        table.add_row("measured peak", _gib(measured["peak_bytes"]), f"{measured['peak_bytes']:,}")
        table.add_row("bytes limit", _gib(measured["limit_bytes"]), f"{measured['limit_bytes']:,}")
    console = Console()
    console.print(table)
    console.print("total = argument + output + temp - alias: inputs, outputs and temps are live together; "
                  "donated params/optimizer state are counted once.")
    console.print(f"params {report.param_count:,}; compiled in {report.compile_seconds:.1f} s; measured: "
                  + ("unavailable on CPU (jax reports no device memory stats)" if measured is None else json.dumps(measured)))


def run(args: argparse.Namespace) -> int:
    spec = spec_from_args(args)
    train = spec.train
    import os

    from jaxcheck import mesh as meshlib

    # compile-only in this process: do not preallocate GPU memory, the measuring subprocess needs it
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    if args.distributed or args.coordinator or args.num_processes:
        if args.platform == "cpu" or args.local_devices:
            meshlib.request_cpu_devices(args.local_devices or 1, "cpu")
        meshlib.init_distributed(args.coordinator, args.num_processes, args.process_id)
    elif args.mock_gpu_topology:
        meshlib.request_mock_gpu_topology(args.mock_gpu_topology)
    else:
        meshlib.request_cpu_devices(train.world, args.platform)
    mesh = meshlib.make_mesh(train)
    from jaxcheck.compile import compile_step

    report, _, _ = compile_step(spec, mesh)
    if mesh.devices.flat[0].platform != "cpu" and args.measure and not args.mock_gpu_topology:
        from jaxcheck.measure import measure

        report.measured = measure(spec)
    import jax

    if jax.process_index() != 0 and not args.json:
        return 0
    if args.json:
        print(json.dumps(report.as_json(spec)))
    else:
        _print_table(report, spec)
    return 0
