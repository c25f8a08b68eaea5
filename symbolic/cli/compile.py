"""`mem4d compile`: XLA's per-device memory for the jax train step of one 4D configuration (jax imported in run())."""

from __future__ import annotations

import argparse
import json

from ..config.errors import ConfigError
from ..render.title import config_line
from ..flags.training import add_model_args, add_training_args
from ..flags.values import positive_int
from .args import add_step_args, spec_from_args, target_from_args


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_args(parser)
    from jaxcheck.spec import DEFAULT_TRAINING

    add_training_args(parser, defaults=DEFAULT_TRAINING)
    j = add_step_args(parser)
    j.add_argument(
        "--mock-gpu-topology",
        metavar="SxHxD",
        help="compile only, on one GPU posing as S slices x H hosts x D GPUs (jax_mock_gpu_topology)",
    )
    m = parser.add_argument_group("several processes (jax.distributed)")
    m.add_argument(
        "--distributed",
        action="store_true",
        help="jax.distributed.initialize() with auto-detection (SLURM, Kubernetes, ...)",
    )
    m.add_argument("--coordinator", metavar="HOST:PORT", help="coordinator address (process 0)")
    m.add_argument("--num-processes", type=positive_int, help="number of processes")
    m.add_argument("--process-id", type=int, metavar="I", help="this process's id, 0 .. num-processes - 1")
    m.add_argument("--local-devices", type=positive_int, help="simulated CPU devices in this process")


def _gib(n: int) -> str:
    return f"{n / 2**30:,.3f}"


def _print_table(report, spec) -> None:
    from ..render.console import Console
    from rich.table import Table

    mesh = report.mesh
    title = (
        f"{config_line(report.as_json(spec))} - XLA per device, {report.devices} {mesh['platform']} devices "
        f"(mesh data={mesh['data']}"
        + (f" expert={mesh['expert']}" if mesh.get("expert", 1) > 1 else "")
        + f" pipe={mesh['pipe']} tensor={mesh['tensor']} context={mesh['context']})"
    )
    table = Table(title=title, title_justify="left")
    table.add_column("buffer")
    table.add_column("GiB", justify="right")
    table.add_column("bytes", justify="right")
    for group, n in report.arguments.items():
        table.add_row(f"  argument: {group}", _gib(n), f"{n:,}")
    for key in (
        "argument_bytes",
        "output_bytes",
        "alias_bytes",
        "temp_bytes",
        "generated_code_bytes",
        "host_temp_bytes",
        "total_bytes",
    ):
        table.add_row(key.removesuffix("_bytes"), _gib(report.xla[key]), f"{report.xla[key]:,}")
    measured = report.measured
    if measured and "peak_bytes" in measured:
        table.add_row("measured peak", _gib(measured["peak_bytes"]), f"{measured['peak_bytes']:,}")
        table.add_row("bytes limit", _gib(measured["limit_bytes"]), f"{measured['limit_bytes']:,}")
    console = Console(min_width=110)
    console.print(table)
    console.print(
        "total = argument + output + temp - alias: inputs, outputs and temps are live together; "
        "donated params/optimizer state are counted once."
    )
    console.print(
        f"params {report.param_count:,}; compiled in {report.compile_seconds:.1f} s; measured: "
        + ("none (nothing ran: simulated or deviceless devices)" if measured is None else json.dumps(measured))
    )


def check_processes(args: argparse.Namespace) -> None:
    """The several-process flags, before jax starts (--mock-gpu-topology: mesh.request_mock_gpu_topology): one-line
    ConfigErrors."""
    if args.coordinator is not None:
        host, _, port = args.coordinator.rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ConfigError(f"--coordinator must be HOST:PORT (port 1 to 65535), got {args.coordinator!r}")
    if args.process_id is not None and not 0 <= args.process_id < (args.num_processes or 2**31):
        raise ConfigError(f"--process-id must be from 0 to --num-processes - 1, got {args.process_id}")


