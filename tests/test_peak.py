"""The fit verdict judges the peak = max(profile total, every exact stage's total), never the formula alone.

Source of truth: the exact "only" stage holds what Megatron-LM allocates at p = 1: the paper profile's total now
counts the LM head there too (equal weights, exactly), and the stage adds what the closed form leaves out (the bf16
logits beside their fp32 copy, the dummy weight gradients), so at p = 1 the stage decides. Tolerances: exact on integer bytes; GiB figures in the CLI are rounded to 0.01.
"""

import json
import subprocess
import sys

import numpy as np

from symbolic.config.shapes import PRESETS
from symbolic.config.training import Training
from symbolic.estimator.estimate import PEAK_FROM, estimate, peak_of

GiB = 2**30
P1 = Training(s=4096, b=1, gbs=8)  # llama3-8b on one GPU: p = 1, the "only" stage
P1_ARGV = ["--model", "llama3-8b", "--seq", "4096", "--mbs", "1", "--gbs", "8", "--gpu-mem", "208GiB"]


def mem4d(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "symbolic.cli", *argv], capture_output=True, text=True, timeout=120)


def test_p1_peak_is_the_exact_only_stage():
    shape = PRESETS["llama3-8b"]
    result = estimate(shape, P1)
    only = result.stages[0]["bytes"]
    assert result.stages[0]["stage"] == "only"
    assert only["weights"] == result.bytes["weights"]  # one answer for one GPU: the head counted in both
    assert result.peak == only["total"] > result.bytes["total"] and result.peak_from == "only"
    assert round(result.bytes["total"] / GiB, 1) == 165.6 and round(result.peak / GiB, 1) == 168.0


def test_verdict_uses_the_peak():
    """166.4 GiB limit (0.8 x 208 GiB) lies between the total (165.6) and the only stage (168.0: the bf16 logits
    beside their fp32 copy and the dummy weight gradients, which the closed form omits): does not fit."""
    result = estimate(PRESETS["llama3-8b"], P1)
    assert result.bytes["total"] < 0.8 * 208 * GiB <= result.peak
    report = result.as_json(208 * GiB, 0.8)
    assert report["fits"] is False and report["peak_bytes"] == result.peak and report["peak_from"] == "only"
    assert report["bytes"]["total"] == result.bytes["total"]  # "total" stays the formula
    assert result.as_json(result.peak + 1, 1.0)["fits"] is True and result.as_json(result.peak, 1.0)["fits"] is False


def test_pipeline_parallel_peak_is_the_formula_total():
    """llama3-70b d=8 t=8 p=4 c=2: the paper's total (first stage + output layer) exceeds every exact stage."""
    result = estimate(PRESETS["llama3-70b"], Training(d=8, t=8, p=4, c=2, s=8192, b=1, gbs=1024))
    assert result.peak == result.bytes["total"] and result.peak_from == "total"


def test_vectorized_peak_masks_stages_that_do_not_exist():
    """peak_of ignores "only" when p > 1 and "middle" when p = 2, and prefers "total" on ties."""
    total = np.array([10.0, 10.0, 10.0, 10.0])
    stages = {
        "first": np.array([5, 11, 5, 10.0]),
        "middle": np.array([5, 12, 13, 5.0]),
        "last": np.array([5, 5, 5, 5.0]),
        "only": np.array([20, 30, 30, 30.0]),
    }
    peak, which = peak_of(total, stages, np.array([1, 2, 3, 4]))
    assert peak.tolist() == [20, 11, 13, 10] and [PEAK_FROM[i] for i in which] == ["only", "first", "middle", "total"]


def test_cli_json_and_table_name_the_figure_that_decided():
    done = mem4d("estimate", *P1_ARGV, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["fits"] is False and report["peak_from"] == "only"
    assert report["peak_bytes"] == max(stage["bytes"]["total"] for stage in report["stages"]) > report["bytes"]["total"]
    table = mem4d("estimate", *P1_ARGV)
    assert table.returncode == 0, table.stderr
    text = " ".join(table.stdout.split())
    assert "DOES NOT FIT: peak 167.96 GiB" in text and "the peak is the exact only stage" in text
    assert "peak (verdict)" in text
