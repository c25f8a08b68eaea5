"""plan's speed goal (issue 51: < 1 s warm at any scale): `mem4d plan` as a user runs it (the table, --top 10, ranked
by the step-time model) on six clusters from 8 to 131,072 GPUs, in fresh processes, warm and cold, side by side with
the code of another commit when asked. Run through `python benchmarks/bench_plan_top.py --goal`.

warm: MEM4D_CACHE_DIR a temporary folder one untimed run filled first; cold: a new empty one each run (the shipped
archive, symbolic/estimator/shipped.zip, read; anything it lacks derived). Wall seconds of the process and its CPU
seconds (user + system: what a shared machine's load inflates least), medians of --repeat, runs alternating between
the trees compared. The rows each tree prints must be the same (exit 1 otherwise).
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# (model, GPUs, s, gbs, extra flags): dense 8 to 131,072 GPUs, two MoE models (MLA and GQA)
GOAL = (
    ("llama3-8b", 8, 8192, 128, ()),
    ("llama3-70b", 64, 8192, 256, ("--system", "dgx-h100")),
    ("llama3.1-405b", 1024, 8192, 2048, ()),
    ("grids/models/published/deepseek-v3.json", 2048, 4096, 15360, ()),
    ("qwen3-235b-a22b", 256, 4096, 1024, ()),
    ("llama3.1-405b", 131072, 8192, 16384, ()),
)


def argv(case: tuple) -> list[str]:
    model, gpus, s, gbs, extra = case
    return ["plan", "--model", model, "--gpus", str(gpus), "--seq", str(s), "--gbs", str(gbs), "--top", "10", *extra]


def timed(where: Path, args: list[str], cache: str) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds and stdout of one fresh `mem4d` process run from the tree at `where`."""
    env = {**os.environ, "PYTHONPATH": str(where), "MEM4D_CACHE_DIR": cache, "COLUMNS": "200"}
    code = "import sys\nfrom symbolic.cli.entry import main\nsys.argv[0] = 'mem4d'\nsys.exit(main(sys.argv[1:]))\n"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=where, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"mem4d {' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    table = done.stdout.split("└", 1)[0]  # plan's table (the first one's step time follows it since issue 51)
    rows = "\n".join(line for line in table.splitlines() if line.startswith("│"))  # the table's rows
    return wall, cpu, rows


def measure(trees: dict[str, Path], repeat: int, cases: list[int] | None) -> bool:
    """Print one line per case and tree: warm and cold medians; True where every tree printed the same rows."""
    same = True
    print("| model | GPUs | tree | warm wall (CPU) s | cold wall (CPU) s |\n|---|---|---|---|---|")
    for case in [GOAL[i] for i in (cases or range(len(GOAL)))]:
        runs = {name: {"warm": [], "cold": []} for name in trees}
        with tempfile.TemporaryDirectory() as warm_dir:
            rows = {name: timed(where, argv(case), warm_dir)[2] for name, where in trees.items()}  # fills the cache
            for _ in range(repeat):
                for name, where in trees.items():
                    runs[name]["warm"].append(timed(where, argv(case), warm_dir))
                    with tempfile.TemporaryDirectory() as cold_dir:
                        runs[name]["cold"].append(timed(where, argv(case), cold_dir))
        same &= len(set(rows.values())) == 1 and all(r[2] == rows[n] for n in runs for k in runs[n] for r in runs[n][k])
        for name, got in runs.items():
            cell = {
                k: f"{statistics.median(r[0] for r in v):.2f} ({statistics.median(r[1] for r in v):.2f})"
                for k, v in got.items()
            }
            print(
                f"| {Path(case[0]).name.removesuffix('.json')} | {case[1]:,} | {name} | {cell['warm']} | {cell['cold']} |",
                flush=True,
            )
    print(f"same rows in every run: {same}; load average {os.getloadavg()[0]:.1f}")
    return same


# (module, function) pairs whose CPU seconds --phases reports: the stages of plan.best and what inside them costs most
PHASES = (
    ("symbolic.plan.best", "valid"),
    ("symbolic.plan.best", "_estimators"),
    ("symbolic.plan.best", "_bounds"),
    ("symbolic.plan.best", "_round"),
    ("symbolic.plan.rows", "split_rows"),
    ("symbolic.plan.best", "merged"),
    ("symbolic.cli.plan", "print_table"),
    ("symbolic.estimator.codegen", "cache_key"),
)


def phases(case: int) -> None:
    """GOAL[case]'s `mem4d plan` once to fill a new cache folder, then once more in a fresh process on it (stage_cpu)."""
    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as cache:
        timed(root, argv(GOAL[case]), cache)
        code = f"import sys\nsys.path.insert(0, 'benchmarks')\nfrom plan_goal import stage_cpu\nstage_cpu({case})\n"
        env = {**os.environ, "PYTHONPATH": str(root), "MEM4D_CACHE_DIR": cache}
        subprocess.run([sys.executable, "-c", code], cwd=root, env=env, check=True)


def stage_cpu(case: int) -> None:
    """One warm `mem4d plan` of GOAL[case] in this process: the CPU seconds of its imports and of each PHASES function
    (time.process_time around every call; nested ones are also inside their callers)."""
    import contextlib
    import importlib
    import io
    from collections import Counter

    start = time.process_time()
    from symbolic.cli.entry import main

    for module, _ in PHASES:
        importlib.import_module(module)
    imports, spent, calls = time.process_time() - start, Counter(), Counter()
    for module, name in PHASES:
        holder = sys.modules[module]
        spent[name], calls[name] = 0.0, 0

        def timed_call(*args, _f=getattr(holder, name), _name=name, **kwargs):
            begin = time.process_time()
            try:
                return _f(*args, **kwargs)
            finally:
                spent[_name] += time.process_time() - begin
                calls[_name] += 1

        setattr(holder, name, timed_call)
    begin = time.process_time()
    with contextlib.redirect_stdout(io.StringIO()):
        main(argv(GOAL[case]))
    model, gpus = Path(GOAL[case][0]).name, GOAL[case][1]
    print(f"{model} on {gpus:,} GPUs: imports {imports:.2f} s, run {time.process_time() - begin:.2f} s CPU")
    for name, seconds in spent.items():
        print(f"  {name:14s} {seconds:.3f} s in {calls[name]} calls", flush=True)
