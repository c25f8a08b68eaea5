"""torchtitan with --compile and torchao's Float8 (--fp8 tensorwise|rowwise, --fp8-all-gather): what torch.compile's
partitioner keeps of a TransformerBlock, against the listing of a real run of the block (records/torch-saved-cpu.jsonl,
written by benchmarks/torch_saved.py with torch 2.13.0 and torchao 0.18.0 on the CPU; eager and compiled, per
checkpointing mode and Float8 recipe), and the flags through estimate, plan and the rule table.

Source of truth: that committed run (the saved tensors' bytes, each storage once, weights, the RoPE buffer and the
checkpoint's RNG state left out). Tolerance: exact bytes."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import sympy as sp

from symbolic.config import symbols as S
from symbolic.config.errors import ConfigError
from symbolic.config.shapes import PRESETS
from symbolic.config.switches import Switches
from symbolic.config.training import Training
from symbolic.estimator.estimate import estimate
from symbolic.plan.enumerate import Cluster
from symbolic.plan.search import search
from symbolic.recipes import widths
from symbolic.recipes.torchtitan.fsdp2 import layer_tensors

RUN = [
    json.loads(line)
    for line in (Path(__file__).parents[1] / "records" / "torch-saved-cpu.jsonl").read_text().splitlines()
]
LISTINGS = [row for row in RUN if "error" not in row and row["part"] == "block"]
HEADS = [row for row in RUN if row["part"] == "head"]
LLAMA3_8B = PRESETS["llama3-8b"]


@pytest.mark.parametrize(
    "listing",
    LISTINGS,
    ids=lambda x: f"{x['name']}-tp{x['tp']}-{x['float8']}-{x['mode']}-{'compiled' if x['compiled'] else 'eager'}",
)
def test_block_listing_equals_the_run(listing):
    """layer_tensors at the run's sizes (bf16, c = 1) sums to the per-token bytes one rank saved, eager and compiled,
    for none, selective (op) and full checkpointing, without Float8 and with torchao's two recipes (tp = 1), and
    with 9dec370's tensor-parallel plan (tp = 2), at small widths and at Llama 3 8B's."""
    z = listing["sizes"]
    at = {getattr(S, x): z[x] for x in ("b", "s", "h", "a", "k", "f")}
    at |= {S.dh: z["h"] // z["a"], S.t: listing["tp"], S.c: 1, S.B_a: 2}
    sw = Switches(
        recompute=listing["mode"],
        compiled=listing["compiled"],
        fp8=listing["float8"] != "none",
        fp8_rows=listing["float8"] == "rowwise",
    )
    symbolic = sp.Add(*(part.expr for part in layer_tensors(sw))).subs(at)
    # the activations, and the FP8 casts of the local weight shards (compiled Float8 at tp > 1 keeps them); not the
    # weights' amax and scales (a few bytes a linear) or the checkpoint's RNG state
    casts = [x for x in listing["tensors"] if not x["per_token"] and x["dtype"].startswith("float8")]
    assert symbolic == sum(x["bytes"] for x in listing["tensors"] if x["per_token"]) + sum(x["bytes"] for x in casts)
    assert not casts or (listing["compiled"] and listing["tp"] > 1 and listing["mode"] == "none")
    assert listing["torch"].startswith("2.13") and listing["device"] == "cpu" and listing["torchao"] == "0.18.0"


@pytest.mark.parametrize("listing", HEADS, ids=lambda x: f"{x['name']}-tp{x['tp']}")
def test_the_models_end_equals_the_run(listing):
    """output_tensors (the final norm, its output whole: gathered by the head's ColwiseParallel at tp > 1; the int64
    targets) and the loss's saved fp32 log-softmax [b s, v/t] (the first of `transient`'s three logit-sized tensors)
    sum to what the run saved on one rank, but the loss's scalar total weight."""
    from symbolic.recipes.torchtitan.fsdp2 import output_tensors

    z = listing["sizes"]
    at = {S.b: z["b"], S.s: z["s"], S.h: z["h"], S.v: z["v"], S.t: listing["tp"], S.c: 1, S.B_a: 2, S.B_l: 4}
    symbolic = (sp.Add(*(part.expr for part in output_tensors(Switches()))) + S.B_l * S.s * S.b * S.v / S.t).subs(at)
    assert symbolic == sum(x["bytes"] for x in listing["tensors"] if x["per_token"])
    assert [x["shape"] for x in listing["tensors"] if not x["per_token"]] == [[]]  # the scalar total weight


