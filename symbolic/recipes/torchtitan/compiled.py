"""What one torch.compile'd TransformerBlock keeps for backward: the forward outputs AOTAutograd's min-cut partitioner
saves, as benchmarks/torch_saved.py lists them (records/torch-saved-cpu.jsonl, torch 2.13.0, inductor on the CPU;
torchtitan compiles each TransformerBlock after its checkpoint wrapper, apply_compile at 9dec370), at tp = 1 and 2
(9dec370's apply_tp plan on a fake process group), with and without torchao's Float8 (rowwise at tp = 1 only)."""

from __future__ import annotations

from ...components.base import FP32, Component
from ...components.weights import mixer_params, mlp_params
from ...config.switches import Switches
from ...config.symbols import B_a, a, dh, f, h
from .tensors import block_input, flash_attention, fp8_tp, sac_attention, tensor_parallel, token_tensor


def compiled_tensors(sw: Switches) -> list[Component]:
    """Without checkpointing: the block's input and each norm's fp32 rsqrt stand in for the norms' fp32 copies (their
    backward recomputes x.float() from the bf16 input), wo's output stands in for the residual after attention, and
    SiLU's output is recomputed from w1's. With torchao's Float8 (--fp8 tensorwise or rowwise) the norms' outputs and
    the FFN product are recomputed too (with their FP8 casts), and only the weights' amax and scales, a few bytes per
    linear, are kept beside them (not counted); at tp > 1 torchao's Float8 TP styles make the casts before the
    gathers and matmuls, and those casts, with the local weight shards' FP8 casts, are kept instead."""
    if sw.fp8:
        q8 = fp8_tp(sw)  # Float8's TP styles: the FP8 casts gathered or made before a matmul are saved instead
        return [
            block_input(),
            token_tensor("attention_norm_rsqrt", 1, FP32, True, "fp32 rsqrt of the mean square, [b, s, 1]"),
            token_tensor("attention_norm_fp8", h, q8, False, "(tp > 1) the norm output's FP8 cast, all-gathered"),
            *flash_attention(),
            token_tensor("wo_input_fp8", a * dh, q8, True, "(tp > 1) wo's FP8 cast of its input"),
            token_tensor("wo_out", h, B_a, True, "wo's output (the residual after attention is recomputed from it)"),
            token_tensor("ffn_norm_rsqrt", 1, FP32, True, "fp32 rsqrt of the ffn norm"),
            token_tensor("ffn_norm_fp8", h, q8, False, "(tp > 1) the ffn norm output's FP8 cast, all-gathered"),
            token_tensor("w1_out", f, B_a, True, "w1's _scaled_mm output"),
            token_tensor("w3_out", f, B_a, True, "w3's _scaled_mm output (the product, w2's input, is recomputed)"),
            token_tensor("ffn_product_fp8", f, q8, True, "(tp > 1) the product's FP8 cast, w2's input"),
            Component(
                "weight_fp8_casts",
                q8 * (mixer_params(sw) + mlp_params(sw)),
                "(tp > 1) the FP8 casts of the block's local weight shards, one byte a parameter, kept for "
                "backward each micro batch",
            ),
        ]
    return [
        block_input(),
        token_tensor("attention_norm_rsqrt", 1, FP32, True, "fp32 rsqrt of the mean square, [b, s, 1]"),
        token_tensor(
            "attention_norm_out",
            h,
            B_a,
            False,
            "bf16 norm output, the input of wq, wk, wv (with tp > 1 "
            "all-gathered over the sequence by PrepareModuleInput)",
        ),
        *flash_attention(),
        token_tensor(
            "wo_out",
            h,
            B_a,
            True,
            "wo's output (with tp > 1 reduce-scattered to Shard(1)): the residual "
            "after attention is recomputed as x + wo_out",
        ),
        token_tensor("ffn_norm_rsqrt", 1, FP32, True, "fp32 rsqrt of the ffn norm"),
        token_tensor(
            "ffn_norm_out",
            h,
            B_a,
            False,
            "bf16 ffn norm output, the input of w1 and w3 (with tp > 1 all-gathered over the sequence)",
        ),
        token_tensor("w1_out", f, B_a, True, "w1 output (SiLU's output is recomputed from it)"),
        token_tensor("w3_out", f, B_a, True, "w3 output"),
        token_tensor("ffn_product", f, B_a, True, "SiLU(w1 x) * w3 x, w2's input"),
    ]


def compiled_selective(sw: Switches) -> list[Component]:
    """Op-level selective checkpointing compiled: the save list's outputs that backward reads (the partitioner drops
    w2's, which eager SAC caches though no backward reads it) and the block's input; with torchao's rowwise Float8,
    the per-row fp32 scales of the two norm outputs' FP8 casts (the inputs of wq/wk/wv and of w1/w3)."""
    rows = (
        [
            token_tensor(f"{name}_row_scale", 1, FP32, True, f"fp32 scale per row of the {name} output's FP8 cast")
            for name in ("attention_norm", "ffn_norm")
        ]
        if sw.fp8_rows
        else []
    )
    tp = tensor_parallel()
    return [
        *rows,
        block_input(),
        *sac_attention(True),
        token_tensor("w1_out", f, B_a, True, "aten.mm output of w1, the gate before SiLU"),
        token_tensor(
            "wo_reduce_scatter",
            h,
            tp * B_a,
            True,
            "reduce_scatter_tensor output of the row-parallel wo "
            "(t > 1; w2's, which eager SAC caches, is not read by backward)",
        ),
    ]
