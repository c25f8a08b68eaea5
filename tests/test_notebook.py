"""Every notebook runs top to bottom, fresh, every `match:` check in it holds, and its committed outputs are what a
fresh run prints.

Source of truth: the notebooks' own checks (symbolic counts vs ModelShape.param_count and the flax model's leaves,
the published closed form, XLA's argument bytes, the plan's rows vs `estimate`, the proxy's formula, the residuals
jax stacks), each an exact comparison that the notebook asserts. The code cells are concatenated in order and run in
a fresh interpreter (pytest's conftest has already started jax in this process). No nbformat/nbclient: the .ipynb
is plain JSON. After a change that moves a checked number, re-execute: `python notebooks/execute.py`.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
MIN_CHECKS = {"sizing": 30, "plan": 15, "crosscheck": 20}  # `match: True` lines each notebook prints today


def _cells(name: str) -> list[dict]:
    nb = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text())
    assert nb["nbformat"] == 4 and isinstance(nb["metadata"], dict)
    return nb["cells"]


def code_cells(name: str) -> list[str]:
    return ["".join(cell["source"]) for cell in _cells(name) if cell["cell_type"] == "code"]


def committed_checks(name: str) -> list[str]:
    """The `match:` lines of the stored outputs, in order."""
    lines = []
    for cell in _cells(name):
        for out in cell.get("outputs", []) if cell["cell_type"] == "code" else []:
            lines += [line for line in "".join(out.get("text", "")).splitlines() if "match:" in line]
    return lines


NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
# XLA's temp bytes move by a few KiB with the checkout's path (measured: 3,840 and 4,096 bytes between /work/main and
# /check/work/main; the source paths in the HLO's metadata), so a committed number matches a fresh one to 64 KiB,
# or to 1e-6 of itself for the floats the plan notebook prints with six digits
SLACK_BYTES, SLACK_REL = 65536, 1e-6


def same_check(fresh: str, committed: str) -> bool:
    """The same check, verdict and wording, with numbers equal up to SLACK_BYTES / SLACK_REL."""
    if NUMBER.sub("#", fresh) != NUMBER.sub("#", committed):
        return False
    return all(
        abs(float(a) - float(b)) <= max(SLACK_BYTES if "." not in a + b else 0, SLACK_REL * abs(float(b)))
        for a, b in zip(NUMBER.findall(fresh), NUMBER.findall(committed))
    )


def test_same_check_tolerates_path_noise_only():
    """Source of truth: the CI failure this tolerance answers (a 3,840-byte heap difference across checkouts)."""
    line = "XLA:GPU (h100-80gb): the dump's heap == XLA's temp_bytes: {} vs {}  match: True"
    assert same_check(line.format(9152580040, 9152580040), line.format(9152576200, 9152576200))
    assert not same_check(line.format(9152580040, 9152580040), line.format(9152480040, 9152480040))
    assert not same_check(line.format(1, 1), line.format(1, 1).replace("True", "False"))
    assert not same_check("score: 0.882512 vs 0.882512  match: True", "score: 0.882513 vs 0.882513  match: True")


def test_every_notebook_is_tested():
    assert sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb")) == sorted(MIN_CHECKS)


@pytest.mark.parametrize("name", sorted(MIN_CHECKS))
def test_notebook_is_valid_nbformat4_with_outputs(name):
    """Every cell has the fields nbformat 4 requires; every code cell ran (outputs committed), none with an error."""
    for cell in _cells(name):
        assert cell["cell_type"] in ("markdown", "code") and isinstance(cell["source"], list)
        if cell["cell_type"] == "code":
            assert "outputs" in cell and isinstance(cell["execution_count"], int), cell["source"][:2]
            assert all(out["output_type"] != "error" for out in cell["outputs"])
    assert len(committed_checks(name)) >= MIN_CHECKS[name]


@pytest.mark.parametrize("name", ["plan", "sizing"])  # crosscheck: tests/test_notebook_crosscheck.py
def test_notebook_runs_fresh_and_reproduces_its_checks(name, tmp_path):
    """Exit 0, no `match: False`, and the `match:` lines a fresh run prints are the committed ones (numbers to SLACK_BYTES)."""
    runs_fresh_and_reproduces_its_checks(name, tmp_path)


def runs_fresh_and_reproduces_its_checks(name: str, tmp_path: Path) -> None:
    """Run the notebook's code cells in a fresh interpreter and compare its `match:` lines with the committed ones."""
    script = tmp_path / f"{name}.py"
    script.write_text("\n\n".join(code_cells(name)))
    # a fresh interpreter on the session's estimator cache (keyed by a hash of the symbolic sources: what it holds is
    # what a cold derivation would make; tests/test_estimator.py checks the cold path), and the session's XLA_FLAGS
    # (conftest.QUICK_CODEGEN: code generation at its quickest; every `match:` line of the three notebooks came out the
    # same with and without them, 2026-12-07)
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=400, cwd=NOTEBOOKS
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    fresh = [line for line in proc.stdout.splitlines() if "match:" in line]
    assert not [line for line in fresh if "match: False" in line]
    assert len(fresh) >= MIN_CHECKS[name], proc.stdout
    committed = committed_checks(name)
    stale = [(f, c) for f, c in zip(fresh, committed) if not same_check(f, c)]
    assert len(fresh) == len(committed) and not stale, (
        f"outputs out of date (python notebooks/execute.py notebooks/{name}.ipynb): {stale[:3]}"
    )
