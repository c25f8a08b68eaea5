"""Benchmark `mem4d compile` and the bare `mem4d verify`: compile seconds, wall seconds and peak host RSS for real
model sizes, compiled by XLA:GPU for an H100 without a GPU and by XLA:CPU on simulated devices.

    python benchmarks/bench_compile.py [--remat none|selective|full] [--only llama3-8b] [--repeats 3]
    python benchmarks/bench_compile.py --tiny  # the tiny model on one simulated CPU device, once (the suite's check)

Each case runs `mem4d compile --json` (or `mem4d verify --json`) in a fresh subprocess; RSS is that child's
ru_maxrss (os.wait4), compile seconds are the tool's own (build abstract state + lower + compile; compile may compile
twice for a GPU target whose card the program nearly fills), wall seconds include Python and jax start-up; medians
over the repeats. Targets: compile <= 20 s and <= 2 GiB per case; bare verify <= 30 s and <= 2 GiB (2 idle cores).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the processes run this checkout's symbolic/

CASES = {
    "llama3-8b": "--model llama3-8b --dp 2 --tp 2 --pp 2 --cp 1 --seq 4096 --mbs 1 --gbs 16".split(),
    "llama3-70b": "--model llama3-70b --dp 2 --tp 8 --pp 4 --cp 1 --seq 4096 --mbs 1 --gbs 16".split(),
}
TINY = "--model tiny --dp 1 --tp 1 --pp 1 --cp 1 --seq 128 --mbs 1 --gbs 1".split()


def run_case(args: list[str], command: str = "compile") -> dict:
    """One fresh `mem4d <command> --json` process: its JSON plus wall seconds and max RSS in bytes."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "symbolic.cli", command, *args, "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
    )
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"mem4d compile {' '.join(args)} failed with status {status}")
    result = json.loads(out)
    return {"wall_seconds": wall, "max_rss_bytes": usage.ru_maxrss * 1024, **result}


def _median(runs: list[dict], key) -> float:
    import statistics

    return statistics.median(key(r) for r in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--remat", default="none")
    parser.add_argument("--only", choices=list(CASES) + ["verify"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tiny", action="store_true", help="the tiny model for XLA:CPU on one device, one run")
    args = parser.parse_args()
    print(f"{'case':<26}{'devices':>8}{'compile s':>11}{'wall s':>9}{'RSS GiB':>9}{'XLA total GiB':>15}")
    cases = [
        (f"{name} {target}", "compile", case + ["--remat", args.remat, "--target", target])
        for name, case in CASES.items()
        for target in ("h100-80gb", "cpu")
        if args.only in (None, name)
    ]
    if args.tiny:
        cases, args.repeats = [("tiny cpu", "compile", TINY + ["--remat", args.remat, "--target", "cpu"])], 1
    elif args.only in (None, "verify"):
        cases.append(("verify (default)", "verify", []))
    for label, command, case in cases:
        runs = [run_case(case, command) for _ in range(args.repeats)]
        r = runs[0]
        mesh = r["mesh"]
        devices = (
            mesh["data"] * mesh.get("expert", 1) * mesh["pipe"] * mesh["tensor"] * mesh["context"]
        )  # d = data x expert
        print(
            f"{label:<26}{devices:>8}{_median(runs, lambda x: x['compile_seconds']):>11.1f}"
            f"{_median(runs, lambda x: x['wall_seconds']):>9.1f}{_median(runs, lambda x: x['max_rss_bytes']) / 2**30:>9.2f}"
            f"{r['xla']['total_bytes'] / 2**30:>15.1f}"
        )


if __name__ == "__main__":
    main()