def test_what_the_run_could_not_list():
    """Of the 60 listings, those of full checkpointing compiled at tp = 2 failed (torch 2.13's AOTAutograd raises on
    the fake process group's DTensors); the recipe takes full checkpointing's block input there, as everywhere else."""
    failed = [(row["name"], row["tp"], row["float8"], row["mode"], row["compiled"]) for row in RUN if "error" in row]
    assert (
        failed
        == [(name, 2, float8, "full", True) for name in ("small", "llama3-8b") for float8 in ("none", "tensorwise")]
        and len(LISTINGS) + len(failed) == 60
        and len(HEADS) == 4
    )


def _torchtitan(**kw) -> Training:
    return Training(
        **{
            **widths("torchtitan"),
            "d": 8,
            "b": 2,
            "s": 8192,
            "gbs": 16,
            "zero": 3,
            "recompute": "selective",
            "compile": True,
            **kw,
        }
    )


def test_compiled_selective_by_hand():
    """The benchmark's compiled run (FSDP 8, local batch 2, seq 8192, op SAC): per block, the block input (2h), the
    mm outputs of wq (2 a dh), wv (2 k dh) and w1 (2f), the flash output (2 a dh) and its fp32 logsumexp (4a); w2's
    output, which eager SAC caches, is not saved. Nothing else in the stage moves."""
    compiled = estimate(LLAMA3_8B, _torchtitan(), "torchtitan").stages[0]["bytes"]
    eager = estimate(LLAMA3_8B, _torchtitan(compile=False), "torchtitan").stages[0]["bytes"]
    tokens = 2 * 8192
    per_token = 2 * 4096 + 2 * 4096 + 2 * 1024 + 2 * 4096 + 4 * 32 + 2 * 14336
    assert compiled["activations"] == 32 * tokens * per_token
    assert eager["activations"] - compiled["activations"] == 32 * tokens * 2 * 4096
    moved = {name for name in eager if eager[name] != compiled[name]}
    assert moved <= {"activations", "fragmentation", "total"}, moved


def test_compiled_without_checkpointing_by_hand():
    """No AC: the block input, two fp32 rsqrt (4 each), both norm outputs (2h each), Q and the repeated K, V and the
    flash output (2 a dh each) with its logsumexp (4a), wo's output (2h), w1, w3 and their product (2f each)."""
    only = estimate(LLAMA3_8B, _torchtitan(recompute="none"), "torchtitan").stages[0]["bytes"]
    per_token = 4 * 2 * 4096 + 2 * 4 + 4 * 2 * 4096 + 4 * 32 + 3 * 2 * 14336
    assert only["activations"] == 32 * 2 * 8192 * per_token


def test_float8_by_hand():
    """torchao Float8 (tensorwise): eager keeps what bf16 keeps (matmul_with_hp_or_float8_args saves its bf16
    arguments); compiled without AC the norms' outputs and the FFN product are recomputed with their FP8 casts: the
    block input, two rsqrt, Q, K, V, the flash output and logsumexp, wo's, w1's and w3's outputs. --fp8-all-gather:
    the two gathered blocks' linear weights at one byte (the root group and the norms stay bf16)."""
    tokens, layer = 2 * 8192, 2 * 4096 * 128 * (32 + 8) + 3 * 4096 * 14336 + 2 * 4096
    fp8 = dict(fp8="tensorwise")
    eager = estimate(LLAMA3_8B, _torchtitan(compile=False, **fp8), "torchtitan").stages[0]["bytes"]
    assert eager == estimate(LLAMA3_8B, _torchtitan(compile=False), "torchtitan").stages[0]["bytes"]
    only = estimate(LLAMA3_8B, _torchtitan(recompute="none", **fp8), "torchtitan").stages[0]["bytes"]
    assert only["activations"] == 32 * tokens * (2 * 2 * 4096 + 2 * 4 + 4 * 2 * 4096 + 4 * 32 + 2 * 2 * 14336)
    gathered = estimate(LLAMA3_8B, _torchtitan(fp8_all_gather=True, **fp8), "torchtitan").stages[0]["bytes"]
    ends = 2 * 128256 * 4096 + 4096
    assert gathered["params_gathered"] == 2 * (ends + 2 * layer) - 2 * (layer - 2 * 4096)
    rows = estimate(LLAMA3_8B, _torchtitan(fp8="rowwise"), "torchtitan").stages[0]["bytes"]
    plain = estimate(LLAMA3_8B, _torchtitan(), "torchtitan").stages[0]["bytes"]
    assert rows["activations"] - plain["activations"] == 32 * tokens * 2 * 4  # two fp32 row scales per token


