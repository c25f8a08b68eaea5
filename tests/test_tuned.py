"""benchmarks/tuned.py: NVIDIA's tuned Megatron-Bridge runs (../shared/data/throughput/ROWS.tsv) as fractions of
their card.

Source of truth: ROWS.tsv (every row accounted for: stated or refused with its reason), CARDS.tsv's nvidia-smi MiB
(H100 81559 MiB), and that the runs ran: no stated row may be predicted above 100 % of its card. Tolerance: exact."""
import csv
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ROWS = ROOT.parent / "shared" / "data" / "throughput" / "ROWS.tsv"
pytestmark = pytest.mark.skipif(not ROWS.exists(), reason="../shared/data/throughput is absent")


def _module():
    spec = importlib.util.spec_from_file_location("tuned", ROOT / "benchmarks" / "tuned.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_row_stated_or_refused_and_none_above_the_card():
    tuned = _module()
    rows = list(csv.DictReader(ROWS.open(), delimiter="\t"))
    stated, skipped = tuned.evaluate(rows)
    assert len(stated) + len(skipped) == len(rows)
    assert all(r["reason"].strip() for r in skipped)
    assert stated, "no row stated: the table says nothing"
    assert all(r["fraction"] <= 1.0 for r in stated), [(r["model"], r["gpu"], r["fraction"]) for r in stated]
    assert tuned.card_bytes("H100") == 81559 * 2**20


def test_llama3_70b_h100_uses_the_recipes_fused_swiglu_and_fp8_weights():
    tuned = _module()
    row = next(r for r in csv.DictReader(ROWS.open(), delimiter="\t")
               if (r["release"], r["gpu"], r["model"]) == ("26.04.01", "H100", "LLAMA3_70B"))
    _, training = tuned.job(row)
    assert training.swiglu_fusion and training.fp8 == "tensorwise" and training.fp8_param_gather
    assert (training.t, training.p, training.vpp, training.d, training.sp) == (4, 8, 5, 2, True)
