"""A user's first `mem4d plan`: wall time of fresh processes for every built-in model and every config.json in
grids/models/published, on 2,048 GPUs (the table, --top 3), cold (an empty MEM4D_CACHE_DIR: what the shipped
archive, symbolic/estimator/shipped.zip, holds is read, anything else derived) and warm (the same cache dir again).

    python benchmarks/bench_first_plan.py [--repeat 3] [--derived] [--model NAME ...] [--gpus 2048] [--tiny]

--derived adds one cold run with the shipped archive turned off (MEM4D_NO_SHIPPED=1: every formula derived with
sympy, as before the archive). Not a test: timings depend on the machine and its load; docs/benchmarks.md has the
numbers and the machine they came from.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from shipped_cache import SEQS, models  # noqa: E402


GPUS = [2048]  # --gpus


def argv(model: str, seq: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "symbolic.cli",
        "plan",
        "--model",
        model,
        "--gpus",
        str(GPUS[0]),
        "--seq",
        str(seq),
        "--gbs",
        "2048",
        "--top",
        "3",
    ]


def timed(command: list[str], cache: str, shipped: bool = True) -> tuple[float, int, float]:
    """Wall seconds, exit status and CPU seconds (user + system) of one fresh process: on a loaded machine the CPU
    time is the figure that does not depend on how many others share the cores."""
    env = {**os.environ, "MEM4D_CACHE_DIR": cache, "COLUMNS": "200"}
    env.pop("MEM4D_NO_SHIPPED", None)
    env.update({} if shipped else {"MEM4D_NO_SHIPPED": "1"})
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, done.returncode, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def measure(model: str, repeat: int, derived: bool) -> dict:
    """Cold and warm wall times of one model's plan (the first sequence length it takes)."""
    for seq in SEQS:
        with tempfile.TemporaryDirectory() as cache:
            first = timed(argv(model, seq), cache)
        if first[1] != 2:
            break
    cold = [first]
    for _ in range(repeat - 1):  # repeat 0 (--tiny): one cold run
        with tempfile.TemporaryDirectory() as cache:
            cold.append(timed(argv(model, seq), cache))
    with tempfile.TemporaryDirectory() as cache:
        if repeat:  # --tiny: no warm runs (0), the cold one alone
            timed(argv(model, seq), cache)
        warm = [timed(argv(model, seq), cache) for _ in range(repeat)] or cold
        if derived:
            with tempfile.TemporaryDirectory() as empty:
                before = timed(argv(model, seq), empty, shipped=False)
    return {
        "model": model,
        "seq": seq,
        "rc": first[1],
        "cold": statistics.median(w for w, _, _ in cold),
        "cold_cpu": statistics.median(c for _, _, c in cold),
        "cold_max": max(w for w, _, _ in cold),
        "warm": statistics.median(w for w, _, _ in warm),
        "warm_cpu": statistics.median(c for _, _, c in warm),
        "derived": before if derived else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--derived", action="store_true", help="also one cold run deriving every formula")
    parser.add_argument("--model", action="append", help="only these (default: every built-in and published model)")
    parser.add_argument("--gpus", type=int, default=2048)
    parser.add_argument(
        "--tiny",
        action="store_true",
        help="one cold run of the tiny model on 8 GPUs (the test of this script; its warm column repeats the cold one)",
    )
    args = parser.parse_args()
    if args.tiny:
        args.model, args.repeat, args.gpus = ["tiny"], 0, 8
    GPUS[0] = args.gpus
    print(
        "| model | s | exit | cold: wall median, max (CPU) s | warm: wall median (CPU) s |"
        + (" every formula derived: wall (CPU) s |" if args.derived else "")
    )
    print("|---|---|---|---|---|" + ("---|" if args.derived else ""))
    rows = []
    for model in args.model or models():
        row = measure(model, args.repeat, args.derived)
        rows.append(row)
        extra = f" {row['derived'][0]:.2f} ({row['derived'][2]:.2f}) |" if args.derived else ""
        print(
            f"| {Path(model).name} | {row['seq']} | {row['rc']} | {row['cold']:.2f}, {row['cold_max']:.2f} "
            f"({row['cold_cpu']:.2f}) | {row['warm']:.2f} ({row['warm_cpu']:.2f}) |{extra}",
            flush=True,
        )
    worst = max(rows, key=lambda r: r["cold"])
    print(
        f"\nslowest cold median: {Path(worst['model']).name} {worst['cold']:.2f} s ({worst['cold_cpu']:.2f} s CPU); "
        f"median of the cold medians {statistics.median(r['cold'] for r in rows):.2f} s; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
