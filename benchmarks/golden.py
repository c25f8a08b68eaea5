"""The before/after proof of a behaviour-preserving change: estimate, plan --top and verify JSON of a fixed list.

    python benchmarks/golden.py write [DIR]   # run every case of grids/golden.toml, write DIR/<name>.json
    python benchmarks/golden.py check [DIR]   # run them again and compare with DIR, byte for byte
    python benchmarks/golden.py check --case NAME ...  # only the cases named (the suite checks one this way)

DIR defaults to records/golden. Each file is the command's --json stdout with the wall-clock keys (plan's seconds and
build_seconds, verify's compile_seconds) set to null, then its exit status: nothing else is changed. `check` prints
one line per case that differs and exits 1 if any does; the committed records/golden/ are the outputs at the commit
named in records/golden/COMMIT. The outputs hold no key a new default could add: a model's "shape" lists only the
fields that differ from ModelShape's defaults (symbolic/config/shape_json.py), formula's "switches" only those that
differ from Switches' defaults (Switches.shown), and "config" the recipe options only where they differ from
Training's (RECIPE_FIELDS); a new field, switch or option with a default rewrites no golden file.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CASES = REPO / "grids" / "golden.toml"
CLOCKS = ("seconds", "build_seconds", "compile_seconds")  # wall-clock readings: the only keys normalised


def run(args: str) -> str:
    """One case's output: its --json stdout with the clocks nulled, and its exit status."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "symbolic.cli", *shlex.split(args), "--json"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    try:
        out = json.loads(done.stdout)
        for key in CLOCKS:
            if key in out:
                out[key] = None
        text = json.dumps(out, indent=1)
    except json.JSONDecodeError:
        text = done.stdout + done.stderr.strip().splitlines()[-1:][0] if done.stderr.strip() else done.stdout
    return f"{text}\nexit {done.returncode}\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("write", "check"))
    parser.add_argument("dir", nargs="?", default=str(REPO / "records" / "golden"))
    parser.add_argument("--case", action="append", help="only this case (repeat for more; default every case)")
    opts = parser.parse_args()
    cases = tomllib.loads(CASES.read_text())["case"]
    unknown = sorted(set(opts.case or ()) - {case["name"] for case in cases})
    if unknown:
        parser.error(f"no case named {', '.join(unknown)} in {CASES.relative_to(REPO)}")
    cases = [case for case in cases if opts.case is None or case["name"] in opts.case]
    folder = Path(opts.dir)
    folder.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=2) as pool:
        outputs = list(pool.map(lambda case: run(case["args"]), cases))
    differ = 0
    for case, text in zip(cases, outputs):
        path = folder / f"{case['name']}.json"
        if opts.mode == "write":
            path.write_text(text)
        elif not path.exists() or path.read_text() != text:
            differ += 1
            print(f"differs: {case['name']}: {case['args']}")
    if opts.mode == "write":
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
        (folder / "COMMIT").write_text(head.stdout)
        print(f"wrote {len(cases)} cases to {folder}")
    else:
        print(f"{len(cases) - differ} of {len(cases)} cases equal byte for byte")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
