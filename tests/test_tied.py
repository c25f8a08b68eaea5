"""Tied embeddings: one v x h matrix at p = 1; a first-stage embedding plus a last-stage LM-head copy at p > 1.

Source of truth: ModelShape.param_count (exact, checked against published counts), which counts the LM head only
when untied; Megatron-LM keeps the separate last-stage copy when p > 1 (tie_embeddings_and_output_weights).
Tolerance: exact integer bytes (t = 1, so no replicated norm vectors blur the count).
"""

import dataclasses

import pytest

from model_files import LLAMA, cli_json, write

from symbolic.config.shapes import PRESETS
from symbolic.config.training import Training
from symbolic.estimator.estimate import estimate
from symbolic.plan.enumerate import Cluster
from symbolic.plan.search import search

TINY = PRESETS["tiny"]
TIED = dataclasses.replace(TINY, name="tiny-tied", tied=True)


def stage_bytes(shape, training) -> dict[str, dict[str, int]]:
    return {stage["stage"]: stage["bytes"] for stage in estimate(shape, training).stages}


@pytest.mark.parametrize("shape", [TINY, TIED])
def test_p1_stage_holds_every_parameter_once(shape):
    only = stage_bytes(shape, Training(s=256, gbs=8))["only"]
    assert only["weights"] == 2 * shape.param_count and only["gradients"] == 4 * shape.param_count


@pytest.mark.parametrize("shape, copies", [(TINY, 0), (TIED, 1)])
def test_p2_tied_keeps_a_last_stage_copy(shape, copies):
    """first + last weights = every parameter, plus one v x h copy when tied (Megatron-LM with p > 1)."""
    stages = stage_bytes(shape, Training(p=2, s=256, gbs=8))
    params = (stages["first"]["weights"] + stages["last"]["weights"]) // 2
    assert params == shape.param_count + copies * shape.h * shape.v


def test_tied_changes_neither_the_formula_total_nor_p_gt_1():
    """The paper's closed form has no tied switch at p > 1 (stages the same tied or not); at p = 1 its total holds
    what the only stage holds, one v x h matrix when tied, two when not."""
    for training in (Training(s=256, gbs=8), Training(p=2, t=2, s=256, gbs=8)):
        untied, tied = estimate(TINY, training), estimate(TIED, training)
        if training.p > 1:
            assert tied.bytes == untied.bytes and tied.stages == untied.stages
        else:
            assert untied.bytes["weights"] - tied.bytes["weights"] == 2 * TINY.h * TINY.v
    p1_untied, p1_tied = (stage_bytes(x, Training(s=256, gbs=8))["only"]["weights"] for x in (TINY, TIED))
    assert p1_untied - p1_tied == 2 * TINY.h * TINY.v


def test_plan_and_estimate_agree_on_a_tied_model():
    """Plan's vectorized peak of a tied model equals estimate's for every p = 1 row (where tied matters), at ZeRO 0
    and 3 (the states whole and every state sharded; each stage is one estimator per recompute choice to derive)."""
    cluster = Cluster(TIED, gpus=4, s=256, gbs=8)
    plan = search(cluster, limit=2**31, zero=(0, 3))
    rows = [i for i in range(plan.evaluated) if plan.rows["p"][i] == 1]
    assert rows
    for i in rows:
        one = estimate(TIED, plan.training(i))
        assert plan.config(i)["peak_bytes"] == one.peak and plan.config(i)["peak_from"] == one.peak_from


def test_cli_reads_tie_word_embeddings(tmp_path):
    path = write(tmp_path, LLAMA | {"tie_word_embeddings": True})
    only = cli_json("estimate", "--model", str(path), "--seq", "256", "--gbs", "8")["stages"][0]["bytes"]
    assert only["weights"] == 2 * TIED.param_count


# XLA:GPU's (H100, deviceless) at t = 2: tests/test_jax_gpt.py's tied GPT model, t2 ZeRO-1 (one compile for both)
@pytest.mark.parametrize(
    "train, target", [(Training(p=2, s=32, gbs=4, recompute="full", zero=0), "cpu")], ids=["p2-cpu"]
)
def test_jax_profile_arguments_exact_for_a_tied_model_on_both_targets(train, target):
    """The `jax` profile's arguments (params, AdamW, batch) and output of a tied model equal XLA's bytes exactly on
    XLA:CPU here, and on XLA:GPU in tests/test_jax_gpt.py: the LM head is the embedding, no leaf of its own."""
    from conftest import skip_if_not_enough_devices
    from jaxcheck.crosscheck.verify import verify
    from jaxcheck.targets import load

    skip_if_not_enough_devices(train.world)
    shape = dataclasses.replace(PRESETS["tiny"], name="tiny-tied", tied=True, L=4)
    rows = {row["name"]: row for row in verify(shape, train, target=load(target))["components"]}
    for name in ("params", "optimizer", "batch", "argument", "output - alias"):
        assert rows[name]["symbolic"] == rows[name]["xla"], name
