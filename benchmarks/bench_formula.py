"""`mem4d formula` (paper, jax) and `mem4d latex` wall time, cold (empty cache) and warm (rendered cache on disk).

Run: python benchmarks/bench_formula.py [--repeats 5] [--tiny]
Not a test: each command runs as a user runs it (a fresh process); cold runs each get an empty MEM4D_CACHE_DIR, warm
runs share the one the last cold run filled. Prints the median and range of each, side by side, and the targets
(warm <= 1 s, cold <= 5 s on 2 idle cores). --tiny: `mem4d formula` alone, once each (tests/test_benchmarks.py).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the processes run this checkout's symbolic/

COMMANDS = {
    "mem4d formula": ["formula"],
    "mem4d formula --profile jax": ["formula", "--profile", "jax"],
    "mem4d latex": "latex --model llama3-70b --dp 8 --tp 8 --pp 4 --cp 2 --seq 8192 --gbs 1024".split(),
}


def run_once(argv: list[str], cache: str) -> float:
    env = {**os.environ, "MEM4D_CACHE_DIR": cache, "MEM4D_NO_SHIPPED": "1"}  # derivations, not the shipped ones
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "symbolic.cli", *argv], env=env, cwd=ROOT, capture_output=True, text=True
    )
    seconds = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.strip()}")
    return seconds


def measure(argv: list[str], repeats: int) -> tuple[list[float], list[float]]:
    """(cold seconds, warm seconds) over `repeats` runs each; the warm runs share the cache the last cold run filled
    (a run of its own to fill it derived everything a second time)."""
    cold, cache = [], None
    try:
        for _ in range(repeats):
            if cache:
                shutil.rmtree(cache, ignore_errors=True)
            cache = tempfile.mkdtemp(prefix="mem4d-cold-")
            cold.append(run_once(argv, cache))
        warm = [run_once(argv, cache) for _ in range(repeats)]
    finally:
        if cache:
            shutil.rmtree(cache, ignore_errors=True)
    return cold, warm


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tiny", action="store_true", help="`mem4d formula` alone, one run each")
    args = parser.parse_args()
    commands = dict(list(COMMANDS.items())[:1]) if args.tiny else COMMANDS
    args.repeats = 1 if args.tiny else args.repeats
    print(
        f"{'command':32} {'cold median (min-max) s':>26} {'warm median (min-max) s':>26}   (target: cold <= 5, warm <= 1)"
    )
    for name, argv in commands.items():
        cold, warm = measure(argv, args.repeats)
        show = lambda xs: f"{statistics.median(xs):.2f} ({min(xs):.2f}-{max(xs):.2f})"  # noqa: E731
        print(f"{name:32} {show(cold):>26} {show(warm):>26}", flush=True)


if __name__ == "__main__":
    main()
