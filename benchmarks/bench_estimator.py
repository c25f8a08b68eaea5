"""Estimator throughput (configs/s) vs a per-config Python loop and sympy substitution, and `mem4d estimate` cold start.

Run: python benchmarks/bench_estimator.py [--n 1000000] [--repeats 5] [--tiny]
Not a test: it prints medians over repeats; pin to one core with `taskset -c 0` to measure one core. --tiny runs every
step on a few configurations and skips the empty-cache start (tests/test_benchmarks.py: the script still runs).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's symbolic/, not an installed one


def random_configs(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    """n random configurations (Llama-like shapes, 4D sizes, byte widths) as named arrays."""
    rng = np.random.default_rng(seed)
    pow2 = lambda lo, hi: 2 ** rng.integers(lo, hi, n)  # noqa: E731
    return {
        "s": pow2(9, 18),
        "b": pow2(0, 4),
        "h": pow2(11, 15),
        "f": rng.integers(4000, 60000, n),
        "a": pow2(5, 8),
        "k": pow2(0, 4),
        "L": rng.integers(16, 128, n),
        "v": rng.integers(32000, 260000, n),
        "d": pow2(0, 10),
        "t": pow2(0, 4),
        "p": pow2(0, 5),
        "c": pow2(0, 4),
        "m": pow2(0, 9),
        "vpp": rng.integers(1, 4, n),
        "B_w": np.full(n, 2),
        "B_g": np.full(n, 4),
        "B_o": np.full(n, 12),
        "B_a": np.full(n, 2),
    }


def estimator_inputs(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Every input the estimator takes for n configurations: random_configs' letters, dh = h/a, and the letters of
    layers a dense model lacks (MoE, MLA, hybrids, ...) as Llama 3 8B's (zero where it has none)."""
    from symbolic.config.glossary import inputs_for
    from symbolic.config.shapes import PRESETS
    from symbolic.config.training import Training

    arrays = random_configs(n, seed)
    arrays["dh"] = arrays["h"] // arrays["a"]
    base = inputs_for(PRESETS["llama3-8b"], Training())
    return {name: arrays.get(name, np.full(n, base[name])) for name in base}


def median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def cold_start(repeats: int, empty: bool = True) -> tuple[float | None, float, float]:
    """Median wall time of fresh `mem4d estimate` processes of this checkout: first run on an empty derivation cache
    (sympy derives and lambdifies; None where not empty), then with the cache warm, and a bare python for reference."""
    cmd = [sys.executable, "-m", "symbolic.cli", "estimate"]
    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as cache:
        env = os.environ | (
            {"MEM4D_CACHE_DIR": cache, "MEM4D_NO_SHIPPED": "1"} if empty else {}
        )  # derived, not shipped
        run = lambda c: subprocess.run(c, capture_output=True, check=True, env=env, cwd=root)  # noqa: E731
        first = time.perf_counter()
        run(cmd)
        first = time.perf_counter() - first if empty else None
        return (
            first,
            median_time(lambda: run(cmd), repeats),
            median_time(lambda: run([sys.executable, "-c", "pass"]), repeats),
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--loop-n", type=int, default=20_000, help="configs in the per-config Python loop")
    parser.add_argument("--sympy-n", type=int, default=20, help="configs substituted in sympy")
    parser.add_argument("--tiny", action="store_true", help="a few configurations, one repeat, the warm cache only")
    args = parser.parse_args()
    if args.tiny:
        args.n, args.repeats, args.loop_n, args.sympy_n = 1000, 1, 10, 1

    from symbolic.estimator.vectorized import estimator

    est = estimator("paper")  # default switches: ZeRO-1, flash, SP, no recompute, overheads on
    arrays = estimator_inputs(args.n)
    vector = median_time(lambda: est(**arrays), args.repeats)
    rate = args.n / vector
    print(
        f"numpy estimator      : {rate:14,.0f} configs/s  ({args.n:,} configs, {len(est.components)} outputs, median of {args.repeats})"
    )

    rows = [tuple(float(arrays[name][i]) for name in est.inputs) for i in range(args.loop_n)]
    raw = est._main
    loop = median_time(lambda: [raw(*row) for row in rows], max(1, args.repeats // 2))
    loop_rate = args.loop_n / loop
    print(
        f"per-config Python loop: {loop_rate:14,.0f} configs/s  (same generated function called per config, "
        f"{args.loop_n:,} configs, extrapolated)  -> numpy is {rate / loop_rate:,.0f}x faster"
    )

    import sympy as sp
    from symbolic.components import total
    from symbolic.config.switches import Switches
    from symbolic.config.symbols import BY_NAME
    from symbolic.recipes import load

    parts = load("paper").components(Switches())
    exprs = [x.expr for x in parts] + [total(parts)]
    subs = [{BY_NAME[name]: sp.Integer(int(arrays[name][i])) for name in est.inputs} for i in range(args.sympy_n)]
    sym = median_time(lambda: [[float(e.xreplace(s)) for e in exprs] for s in subs], 1)
    sym_rate = args.sympy_n / sym
    print(
        f"sympy substitution    : {sym_rate:14,.0f} configs/s  ({args.sympy_n} configs, exact rationals)"
        f"  -> numpy is {rate / sym_rate:,.0f}x faster"
    )
    print(
        f"target >= 1e7 configs/s: {'met' if rate >= 1e7 else 'NOT met'} (cpu count {os.cpu_count()}, "
        f"affinity {len(os.sched_getaffinity(0))} core(s))"
    )

    first, cold, bare = cold_start(1 if args.tiny else max(5, args.repeats), empty=not args.tiny)
    first = "skipped (--tiny)" if first is None else f"{first:.3f} s"
    print(
        f"`mem4d estimate` cold start: {cold:.3f} s wall median of fresh processes with the derivation cache warm "
        f"(bare python: {bare:.3f} s; very first run, empty cache: {first}); target <= 1.0 s: "
        f"{'met' if cold <= 1.0 else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
