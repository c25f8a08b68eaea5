"""Benchmark `mem4d plan`: vectorized search vs one configuration at a time, and end-to-end wall time.

    python benchmarks/bench_plan.py [--model llama3.1-405b --gpus 16384 --seq 8192 --gbs 2048] [--repeat 7]

Prints, for one cluster and every option (all (d, t, p, c, vpp, mbs), 3 recompute modes, dist_opt on/off):
- build: deriving and lambdifying the 6 estimators (once per process, cold),
- search: enumeration + evaluation + ranking (median of --repeat, estimators already built),
- configurations evaluated and evaluated per second,
- the same configurations through `symbolic.estimator.estimate` one at a time (a random subsample, extrapolated),
  with the largest byte difference between the two paths on that subsample,
- `mem4d plan` wall time in a fresh subprocess (median of --repeat), the number the issue's 2 s target is about.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import numpy as np

from symbolic.plan import Cluster
from symbolic.plan_search import search
from symbolic.shapes import resolve_model


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
    return parser.parse_args()


def _one_at_a_time(plan, sample: int) -> tuple[float, int, int]:
    """Seconds per configuration via estimate(shape, Training) and the largest byte difference on the subsample."""
    from symbolic.estimator import estimate

    rng = np.random.default_rng(0)
    rows = rng.choice(plan.evaluated, size=min(sample, plan.evaluated), replace=False)
    worst = 0
    t0 = time.perf_counter()
    results = [(i, estimate(plan.cluster.shape, plan.training(i), profile=plan.profile)) for i in rows]
    per_config = (time.perf_counter() - t0) / len(rows)
    for i, one in results:
        worst = max(worst, max(abs(one.bytes[name] - plan.config(i)["bytes"][name]) for name in plan.components))
    return per_config, worst, len(rows)


def _end_to_end(args, repeat: int) -> list[float]:
    command = [sys.executable, "-m", "symbolic.cli", "plan", "--model", args.model, "--gpus", str(args.gpus),
               "--seq", str(args.seq), "--gbs", str(args.gbs)]
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True)
        times.append(time.perf_counter() - t0)
        if done.returncode not in (0, 1):
            raise SystemExit(f"mem4d plan failed ({done.returncode}): {done.stderr.strip()}")
    return times


def main() -> None:
    args = _args()
    cluster = Cluster(resolve_model(args.model), gpus=args.gpus, s=args.seq, gbs=args.gbs)
    limit = 0.8 * args.gpu_mem
    first = search(cluster, limit)
    runs = [search(cluster, limit) for _ in range(args.repeat)]
    search_s = statistics.median(p.seconds["enumerate"] + p.seconds["evaluate"] for p in runs)
    enum_s = statistics.median(p.seconds["enumerate"] for p in runs)
    per_config, worst, sampled = _one_at_a_time(first, args.sample)
    wall = _end_to_end(args, args.repeat)
    figures = {
        "model": args.model, "gpus": args.gpus, "seq": args.seq, "gbs": args.gbs,
        "candidates": first.candidates, "evaluated": first.evaluated, "feasible": first.feasible,
        "build_seconds_cold": first.seconds["build"],
        "search_seconds_median": search_s, "enumerate_seconds_median": enum_s,
        "evaluated_per_second": first.evaluated / search_s,
        "one_at_a_time_seconds_per_config": per_config, "one_at_a_time_sampled": sampled,
        "one_at_a_time_extrapolated_seconds": per_config * first.evaluated,
        "speedup": per_config * first.evaluated / search_s,
        "max_byte_difference_on_sample": worst,
        "end_to_end_seconds_median": statistics.median(wall), "end_to_end_seconds": wall,
    }
    if args.json:
        print(json.dumps(figures, indent=1))
        return
    print(f"{args.model} on {args.gpus} GPUs, s={args.seq}, gbs={args.gbs}, all options")
    print(f"  candidates enumerated         {first.candidates:>12,}")
    print(f"  configurations evaluated      {first.evaluated:>12,}  (feasible under 0.8 x GPU: {first.feasible:,})")
    print(f"  build 6 estimators (cold)     {first.seconds['build']:>12.3f} s")
    print(f"  enumerate + evaluate + rank   {search_s:>12.4f} s  (median of {args.repeat}; enumerate {enum_s:.4f} s)")
    print(f"  evaluated per second          {figures['evaluated_per_second']:>12,.0f}")
    print(f"  one at a time (estimate())    {per_config * 1e3:>12.3f} ms/config  ({sampled} sampled) -> "
          f"{figures['one_at_a_time_extrapolated_seconds']:.2f} s for all, {figures['speedup']:,.0f}x slower")
    print(f"  max byte difference (sample)  {worst:>12d}")
    print(f"  mem4d plan end to end         {figures['end_to_end_seconds_median']:>12.3f} s  (median of {args.repeat}, "
          f"fresh subprocess)")


if __name__ == "__main__":
    main()
