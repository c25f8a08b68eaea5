"""benchmarks/mfu.py: the step-time model beside published runs outside NVIDIA's tuned tables. The FLOP counts it
converts TFLOP/s figures with are the sources' own (checked against a source that publishes both a step time and an
MFU); the committed table is what the script prints now; docs/time.md shows the committed table.

Sources of truth: Korthikanti et al. 2022 Tables 3 and 5 as ../shared/data/hardware/MFU.md gives them (step time and
MFU of one run: the count must turn one into the other within 0.3 points of MFU, the published figures' rounding);
records/published/mfu.tsv (exact to its printed precision)."""

import csv
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import mfu  # noqa: E402  (benchmarks/mfu.py)

TABLE = ROOT / "records" / "published" / "mfu.tsv"
RUNS = {run["id"]: run for run in tomllib.loads(mfu.RUNS.read_text())["run"]}


@pytest.mark.parametrize("run_id,published_mfu", [("K22-175B", 0.514), ("K22-1T", 0.563), ("K22-530B", 0.560)])
def test_korthikanti_count_turns_the_step_time_into_the_published_mfu(run_id, published_mfu):
    run = RUNS[run_id]
    shape, training = mfu.job(run)
    tokens = run["gbs"] * run["s"]
    flops = mfu.flops_per_token("korthikanti", shape, run["s"]) * tokens / (run["published"] * training.world)
    assert flops / 312e12 == pytest.approx(published_mfu, abs=0.003)  # A100's dense FP16/BF16 peak, 312 TFLOP/s


def test_palm_count_is_six_n_plus_attention():
    shape = mfu.PRESETS["llama3.1-405b"]
    assert mfu.flops_per_token("palm", shape, 8192) == 6 * shape.param_count + 12 * 126 * 16384 * 8192


def _committed() -> list[dict]:
    lines = [line for line in TABLE.read_text().splitlines() if not line.startswith("#")]
    return list(csv.DictReader(lines, delimiter="\t"))


def test_the_committed_table_is_what_mfu_py_prints():
    now = mfu.evaluate(list(RUNS.values()))
    assert [{k: str(r.get(k, "")) for k in mfu.FIELDS} for r in now] == _committed()


def test_time_md_shows_the_committed_table():
    text = (ROOT / "docs" / "time.md").read_text()
    for row in _committed():
        if row["reason"]:
            assert f"| {row['id']} |" in text and row["reason"] in text, row["id"]
        else:
            shown = f"| {row['id']} | {row['system']} | {row['config']} | {row['unit']} | {row['published']} | "
            assert shown + f"{row['predicted']} | {float(row['error_pct']):+.1f} % |" in text, row["id"]
