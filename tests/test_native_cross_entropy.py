"""What a Megatron-LM file's cross entropy keeps of the logits: --cross-entropy-loss-fusion with
--cross-entropy-fusion-impl native (Megatron-LM's default impl) keeps the fp32 softmax, as the unfused loss does; te
reads the bf16 logits in place.

Source of truth: megatron-core 0.16.1 (the same at Megatron-LM d98e8a64) fusions/fused_cross_entropy.py
_VocabParallelCrossEntropy.forward: calculate_logits_max returns vocab_parallel_logits.float()
(tensor_parallel/cross_entropy.py), exp and the division run in place on it, and save_for_backward(exp_logits, ...)
keeps that fp32 [s, b, v/t] softmax; models/common/language_module/language_module.py compute_language_model_loss
picks it under cross_entropy_fusion_impl 'native'. Exact."""

import pytest

from symbolic.readers.megatron import read

BASE = (
    "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --vocab-size 128 --seq-length 64 --bf16 "
    "--micro-batch-size 1\n"
)


@pytest.mark.parametrize(
    "extra, logits",
    [
        ("", "fp32"),
        ("--cross-entropy-loss-fusion\n", "fp32"),  # the impl's default: native
        ("--cross-entropy-loss-fusion --cross-entropy-fusion-impl native\n", "fp32"),
        ("--cross-entropy-loss-fusion --cross-entropy-fusion-impl te\n", "bf16"),
    ],
)
def test_the_native_fusion_keeps_the_fp32_softmax(tmp_path, extra, logits):
    path = tmp_path / "args.txt"
    path.write_text(BASE + extra)
    assert read(path).training["logits"] == logits
