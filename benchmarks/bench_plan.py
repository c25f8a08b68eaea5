"""Benchmark `mem4d plan`: vectorized search vs one configuration at a time, and end-to-end wall time.

    python benchmarks/bench_plan.py [--model llama3.1-405b --gpus 16384 --seq 8192 --gbs 2048] [--repeat 7]
    python benchmarks/bench_plan.py --model qwen3-235b-a22b --gpus 1024 --seq 4096 --gbs 1024  # ep and etp too
    python benchmarks/bench_plan.py --tiny  # Llama 3 8B on 8 GPUs, once, no cold run (tests/test_benchmarks.py)

Prints, for one cluster and every option (all (d, t, p, c, vpp, mbs), 3 recompute modes, ZeRO stages 0 to 3, even
and balanced stage splits, p no longer a divisor of L):
- load: the 12 estimators of the first search in this process (derived, or read from the on-disk cache),
- search: enumeration + evaluation + ranking (median of --repeat, estimators already built), and its parts:
  every component of every row (the estimator proper), the stage totals of even and of uneven splits (the split
  search; these three in thread-seconds, one thread per core), the peak, the ranking proxy, the sort,
- configurations evaluated and evaluated per second,
- the same configurations through `symbolic.estimator.estimate` one at a time (a random subsample, extrapolated),
  with the largest byte difference between the two paths on that subsample,
- `mem4d plan` wall time in a fresh subprocess (median of --repeat), the number the issue's 2 s target is about,
  with the on-disk estimator cache warm and cold (as from a fresh clone).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's symbolic/, not an installed one

from symbolic.config.hfconfig import resolve_model  # noqa: E402
from symbolic.plan.enumerate import Cluster  # noqa: E402
from symbolic.plan.search import search  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="llama3.1-405b")
    parser.add_argument("--gpus", type=int, default=16384)
    parser.add_argument("--seq", type=int, default=8192)
    parser.add_argument("--gbs", type=int, default=2048)
    parser.add_argument("--gpu-mem", type=float, default=80 * 2**30)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--sample", type=int, default=300, help="configurations timed one at a time")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--tiny", action="store_true", help="llama3-8b on 8 GPUs, one repeat, a few samples, warm only")
    args = parser.parse_args()
    if args.tiny:
        args.model, args.gpus, args.seq, args.gbs, args.repeat, args.sample = "llama3-8b", 8, 4096, 32, 1, 5
    return args


def _one_at_a_time(plan, sample: int) -> tuple[float, int, int]:
    """Seconds per configuration via estimate(shape, Training) and the largest byte difference on the subsample."""
    from symbolic.estimator.estimate import estimate

    rng = np.random.default_rng(0)
    rows = rng.choice(plan.evaluated, size=min(sample, plan.evaluated), replace=False)
    worst = 0
    t0 = time.perf_counter()
    results = [(i, estimate(plan.cluster.shape, plan.training(i), profile=plan.profile)) for i in rows]
    per_config = (time.perf_counter() - t0) / len(rows)
    for i, one in results:
        got = plan.config(i)["bytes"]
        if set(got) != set(one.bytes):
            raise SystemExit(f"row {i}: components differ: {sorted(got)} vs {sorted(one.bytes)}")
        worst = max(worst, max(abs(one.bytes[name] - got[name]) for name in got))
    return per_config, worst, len(rows)


def _scalar_calls(plan, sample: int) -> float:
    """Seconds per configuration calling the same lambdified estimator with scalars (no Training, no stages):
    the least a Python loop over configurations pays."""
    from symbolic.config.glossary import inputs_for
    from symbolic.config.switches import Switches
    from symbolic.estimator.vectorized import estimator

    rng = np.random.default_rng(1)
    rows = rng.choice(plan.evaluated, size=min(sample, plan.evaluated), replace=False)
    jobs = []
    for i in rows:
        tr = plan.training(int(i))
        est = estimator(plan.profile, Switches.of(tr, shape=plan.cluster.shape))
        jobs.append((est, inputs_for(plan.cluster.shape, tr)))
    t0 = time.perf_counter()
    for est, values in jobs:
        est(**values)
    return (time.perf_counter() - t0) / len(jobs)


def _end_to_end(args, repeat: int, cold: bool) -> list[float]:
    """Wall time of `mem4d plan` in fresh subprocesses; cold: as from a fresh clone, i.e. a copy of symbolic/ without
    __pycache__ and an empty estimator cache (MEM4D_CACHE_DIR), so every expression is derived and lambdified."""
    command = [
        sys.executable,
        "-m",
        "symbolic.cli",
        "plan",
        "--model",
        args.model,
        "--gpus",
        str(args.gpus),
        "--seq",
        str(args.seq),
        "--gbs",
        str(args.gbs),
        "--gpu-mem",
        str(int(args.gpu_mem)),
    ]
    times = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            env, cwd = dict(os.environ), REPO
            if cold:
                cwd = Path(tmp)
                shutil.copytree(REPO / "symbolic", cwd / "symbolic", ignore=shutil.ignore_patterns("__pycache__"))
                env["MEM4D_CACHE_DIR"] = str(cwd / "cache")
                env["MEM4D_NO_SHIPPED"] = "1"  # every expression derived: not the shipped archive
            t0 = time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env)
            times.append(time.perf_counter() - t0)
        if done.returncode not in (0, 1):
            raise SystemExit(f"mem4d plan failed ({done.returncode}): {done.stderr.strip()}")
    return times


def _print_table(args, first, figures: dict) -> None:
    """The figures as the table people read (--json prints them whole)."""
    search_s, enum_s = figures["search_seconds_median"], figures["enumerate_seconds_median"]
    per_config, sampled = figures["one_at_a_time_seconds_per_config"], figures["one_at_a_time_sampled"]
    per_scalar, worst = figures["scalar_call_seconds_per_config"], figures["max_byte_difference_on_sample"]
    parts = figures["search_parts_seconds_median"]
    print(f"{args.model} on {args.gpus} GPUs, s={args.seq}, gbs={args.gbs}, all options")
    print(f"  candidates masked             {first.candidates:>12,}  ((d,t,p,c,vpp,mbs) x ZeRO stage x split)")
    print(
        f"  configurations (as plan says) {first.valid:>12,}  (every recompute choice x ZeRO stage x split kind the "
        f"rules allow; what `mem4d plan` and `mem4d report` count)"
    )
    print(
        f"  configurations evaluated      {first.evaluated:>12,}  (kept once a balanced split no wider than the even "
        f"one is left to the even row; {figures['uneven']:,} uneven; under 0.8 x GPU: {first.feasible:,})"
    )
    print(
        f"  load 12 estimators            {first.seconds['build']:>12.3f} s  (first search in this process; "
        f"on-disk cache as found)"
    )
    print(f"  enumerate + evaluate + rank   {search_s:>12.4f} s  (median of {args.repeat}; enumerate {enum_s:.4f} s)")
    print(f"  evaluated per second          {figures['evaluated_per_second']:>12,.0f}")
    for key, seconds in parts.items():  # where the search's time goes (medians, thread-seconds: the pairs of
        print(f"    {key:<27} {seconds:>12.4f} s")  # components, even and uneven stages run on every core at once)
    print(
        f"  one at a time (estimate())    {per_config * 1e3:>12.3f} ms/config  ({sampled} sampled) -> "
        f"{figures['one_at_a_time_extrapolated_seconds']:.2f} s for all, {figures['speedup']:,.0f}x slower"
    )
    print(
        f"  one at a time (bare est(**x)) {per_scalar * 1e3:>12.3f} ms/config  -> "
        f"{per_scalar * first.evaluated:.2f} s for all, {per_scalar * first.evaluated / search_s:,.0f}x slower"
    )
    print(f"  max byte difference (sample)  {worst:>12d}")
    print(
        f"  mem4d plan end to end         {figures['end_to_end_seconds_median']:>12.3f} s  (median of {args.repeat}, "
        f"fresh subprocess, estimator cache warm)"
    )
    if not args.tiny:
        print(
            f"  mem4d plan end to end, cold   {figures['end_to_end_cold_seconds_median']:>12.3f} s  (median of "
            f"{args.repeat}, fresh copy of symbolic/ without __pycache__, empty estimator cache)"
        )


def main() -> None:
    args = _args()
    cluster = Cluster(resolve_model(args.model), gpus=args.gpus, s=args.seq, gbs=args.gbs)
    limit = 0.8 * args.gpu_mem
    first = search(cluster, limit)
    runs = [search(cluster, limit) for _ in range(args.repeat)]
    search_s = statistics.median(p.seconds["enumerate"] + p.seconds["evaluate"] for p in runs)
    parts = {
        key: statistics.median(p.seconds.get(key, 0.0) for p in runs)
        for key in runs[0].seconds
        if key.startswith("evaluate.")
    }
    enum_s = statistics.median(p.seconds["enumerate"] for p in runs)
    per_config, worst, sampled = _one_at_a_time(first, args.sample)
    per_scalar = _scalar_calls(first, 10 * args.sample)
    wall = _end_to_end(args, args.repeat, cold=False)
    wall_cold = [float("nan")] if args.tiny else _end_to_end(args, args.repeat, cold=True)
    figures = {
        "model": args.model,
        "gpus": args.gpus,
        "seq": args.seq,
        "gbs": args.gbs,
        "candidates": first.candidates,
        "valid": first.valid,
        "evaluated": first.evaluated,
        "feasible": first.feasible,
        "uneven": int((first.rows["split"] > 0).sum()),
        "load_estimators_seconds": first.seconds["build"],
        "search_seconds_median": search_s,
        "enumerate_seconds_median": enum_s,
        "evaluated_per_second": first.evaluated / search_s,
        "one_at_a_time_seconds_per_config": per_config,
        "one_at_a_time_sampled": sampled,
        "one_at_a_time_extrapolated_seconds": per_config * first.evaluated,
        "speedup": per_config * first.evaluated / search_s,
        "scalar_call_seconds_per_config": per_scalar,
        "scalar_calls_extrapolated_seconds": per_scalar * first.evaluated,
        "max_byte_difference_on_sample": worst,
        "end_to_end_seconds_median": statistics.median(wall),
        "end_to_end_seconds": wall,
        "end_to_end_cold_seconds_median": statistics.median(wall_cold),
        "end_to_end_cold_seconds": wall_cold,
        "search_parts_seconds_median": parts,
    }
    if args.json:
        print(json.dumps(figures, indent=1))
        return
    _print_table(args, first, figures)


if __name__ == "__main__":
    main()
