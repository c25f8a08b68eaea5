"""Benchmark `mem4d compile`: compile seconds and peak host RSS for real model sizes on simulated CPU devices.

    python benchmarks/bench_compile.py [--remat none|selective|full] [--only llama3-8b]

Each case runs `mem4d compile --json` in a fresh subprocess; RSS is that child's ru_maxrss (os.wait4), compile seconds
are the tool's own (build abstract state + lower + compile), wall seconds include Python and jax start-up.
Target (issue 3): <= 20 s and <= 2 GiB per case on the 2-core CPU machine.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

CASES = {
    "llama3-8b": ["--model", "llama3-8b", "--dp", "2", "--tp", "2", "--pp", "2", "--cp", "1",
                  "--seq", "4096", "--mbs", "1", "--gbs", "16"],
    "llama3-70b": ["--model", "llama3-70b", "--dp", "2", "--tp", "8", "--pp", "4", "--cp", "1",
                   "--seq", "4096", "--mbs", "1", "--gbs", "16"],
}


def run_case(args: list[str]) -> dict:
    """One fresh `mem4d compile --json` process: its JSON plus wall seconds and max RSS in bytes."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "symbolic.cli", "compile", *args, "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"mem4d compile {' '.join(args)} failed with status {status}")
    result = json.loads(out)
    return {"wall_seconds": wall, "max_rss_bytes": usage.ru_maxrss * 1024, **result}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--remat", default="none")
    parser.add_argument("--only", choices=list(CASES))
    args = parser.parse_args()
    print(f"{'case':<12}{'devices':>8}{'compile s':>11}{'wall s':>9}{'RSS GiB':>9}{'XLA total GiB':>15}")
    for name, case in CASES.items():
        if args.only and name != args.only:
            continue
        r = run_case(case + ["--remat", args.remat])
        print(f"{name:<12}{r['devices']:>8}{r['compile_seconds']:>11.1f}{r['wall_seconds']:>9.1f}"
              f"{r['max_rss_bytes'] / 2**30:>9.2f}{r['xla']['total_bytes'] / 2**30:>15.1f}")


if __name__ == "__main__":
    main()