@pytest.mark.parametrize(
    "recipe, kw, words",
    [
        ("paper", dict(fp8="rowwise"), "torchao's Float8 recipe"),
        ("torchtitan", dict(fp8="delayed"), "Transformer Engine"),
        ("deepspeed", dict(fp8="tensorwise"), "DeepSpeed's and jaxcheck's FP8"),
        ("paper", dict(fp8="tensorwise", fp8_all_gather=True), "--recipe torchtitan --fp8 tensorwise"),
    ],
)
def test_each_recipe_refuses_the_fp8_it_lacks(recipe, kw, words):
    training = Training(**{**widths(recipe), "zero": 3, "recompute": "full", **kw})
    with pytest.raises(ConfigError, match=words):
        estimate(LLAMA3_8B, training, recipe)


def test_compiled_with_tensor_parallelism_by_hand():
    """tp = 2, no AC: the norms' outputs are saved whole (all-gathered over the sequence), everything else over t."""
    only = estimate(LLAMA3_8B, _torchtitan(recompute="none", t=2, d=4), "torchtitan").stages[0]["bytes"]
    per_token = 2 * 2 * 4096 + (2 * 2 * 4096 + 2 * 4 + 4 * 2 * 4096 + 4 * 32 + 3 * 2 * 14336) // 2
    assert only["activations"] == 32 * 2 * 8192 * per_token


def test_compile_is_refused_where_it_is_not_listed():
    with pytest.raises(ConfigError, match="scale per tensor"):
        estimate(LLAMA3_8B, _torchtitan(t=2, d=4, fp8="rowwise"), "torchtitan")
    with pytest.raises(ConfigError, match="--recipe torchtitan"):
        estimate(LLAMA3_8B, Training(compile=True))
    with pytest.raises(ConfigError, match="true or false"):
        Training(compile="yes")
    with pytest.raises(ConfigError, match="tensorwise only"):
        Training(fp8="rowwise", fp8_all_gather=True)


def test_plan_rows_with_compile_equal_estimate():
    """plan --recipe torchtitan --compile --fp8 tensorwise --fp8-all-gather: rows at every tp, each row's peak what
    estimate gives for it."""
    cluster = Cluster(PRESETS["tiny"], gpus=8, s=256, gbs=16, compile=True, fp8="tensorwise", fp8_all_gather=True)
    plan = search(cluster, limit=2**40, profile="torchtitan")
    assert plan.feasible > 0 and len(set(plan.rows["t"][plan.order].tolist())) > 1
    tp2 = next(int(i) for i in plan.order if plan.rows["t"][i] > 1)
    for i in [*plan.order[:2], tp2]:
        row = plan.config(int(i))
        assert row["config"]["compile"] is True and row["config"]["fp8_all_gather"] is True
        assert estimate(PRESETS["tiny"], plan.training(int(i)), "torchtitan").peak == row["peak_bytes"]


def test_cli_compile_flag():
    run = lambda *argv: subprocess.run(
        [sys.executable, "-m", "symbolic.cli", *argv],  # noqa: E731
        capture_output=True,
        text=True,
        timeout=120,
    )
    done = run(
        "estimate",
        "--recipe",
        "torchtitan",
        "--model",
        "tiny",
        "--dp",
        "4",
        "--seq",
        "256",
        "--compile",
        "--fp8",
        "tensorwise",
        "--fp8-all-gather",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["config"]["compile"] is True
    done = run("estimate", "--model", "tiny", "--compile")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and "--recipe torchtitan" in done.stderr
