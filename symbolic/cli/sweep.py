"""`mem4d sweep GRID.toml`: verify() over a grid in one process, one JSON line per config as it finishes, resumable, summarised."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..config.errors import ConfigError
from . import interrupt
from . import sweep_prepare as prepare
from ..flags.values import positive_int
from .args import add_target_args, check_output_dir, target_from_args

if TYPE_CHECKING:
    from jaxcheck.crosscheck.sweep import Job, RunFn


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "grid", metavar="GRID.toml", help="[base] defaults, [grid] lists (cartesian product), [[case]] configs"
    )
    parser.add_argument(
        "-o", "--output", default="results.jsonl", help="JSONL results, one line per config (default: %(default)s)"
    )
    parser.add_argument("--resume", action="store_true", help="skip configs already in the output file")
    parser.add_argument("--retry-failed", action="store_true", help="with --resume, run configs that failed again")
    plots = parser.add_mutually_exclusive_group()
    plots.add_argument("--plots", metavar="DIR", help="directory for the PNG plots (default: next to the output)")
    plots.add_argument("--no-plots", action="store_true", help="write no plots")
    add_target_args(parser)
    parser.add_argument(
        "--jobs",
        type=positive_int,
        default=1,
        metavar="N",
        help="compile in N worker processes (default: 1, this process)",
    )
    parser.add_argument(
        "--shard",
        metavar="I/N",
        help="run every N-th configuration from the I-th (0 <= I < N), to "
        "split a grid across machines (e.g. a SLURM job array); merge the JSONL files afterwards",
    )
    parser.add_argument(
        "--measure",
        action="store_true",
        help="on this machine's GPUs of the target card, also run each step to read the measured peak",
    )
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the summary as one JSON object, no progress bar")
    out.add_argument("--markdown", action="store_true", help="print the summary as markdown tables (README)")


def _verify_fn(target, measure: bool) -> RunFn:
    """The real run function: jaxcheck.crosscheck.verify.verify for the target, jax caches cleared after each config."""
    import jax

    from jaxcheck.crosscheck.verify import verify

    def run_one(spec) -> dict:
        try:
            return verify(spec.shape, spec.train, spec.opts, target=target, measure=measure)
        finally:
            jax.clear_caches()

    return run_one


def _start_backend(todo: list[Job], target) -> int:
    """Start jax for the target with devices for the largest pending mesh; how many meshes' devices it can offer."""
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    from jaxcheck.backend import start
    from jaxcheck.crosscheck.sweep import max_world

    devices, _ = start(target.with_memory(2**50), max_world(todo))
    return 2**31 if target.is_gpu else len(devices)


class _Progress:
    """A rich progress bar on stderr when it is a terminal (and not --json); otherwise one plain line per config."""

    def __init__(self, total: int, bar: bool):
        self.total, self.done, self.bar, self.keys = total, 0, None, set()
        if bar:
            from ..render.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=False,
            )
            self.task = self.bar.add_task("sweep", total=total)
            self.bar.start()

    def __call__(self, record: dict) -> None:
        if interrupt.pending():  # a Ctrl-C that a compile turned into a recorded failure still stops the sweep
            raise KeyboardInterrupt
        self.done += 1
        self.keys.add(record["key"])
        err = record["result"]["rel_error_total"] if record["status"] == "ok" else None
        what = f"{100 * err:+.2f} %" if err is not None else f"{record['status']}: {record['error']}"
        line = f"[{self.done}/{self.total}] {record['label']}: {what} ({record['seconds']:.1f} s)"
        if self.bar:
            self.bar.console.print(line, markup=False, highlight=False)
            self.bar.update(self.task, advance=1)
        else:
            print(line, file=sys.stderr, flush=True)

    def stop(self) -> None:
        if self.bar:
            self.bar.stop()
            self.bar = None


def code_version() -> str | None:
    """The git commit of the mem4d code that computes the records, '+dirty' when symbolic/ or jaxcheck/ have edits."""
    import subprocess

    root = Path(__file__).resolve().parents[2]  # the repository: symbolic/cli/sweep.py
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "symbolic", "jaxcheck"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode:
        return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def resume_command(args: argparse.Namespace) -> str:
    """The command line that continues this sweep: the same grid, output, target, shard, workers and plots."""
    import shlex

    words = ["mem4d", "sweep", args.grid, "-o", args.output, "--resume"]
    for flag, value in (
        ("--target", args.target),
        ("--target-config", args.target_config),
        ("--shard", args.shard),
        ("--plots", args.plots),
    ):
        if value is not None:
            words += [flag, value]
    words += ["--jobs", str(args.jobs)] if args.jobs > 1 else []
    words += [
        flag
        for flag, on in (
            ("--retry-failed", args.retry_failed),
            ("--no-plots", args.no_plots),
            ("--measure", args.measure),
        )
        if on
    ]
    return shlex.join(words)


