"""Estimator code generation as mem4d derives it (subexpressions and printed terms in the order sympy holds them)
against the sorted orders it used before (sympy's canonical CSE order, the printer's lexicographic terms), side by
side in one run: `python benchmarks/bench_codegen.py [REPEATS]`. It times symbolic.estimator.codegen.derive (the
expressions built, then lambdified) for 18 switch sets of the jax and paper profiles, alternating the two, with
sympy's caches cleared before each derive so neither borrows the other's work, and the generated code of each on
10^6 random configurations (the main function, and a stage's total: what plan's split search calls most); prints
medians and their ratios, and the largest difference between the two codes' numbers. --tiny: one switch set on 10^3
configurations (tests/test_benchmarks.py: the script still runs)."""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import replace

import numpy as np


def through_lambdify(exprs, name, extra=()):
    """What codegen._lambdify_source did before: sympy.lambdify with the same printer and CSE, its source read back
    with inspect (tests/test_estimator.py checks codegen's source equal to it)."""
    import inspect

    import sympy as sp

    from symbolic.config.glossary import NAMES
    from symbolic.config.symbols import BY_NAME
    from symbolic.estimator import codegen

    fn = sp.lambdify(
        [BY_NAME[n] for n in NAMES + extra],
        tuple(exprs),
        modules="numpy",
        cse=codegen.CSE,
        printer=codegen._printer_class()(codegen.PRINTER),
        docstring_limit=0,
    )
    return inspect.getsource(fn).replace("def _lambdifygenerated(", f"def {name}(", 1)


def _throughput(code: dict, arrays: dict, repeats: int = 3) -> tuple[float, float, list]:
    """Configurations a second of the main function and of the first stage's total, and the main outputs."""
    from symbolic.config.glossary import STAGE_NAMES
    from symbolic.estimator.codegen import compile_source

    main = compile_source(code["main_source"], "_main")
    stage = compile_source(code["stages"]["first"]["total_source"], "_first_total")
    args = [arrays[name] for name in code["inputs"]]
    stage_args = (
        args
        + [arrays["L"] / arrays["p"], np.ones_like(arrays["L"])]
        + [arrays["L_e"] / arrays["p"]]
        + [np.zeros_like(arrays["L"])] * (len(STAGE_NAMES) - 3)
    )
    n = len(arrays["L"])
    rates = []
    for fn, fn_args in ((main, args), (stage, stage_args)):
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn(*fn_args)
            times.append(time.perf_counter() - start)
        rates.append(n / statistics.median(times))
    return rates[0], rates[1], [np.asarray(x, dtype=float) for x in main(*args)]


def main() -> int:
    from sympy.core.cache import clear_cache

    from bench_estimator import random_configs
    from symbolic.config.glossary import NAMES
    from symbolic.config.shapes import PRESETS
    from symbolic.config.switches import Switches
    from symbolic.config.training import Training
    from symbolic.estimator import codegen

    tiny = "--tiny" in sys.argv[1:]
    numbers = [arg for arg in sys.argv[1:] if arg != "--tiny"]
    repeats = int(numbers[0]) if numbers else 1
    base = Training(s=4096, gbs=64)
    cases = [
        (profile, Switches.of(replace(base, recompute=r, zero=z), True, shape=PRESETS[model]))
        for profile, model in (("jax", "tiny"), ("paper", "llama3-8b"), ("paper", "mixtral-8x7b"))
        for r in ("none", "selective", "full")
        for z in (1, 3)
    ][: 1 if tiny else None]
    arrays = random_configs(1000 if tiny else 1_000_000)
    rng = np.random.default_rng(1)
    for name in NAMES:  # the letters random_configs leaves out (MoE, MLA, ...): small positive values
        arrays.setdefault(name, rng.integers(1, 8, len(arrays["L"])).astype(float))
    arrays["L_e"] = arrays["L"].astype(float)
    arrays["e"] = arrays["t_e"] = np.ones(len(arrays["L"]))
    from symbolic.components.overheads import _wider_than_one

    now = (codegen.CSE, codegen.PRINTER, codegen._lambdify_source)
    sorted_ = (
        lambda exprs: codegen._cse_unevaluated(exprs, "canonical"),
        {**codegen.PRINTER, "order": None},
        codegen._lambdify_source,
    )
    cses = {"sorted": sorted_, "unsorted": now, "via lambdify": (*now[:2], through_lambdify)}
    times: dict[str, list[float]] = {k: [] for k in cses}
    rates: dict[str, list[tuple[float, float]]] = {k: [] for k in cses}
    worst = 0.0
    for _ in range(repeats):
        for profile, sw in cases:
            outputs = {}
            for name, (cse, printer, source) in cses.items():
                codegen.CSE, codegen.PRINTER, codegen._lambdify_source = cse, printer, source
                clear_cache()
                _wider_than_one.cache_clear()
                start = time.perf_counter()
                code = codegen.derive(profile, sw)
                times[name].append(time.perf_counter() - start)
                *rate, outputs[name] = _throughput(code, arrays)
                rates[name].append(tuple(rate))
            for a, b in zip(outputs["sorted"], outputs["unsorted"]):
                both = np.isfinite(a) & np.isfinite(b)
                worst = max(worst, float(np.max(np.abs(a[both] - b[both]) / np.maximum(np.abs(b[both]), 1.0))))
    codegen.CSE, codegen.PRINTER, codegen._lambdify_source = now
    old, new, via = (statistics.median(times[k]) for k in cses)
    print(
        f"{len(cases) * repeats} derives each: median sorted {old:.2f} s, unsorted {new:.2f} s, "
        f"ratio {old / new:.2f}x; totals {sum(times['sorted']):.1f} s vs {sum(times['unsorted']):.1f} s; the same "
        f"source through sympy.lambdify (argument sorting, exec, inspect) {via:.2f} s: {via / new:.2f}x"
    )
    for i, what in enumerate(("main function", "first stage's total")):
        a, b = (statistics.median(r[i] for r in rates[k]) for k in ("sorted", "unsorted"))
        print(f"{what}: median {a / 1e6:.2f} M configs/s sorted, {b / 1e6:.2f} M unsorted (ratio {b / a:.2f})")
    print(f"largest relative difference between the two codes' outputs: {worst:.1e}")
    return 0


if __name__ == "__main__":
    here = __import__("pathlib").Path(__file__).resolve().parent
    sys.path[:0] = [str(here), str(here.parent)]  # bench_estimator beside it, this checkout's symbolic/
    sys.exit(main())
