"""Estimator code generation, sympy's default CSE (cse=True) against mem4d's unevaluated one, side by side in one
run: `python benchmarks/bench_codegen.py [REPEATS]`. It times symbolic.estimator.codegen.derive (the expressions
built, then lambdified) for 18 switch sets of the jax and paper profiles, alternating the two CSEs, with sympy's
cache cleared before each derive so neither borrows the other's work; prints the median seconds and their ratio."""
from __future__ import annotations

import statistics
import sys
import time
from dataclasses import replace


def main() -> int:
    from sympy.core.cache import clear_cache

    from symbolic.config.shapes import PRESETS
    from symbolic.config.switches import Switches
    from symbolic.config.training import Training
    from symbolic.estimator import codegen

    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    base = Training(s=4096, gbs=64)
    cases = [(profile, Switches.of(replace(base, recompute=r, zero=z), True, shape=PRESETS[model]))
             for profile, model in (("jax", "tiny"), ("paper", "llama3-8b"), ("paper", "mixtral-8x7b"))
             for r in ("none", "selective", "full") for z in (1, 3)]
    times: dict[str, list[float]] = {"cse=True": [], "unevaluated": []}
    for _ in range(repeats):
        for profile, sw in cases:
            for name, cse in (("cse=True", True), ("unevaluated", codegen._cse_unevaluated)):
                codegen.CSE = cse
                clear_cache()
                start = time.perf_counter()
                codegen.derive(profile, sw)
                times[name].append(time.perf_counter() - start)
    codegen.CSE = codegen._cse_unevaluated
    old, new = (statistics.median(times[k]) for k in ("cse=True", "unevaluated"))
    print(f"{len(cases) * repeats} derives each: median cse=True {old:.2f} s, unevaluated {new:.2f} s, "
          f"ratio {old / new:.1f}x; totals {sum(times['cse=True']):.1f} s vs {sum(times['unevaluated']):.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
