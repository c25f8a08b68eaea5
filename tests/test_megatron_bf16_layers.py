"""Megatron-LM's --first-last-layers-bf16 as the reader reads it (megatron-core 0.16.1 fp8_utils.py
is_first_last_bf16_layer, get_fp8_context): without FP8 every layer's context is null anyway, so nothing changes;
with FP8 each pipeline rank counts the bf16 layers it holds (global indices 0 .. n_start - 1 and L - n_end .. L - 1;
Megatron-LM's interleaving: chunk j of rank r is virtual stage j p + r), which keep bf16 saved GEMM inputs and no FP8
weight copies (components.bf16_layers)."""

from __future__ import annotations

import json

from conftest import megatron_estimate
from megatron_args import small_gpt

BASE = small_gpt(
    "--max-position-embeddings 128 --micro-batch-size 1 --global-batch-size 8 --pipeline-model-parallel-size 2",
    "--num-layers-per-virtual-pipeline-stage 2 --bf16",
    layers=8,
    seq=128,
)
FP8 = "--fp8-format hybrid --fp8-recipe tensorwise "
BF16 = "--first-last-layers-bf16 --num-layers-at-end-in-bf16 2 "


def run(tmp_path, text: str) -> tuple[int, str, str]:
    return megatron_estimate(tmp_path, BASE + text, 2)


def _stages(out: str) -> list[dict]:
    return json.loads(out)["stages"]


def test_with_fp8_each_rank_counts_its_bf16_layers_which_save_bf16_inputs_and_cache_no_fp8_weights(tmp_path):
    """Hand-placed (exact): 8 layers, p = 2, 2 a virtual stage: virtual stages 0 .. 3 hold layers 0-1, 2-3, 4-5,
    6-7 on ranks 0, 1, 0, 1; the bf16 layers are 0 (n_start 1, Megatron-LM's default) and 6, 7 (n_end 2): rank 0
    holds one, rank 1 two. Against the same file without the flag (exact, bytes): a bf16 layer keeps its QKV, fc1
    and fc2 inputs in bf16 (+1 byte an element under tensorwise FP8: 2sbh + sbf with s = 128, b = 1, h = 64,
    f = 4h = 256 (GeLU), t = 1) and no FP8 copy of the attention output (-sbh), per micro batch in flight; Transformer
    Engine caches no FP8 copy of its weights (-2 bytes a weight: 4h^2 + 2hf, no biases under --disable-bias-linear,
    and the two LayerNorms' 4h, which the cache counts as its upper bound, components.fp8.fp8_weight_cache)."""
    base = BASE + "--disable-bias-linear --no-bias-gelu-fusion "
    code, out, err = megatron_estimate(tmp_path, base + FP8 + BF16, 2)
    assert code == 0, err
    assert json.loads(out)["config"]["num_layers_at_end_in_bf16"] == 2
    mine, plain = _stages(out), _stages(megatron_estimate(tmp_path, base + FP8, 2)[1])
    assert [(x["rank"], x["bf16_layers"]) for x in mine] == [(0, 1), (1, 2)]
    s, h, f = 128, 64, 256
    per_layer = 2 * s * h + s * f - s * h
    for x, y in zip(mine, plain):
        n, micro = x["bf16_layers"], x["in_flight"]
        assert x["bytes"]["activations"] - y["bytes"]["activations"] == round(n * micro * per_layer), x
        assert y["bytes"]["fp8_weight_cache"] - x["bytes"]["fp8_weight_cache"] == n * 2 * (
            4 * h * h + 2 * h * f + 4 * h
        )


def test_without_fp8_the_flag_changes_nothing(tmp_path):
    with_flag, without = run(tmp_path, BF16), run(tmp_path, "")
    assert with_flag[0] == 0 and with_flag[1] == without[1]


def test_the_counts_without_the_flag_are_refused_as_contradicting(tmp_path):
    code, _, err = run(tmp_path, "--num-layers-at-start-in-bf16 2")
    assert code == 2 and "--num-layers-at-start-in-bf16 2 (without --first-last-layers-bf16 it does nothing" in err
