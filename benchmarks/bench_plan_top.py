"""Benchmark `mem4d plan --top 10 --json` on the clusters of issue 28, exhaustive search against plan.best, side by
side in one run.

    python benchmarks/bench_plan_top.py [--repeat 3] [--json]
    python benchmarks/bench_plan_top.py --tiny  # Llama 3 8B on 8 GPUs, once (tests/test_benchmarks.py)
    python benchmarks/bench_plan_top.py --before REV [--case N ...]  # plan.best at REV against now, side by side
    python benchmarks/bench_plan_top.py --goal [--before REV] [--repeat 5]  # the < 1 s goal's clusters, warm and cold
    python benchmarks/bench_plan_top.py --goal --phases [--case N]  # where one warm plan's CPU seconds go

For each case, fresh subprocesses (estimator cache warm: one untimed run first) of `mem4d plan ... --top 10 --json`,
once as the CLI runs now (plan.best: rows evaluated in the proxy's bound order until the 10 best are certain) and once
with the exhaustive search in its place (plan.search, every row evaluated: what plan ran before), alternating, and
per process: the search seconds plan reports, wall time end to end, peak RSS (os.wait4's ru_maxrss of that child).
Medians of --repeat; the rows both print must be identical (exit 1 otherwise). With --before REV, the code of
commit REV (unpacked with `git archive` into a temporary folder) takes the exhaustive search's place: plan.best then
against plan.best now, alternating. With --goal (goal.py): `mem4d plan` as a user runs it (the table, --top 10) on
the clusters of plan's speed goal, warm and cold, no exhaustive search.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# (model, GPUs, s, gbs): the table of issue 28
CASES = (
    ("grids/models/published/deepseek-v3.json", 2048, 4096, 15360),
    ("grids/models/published/deepseek-v3.json", 16384, 4096, 16384),
    ("qwen3-30b-a3b", 2048, 4096, 2048),
    ("qwen3-235b-a22b", 1024, 4096, 1024),
    ("mixtral-8x22b", 1024, 8192, 1024),
    ("llama3.1-405b", 131072, 8192, 16384),
)
TINY = ("llama3-8b", 8, 4096, 32)
# the exhaustive search in plan.best's place: what `mem4d plan --top K` ran before plan.best
EXHAUSTIVE = (
    "import sys, symbolic.plan.best as b, symbolic.plan.search as s\n"
    "b.best = lambda cluster, limit, top, **kw: s.search(cluster, limit, **kw)\n"
    "from symbolic.cli.entry import main\nsys.argv[0] = 'mem4d'\nsys.exit(main(sys.argv[1:]))\n"
)
CURRENT = "import sys\nfrom symbolic.cli.entry import main\nsys.argv[0] = 'mem4d'\nsys.exit(main(sys.argv[1:]))\n"
# the child's own peak RSS, written last on its stderr
RSS = (
    "import atexit, resource, sys\n"
    "u = lambda: resource.getrusage(resource.RUSAGE_SELF)\n"
    "atexit.register(lambda: print('maxrss', u().ru_maxrss, u().ru_utime + u().ru_stime, file=sys.stderr))\n"
)


def _run(code: str, args: list[str], where: Path = REPO) -> tuple[dict, float, float, float]:
    """(plan's JSON, wall seconds, peak RSS in GiB, CPU seconds) of one child process running the code in `where`
    (CPU time: what a shared machine's load does not inflate as much as the wall clock)."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", RSS + code, *args],
        capture_output=True,
        text=True,
        cwd=where,
        env={**os.environ, "PYTHONPATH": str(where)},
    )
    wall = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"mem4d {' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}")
    _, rss_kib, cpu = done.stderr.strip().splitlines()[-1].split()
    return json.loads(done.stdout), wall, int(rss_kib) / 2**20, float(cpu)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--tiny", action="store_true", help="one small cluster, one repeat")
    parser.add_argument("--before", help="a commit: its plan.best in the exhaustive search's place")
    parser.add_argument("--case", type=int, action="append", help="only these CASES (0-based; repeatable)")
    parser.add_argument("--goal", action="store_true", help="plan_goal.GOAL's clusters, warm and cold (--case: GOAL's)")
    parser.add_argument("--phases", action="store_true", help="with --goal: CPU seconds by stage, in this process")
    args = parser.parse_args()
    before = _unpack(args.before) if args.before else None
    if args.goal:
        sys.path.insert(0, str(REPO / "benchmarks"))
        from plan_goal import GOAL, measure, phases

        if args.phases:  # one warm run of each case in this process, stage by stage (the cache filled first)
            for i in args.case or range(len(GOAL)):
                phases(i)
            return 0

        trees = {"now": REPO} | ({args.before: before} if before else {})
        return 0 if measure(trees, args.repeat, args.case) else 1
    table, same_everywhere = [], True
    args.repeat = 1 if args.tiny else args.repeat
    for model, gpus, s, gbs in [TINY] if args.tiny else [CASES[i] for i in (args.case or range(len(CASES)))]:
        argv = ["plan", "--model", model, *f"--gpus {gpus} --seq {s} --gbs {gbs} --top 10 --json".split()]
        _run(CURRENT, argv)  # the estimator cache warm for both
        if before:
            _run(CURRENT, argv, before)
        runs = {"exhaustive": [], "best": []}
        for _ in range(args.repeat):
            for name, code in (("exhaustive", EXHAUSTIVE), ("best", CURRENT)):
                runs[name].append(_run(CURRENT, argv, before) if before and name == "exhaustive" else _run(code, argv))
        figures = {"model": model, "gpus": gpus, "seq": s, "gbs": gbs}
        for name, done in runs.items():
            out = done[0][0]
            figures[name] = {
                "valid": out["valid"],
                "evaluated": out["evaluated"],
                "search_s": statistics.median(r[0]["seconds"] for r in done),
                "wall_s": statistics.median(r[1] for r in done),
                "rss_gib": statistics.median(r[2] for r in done),
                "cpu_s": statistics.median(r[3] for r in done),
            }
        a, b = runs["exhaustive"][0][0], runs["best"][0][0]
        figures["same_rows"] = a["configs"] == b["configs"]
        figures["ep_listed"] = max((c["config"].get("ep", 1) for c in b["configs"]), default=None)
        same_everywhere &= figures["same_rows"]
        table.append(figures)
        if not args.json:
            _print(figures)
    if args.json:
        print(json.dumps(table, indent=1))
    return 0 if same_everywhere else 1


def _unpack(rev: str) -> Path:
    """The tree of commit `rev` in a temporary folder (git archive), for the --before runs."""
    import io
    import tarfile
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="bench-plan-"))
    tar = subprocess.run(["git", "archive", rev], cwd=REPO, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        archive.extractall(folder, filter="data")
    return folder


def _print(f: dict) -> None:
    e, b = f["exhaustive"], f["best"]
    print(
        f"{Path(f['model']).name} on {f['gpus']:,} GPUs (s {f['seq']}, gbs {f['gbs']}): {e['valid']:,} valid rows; "
        f"evaluated {e['evaluated']:,} -> {b['evaluated']:,}; search {e['search_s']:.2f} -> {b['search_s']:.2f} s; "
        f"end to end {e['wall_s']:.2f} -> {b['wall_s']:.2f} s (CPU {e['cpu_s']:.2f} -> {b['cpu_s']:.2f} s); peak RSS {e['rss_gib']:.2f} -> {b['rss_gib']:.2f} GiB; "
        f"same 10 rows: {f['same_rows']}; largest ep listed {f['ep_listed']}",
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())