def run(args: argparse.Namespace) -> int:
    spec = spec_from_args(args)
    target = target_from_args(args)
    check_processes(args)
    import os

    # compile-only in this process: do not preallocate GPU memory, the measuring subprocess needs it
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    if args.distributed or args.coordinator or args.num_processes or args.mock_gpu_topology:
        return _run_on_processes(args, spec)
    from jaxcheck.card import compile_for

    programs = spec.stages()  # one program per stage kind where the pipeline's stages hold different layers
    results = [(ranks, one, compile_for(one, target, measure=args.measure)) for ranks, one in programs]
    if args.json:
        objects = [(ranks, one, result.as_json(one)) for ranks, one, result in results]
        print(json.dumps(objects[0][2] if len(objects) == 1 else _stages_json(objects, spec.shape.name)))
        return 0
    for ranks, one, result in results:
        if len(results) > 1:
            print(f"ranks {', '.join(map(str, ranks))} (every stage holding their layers: jaxcheck.stages):")
        _print_table(result.report, one)
        _print_fit(result)
    return 0


def _stages_json(objects: list, model: str) -> dict:
    """compile --json of one program per stage kind: the object of the program with the largest total (XLA's fitted
    program on a GPU card: the pipeline fits when it does), with "stages" [{ranks, layers, dense_layers, moe_layers
    (a stage's), total_bytes, fits}]."""
    from jaxcheck.stages import stage_holds

    stages = [
        {
            "ranks": list(ranks),
            **stage_holds(one.shape, one.train.p),
            "total_bytes": out["xla"]["total_bytes"],
            "fits": None if out["fit"] is None else out["fit"]["fits"],
        }
        for ranks, one, out in objects
    ]
    _, worst, largest = max(objects, key=lambda item: item[2]["xla"]["total_bytes"])
    return {**largest, "model": model, "stage_model": worst.shape.name, "stages": stages}


def _print_fit(result) -> None:
    """One line on the card: compiled where, and whether XLA had to rematerialize to fit its memory."""
    fit, target = result.fit(), result.target
    if fit is None:
        print("Compiled by XLA:CPU on simulated CPU devices (no device memory to fit).")
        return
    where = "this machine's GPUs" if result.real else "XLA:GPU without a GPU (deviceless)"
    gib = lambda n: f"{n / 2**30:,.2f} GiB"
    if fit["rematerialized"]:
        saved = fit["needed_bytes"] - fit["reached_bytes"]
        verdict = (
            f"the program as written needs {gib(fit['needed_bytes'])}; XLA's rematerialization recomputes "
            f"values to save {gib(saved)}, reaching {gib(fit['reached_bytes'])}, which "
            + ("fits" if fit["fits"] else "does NOT fit")
        )
    else:
        verdict = f"the program needs {gib(fit['reached_bytes'])}: " + (
            "fits without rematerialization" if fit["fits"] else "does NOT fit, and XLA could not shrink it"
        )
    print(f"{target.description} ({gib(fit['memory_bytes'])}), compiled by {where}: {verdict}.")


def _run_on_processes(args: argparse.Namespace, spec) -> int:
    """Several processes (jax.distributed) or one GPU posing as a mock topology: this machine's devices."""
    from jaxcheck.backend import import_jax, quiet_native_stderr

    import_jax()
    from jaxcheck import mesh as meshlib

    if args.mock_gpu_topology:
        meshlib.request_mock_gpu_topology(args.mock_gpu_topology)
    else:
        if args.target == "cpu" or args.local_devices:
            meshlib.request_cpu_devices(args.local_devices or 1, "cpu")
        meshlib.init_distributed(args.coordinator, args.num_processes, args.process_id)
    with quiet_native_stderr():
        mesh = meshlib.make_mesh(spec.train)
    from jaxcheck.compile import compile_step

    report, _, _ = compile_step(spec, mesh)
    import jax

    if jax.process_index() != 0 and not args.json:
        return 0
    if args.json:
        print(json.dumps(report.as_json(spec)))
    else:
        _print_table(report, spec)
    return 0