def run(args: argparse.Namespace, run_fn: RunFn | None = None, devices: int | None = None) -> int:
    """Expand the grid, run what is pending (run_fn/devices: an injected runner for tests), then summarise and plot."""
    from jaxcheck.crosscheck import sweep
    from jaxcheck.crosscheck.grid import parse_grid

    target = target_from_args(args)
    out = Path(args.output)
    line = prepare.Line(sys.stderr.isatty() and not args.json)
    total = prepare.count(args.grid)
    if total is not None:
        line.say(f"mem4d sweep: {args.grid}: {total:,} configurations" + (" before --shard" if args.shard else ""))

    def prepare_all(line: prepare.Line) -> tuple[list, list, list]:
        line.phase(f"mem4d sweep: expanding {args.grid}...")
        configs = sweep.shard(parse_grid(args.grid), args.shard)
        if args.plots:
            check_output_dir(args.plots, "--plots")
        done = sweep.read_results(out)
        if done and not args.resume:
            raise ConfigError(
                f"{out} already holds {len(done)} results: add --resume to continue it, or choose another -o"
            )
        sweep.check_target(done, target.name, out)
        return configs, done, sweep.pending(prepare.checked(configs, line), done, args.retry_failed)

    try:
        configs, done, todo = prepare.prepared(prepare_all, line)
    except KeyboardInterrupt:
        raise interrupt.Interrupted(
            "mem4d sweep: interrupted while preparing the grid; nothing was run or written"
        ) from None
    before = {r["key"] for r in done}  # the keys in the file, and how many of the grid's: the count on Ctrl-C
    in_file = len(configs) - len(todo) + (sum(j.key in before for j in todo) if args.retry_failed else 0)
    existed = out.exists()
    fd = sweep.open_results(out)
    progress = None
    try:
        extra = {"code": code_version(), "target": target.name}
        if len(configs) > len(todo):
            print(
                f"{len(configs) - len(todo)} of {len(configs)} configs already in {out}, running {len(todo)}",
                file=sys.stderr,
            )
        progress = _Progress(len(todo), bar=sys.stderr.isatty() and not args.json)
        if todo and run_fn is None and args.jobs > 1:
            from jaxcheck.crosscheck.workers import run_parallel

            run_parallel(
                todo,
                fd,
                args.target_config or target.name,
                sweep.max_world(todo),
                args.measure,
                args.jobs,
                progress,
                extra,
            )
        else:
            if todo and run_fn is None:
                devices = _start_backend(todo, target)
                run_fn = _verify_fn(target, args.measure)
            sweep.run_all(todo, fd, run_fn, devices or 1, on_done=progress, extra=extra)
    except KeyboardInterrupt as err:
        interrupt.finish()  # a second Ctrl-C cannot cut the count short
        interrupt.keep(err)  # its frames hold the grid's configurations: freed by the exit, not one by one
        if progress:
            progress.stop()
        if not existed and os.fstat(fd).st_size == 0:  # nothing written to the file this run made: no empty file left
            out.unlink(missing_ok=True)
        finished = in_file + len((progress.keys if progress else set()) - before)  # not a key of millions again
        raise interrupt.Interrupted(
            f"mem4d sweep: interrupted; {finished} of {len(configs)} configs are in {out}. "
            f"Resume with: {resume_command(args)}"
        ) from None
    finally:
        os.close(fd)
        if progress:
            progress.stop()
    return _report(args, out, configs)


def _report(args: argparse.Namespace, out: Path, configs: list[dict]) -> int:
    """Summary over this grid's records in the file (resumed ones included): JSON file, table or --json, plots."""
    from jaxcheck.crosscheck import report
    from jaxcheck.crosscheck.grid import config_key
    from jaxcheck.crosscheck.sweep import read_results

    keys = {config_key(c) for c in configs}
    records = [r for r in read_results(out) if r["key"] in keys]
    summary = report.summarize(records)
    summary["grid"], summary["results"] = str(args.grid), str(out)
    summary["target"] = target_from_args(args).name
    plots = [] if args.no_plots else report.plot(records, args.plots or out.parent, out.stem)
    summary["plots"] = [str(p) for p in plots]
    path = report.write_summary(summary, out)
    if args.json:
        print(json.dumps(summary))
        return 0
    if args.markdown:
        print(report.markdown(summary), end="")
        return 0
    from ..render.console import Console

    console = Console()
    report.print_summary(summary, console)
    console.print(f"results: {out}; summary: {path}" + (f"; plots: {', '.join(map(str, plots))}" if plots else ""))
    return 0
