"""notebooks/sizing.ipynb runs top to bottom and every `match:` check in it holds.

Source of truth: the notebook's own checks (symbolic counts vs ModelShape.param_count, the flax model's leaves, the
published closed form, XLA's argument bytes), each an exact comparison that the notebook asserts. The code cells are
concatenated in order and run in a fresh interpreter (the first cell sets 8 simulated CPU devices before jax starts;
pytest's conftest has already started jax with 16 in this process). No nbformat/nbclient: the .ipynb is plain JSON.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "sizing.ipynb"


def code_cells() -> list[str]:
    nb = json.loads(NOTEBOOK.read_text())
    assert nb["nbformat"] == 4
    cells = [cell for cell in nb["cells"] if cell["cell_type"] == "code"]
    for cell in cells:  # stored outputs, if any, carry no error tracebacks
        assert all(out["output_type"] != "error" for out in cell.get("outputs", []))
    return ["".join(cell["source"]) for cell in cells]


def test_notebook_is_valid_nbformat4():
    """Every cell has the fields nbformat 4 requires; code cells are non-empty."""
    nb = json.loads(NOTEBOOK.read_text())
    assert nb["nbformat"] == 4 and isinstance(nb["metadata"], dict)
    for cell in nb["cells"]:
        assert cell["cell_type"] in ("markdown", "code") and isinstance(cell["source"], list)
        if cell["cell_type"] == "code":
            assert "outputs" in cell and "execution_count" in cell
    assert len(code_cells()) >= 8


def test_notebook_runs_and_every_check_matches(tmp_path):
    """Exit 0 and no `match: False`; at least the 30 checks the notebook makes today print `match: True`."""
    script = tmp_path / "sizing.py"
    script.write_text("\n\n".join(code_cells()))
    env = {**os.environ, "MPLBACKEND": "Agg", "MEM4D_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("XLA_FLAGS", None)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "match: False" not in proc.stdout
    assert proc.stdout.count("match: True") >= 30, proc.stdout
