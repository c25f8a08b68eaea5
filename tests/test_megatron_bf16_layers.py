"""Megatron-LM's --first-last-layers-bf16 as the reader reads it (megatron-core 0.16.1 fp8_utils.py
is_first_last_bf16_layer, get_fp8_context): without FP8 every layer's context is null anyway, so nothing changes;
with FP8 the file is refused, naming each bf16 layer (global indices 0 .. n_start - 1 and L - n_end .. L - 1) with the
pipeline rank and virtual stage that holds it (Megatron-LM's interleaving: chunk j of rank r is virtual stage j p + r)."""

from __future__ import annotations


from conftest import megatron_estimate

BASE = (
    "--num-layers 8 --hidden-size 64 --num-attention-heads 4 --vocab-size 128 --max-position-embeddings 128 "
    "--seq-length 128 --micro-batch-size 1 --global-batch-size 8 --pipeline-model-parallel-size 2 "
    "--num-layers-per-virtual-pipeline-stage 2 --bf16 "
)
FP8 = "--fp8-format hybrid --fp8-recipe tensorwise "
BF16 = "--first-last-layers-bf16 --num-layers-at-end-in-bf16 2 "


def run(tmp_path, text: str) -> tuple[int, str, str]:
    return megatron_estimate(tmp_path, BASE + text, 2)


def test_with_fp8_each_bf16_layer_is_named_with_its_rank_and_virtual_stage(tmp_path):
    """Hand-placed (exact): 8 layers, p = 2, 2 a virtual stage: virtual stages 0 .. 3 hold layers 0-1, 2-3, 4-5,
    6-7 on ranks 0, 1, 0, 1; the bf16 layers are 0 (n_start 1, Megatron-LM's default) and 6, 7 (n_end 2)."""
    code, out, err = run(tmp_path, FP8 + BF16)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert (
        "--first-last-layers-bf16 (decoder layers 0, 6 and 7 of 8 (--num-layers-at-start-in-bf16 1, "
        "--num-layers-at-end-in-bf16 2; layer 0 on pipeline rank 0, virtual stage 0; layer 6 on pipeline rank 1, "
        "virtual stage 3; layer 7 on pipeline rank 1, virtual stage 3) built and run outside"
    ) in err


def test_without_fp8_the_flag_changes_nothing(tmp_path):
    with_flag, without = run(tmp_path, BF16), run(tmp_path, "")
    assert with_flag[0] == 0 and with_flag[1] == without[1]


def test_the_counts_without_the_flag_are_refused_as_contradicting(tmp_path):
    code, _, err = run(tmp_path, "--num-layers-at-start-in-bf16 2")
    assert code == 2 and "--num-layers-at-start-in-bf16 2 (without --first-last-layers-bf16 it does nothing" in err
