"""Precision and optimizer choices of a training job and the byte widths they give (B_w, B_g, B_o, B_a, B_l); no sympy.

Each choice is what a trainer documents: Megatron-LM's bf16 mixed precision (bf16 weights, fp32 main gradients, fp32
master weights and Adam moments: Fujii et al. 2024), torch.optim's AdamW and SGD state, bitsandbytes' 8-bit AdamW."""

from __future__ import annotations

from .dtypes import DTYPES as _WIDTHS

DTYPES = {name: _WIDTHS[name] for name in ("fp32", "bf16", "fp16", "fp8")}  # the precision names a choice takes
GRAD_DTYPES = ("fp32", "bf16", "fp16")
MOMENT_DTYPES = ("fp32", "bf16", "fp16")
# optimizer -> (moments per parameter, bytes of per-block statistics per parameter): AdamW exp_avg + exp_avg_sq
# (torch.optim.AdamW, apex/TE FusedAdam); SGD one momentum_buffer (torch.optim.SGD, momentum > 0); bitsandbytes
# AdamW8bit two uint8 states (1 byte each, whatever --moment-dtype) plus one fp32 absmax per block of 256 elements for
# each (bitsandbytes block-wise quantization, Dettmers et al. 2022, arXiv 2110.02861); Muon one momentum_buffer on its
# 2-D layer weights, the rest under AdamW (megatron-core 0.16.1 optimizer/muon.py: B_o is the Muon weights' width,
# components.optimizer charges the others ADAM_BYTES)
OPTIMIZERS = {"adamw": (2, 0.0), "sgd": (1, 0.0), "adamw8bit": (2, 2 * _WIDTHS["fp32"] / 256), "muon": (1, 0.0)}
# Muon's AdamW part (embeddings, LM head, norms): fp32 master weight + fp32 exp_avg, exp_avg_sq (megatron-core 0.16.1
# optimizer/muon.py adam_init_state_fn, under Float16OptimizerWithFloat16Params; no precision-aware optimizer there)
ADAM_BYTES = 3 * _WIDTHS["fp32"]
# what the loss keeps of the [b, s, v] logits for its backward, bytes per element: fp32 (Megatron-LM's vocab-parallel
# cross entropy upcasts them, its native fusion too), bf16 (a fused cross entropy that reads the bf16 logits,
# Megatron-LM --cross-entropy-fusion-impl te), none (a chunked or fused linear + cross entropy that never holds the whole logits:
# Liger's FusedLinearCrossEntropy, Cut Cross-Entropy)
LOGITS = {"fp32": _WIDTHS["fp32"], "bf16": _WIDTHS["bf16"], "none": 0}
FIELDS = ("weight_dtype", "grad_dtype", "master_weights", "optimizer", "moment_dtype", "act_dtype", "logits")
# Megatron-LM bf16 mixed precision (Fujii et al. 2024): bf16 weights, fp32 main gradients, fp32 master weights + Adam
# m, v, bf16 activations, fp32 logits for the loss: the `paper` profile's choices and Training's defaults
MEGATRON = {
    "weight_dtype": "bf16",
    "grad_dtype": "fp32",
    "master_weights": True,
    "optimizer": "adamw",
    "moment_dtype": "fp32",
    "act_dtype": "bf16",
    "logits": "fp32",
}


def opt_bytes(optimizer: str, moment_dtype: str, master_weights: bool) -> float:
    """B_o: optimizer bytes per parameter, the fp32 master copy (4, where kept) plus the optimizer's moments."""
    moments, stats = OPTIMIZERS[optimizer]
    width = _WIDTHS["uint8"] if optimizer == "adamw8bit" else DTYPES[moment_dtype]
    total = (_WIDTHS["fp32"] if master_weights else 0) + moments * width + stats
    return int(total) if float(total).is_integer() else total


def check(choices: dict) -> str | None:
    """The one-line problem of a set of precision choices (FIELDS -> value), or None."""
    allowed = {
        "weight_dtype": DTYPES,
        "grad_dtype": GRAD_DTYPES,
        "optimizer": OPTIMIZERS,
        "moment_dtype": MOMENT_DTYPES,
        "act_dtype": ("bf16", "fp16", "fp32"),
        "logits": LOGITS,
    }
    for name, options in allowed.items():
        if choices[name] not in options:
            return f"--{name.replace('_', '-')} must be one of {', '.join(options)}, got {choices[name]!r}"
    if not isinstance(choices["master_weights"], bool):
        return f"master_weights must be true or false, got {choices['master_weights']!r}"
    if choices["weight_dtype"] == "fp8" and not choices["master_weights"]:
        return (
            "fp8 weights need a high-precision master copy (--master-weights): no trainer updates fp8 weights in "
            "place (Megatron-LM --fp8-param-gather keeps fp32 master weights in the optimizer)"
        )
    if choices["optimizer"] == "adamw8bit" and choices["moment_dtype"] != "fp32":
        return (
            f"--moment-dtype {choices['moment_dtype']} with --optimizer adamw8bit: bitsandbytes' 8-bit AdamW keeps "
            "its two moments in 1-byte states whatever the dtype (drop --moment-dtype)"
        )
    if choices["optimizer"] == "muon" and (
        choices["moment_dtype"] != "fp32" or choices["weight_dtype"] != "bf16" or not choices["master_weights"]
    ):
        return (
            "--optimizer muon is Megatron-Core 0.16.1's: bf16 weights with fp32 master weights and an fp32 momentum "
            "(optimizer/muon.py refuses fp16 and has no precision-aware optimizer)"
        )
    if choices["weight_dtype"] == "fp32" and choices["master_weights"]:
        return "fp32 weights are their own master copy: pass --no-master-weights with --weight-dtype fp32"
    return None


# Transformer Engine's FP8 recipes as Megatron-LM runs them (--fp8-format hybrid --fp8-recipe NAME; TE 2.20.2,
# transformer_engine/pytorch/module/linear.py and base.py): recipe -> (bytes per element of a GEMM input saved for
# backward, bytes per weight element of the FP8 copies TE caches across micro batches). The saved input is its
# quantized data, one byte, with its scales: per tensor (delayed: DelayedScaling; tensorwise: Float8CurrentScaling),
# one fp32 per 1 x 128 tile (blockwise: Float8BlockScaling, DeepSeek-V3's), one e8m0 byte per 32 elements (mxfp8:
# MXFP8BlockScaling, Blackwell). The weight cache (module._fp8_workspaces["weight"], kept while is_first_microbatch is
# given: Megatron-Core's TE wrappers pass it) holds the row-wise copy for forward and the column-wise (transposed)
# copy for the input gradient: two bytes, with one fp32 scale per 128 x 128 block (blockwise) or an e8m0 scale per
# 32 elements each (mxfp8).
# "rowwise" is torchao's alone (--recipe torchtitan, with its "tensorwise"): Megatron refuses it, so its pair is unread.
# "nvfp4" is Transformer Engine's NVFP4BlockScaling (Megatron-LM --fp4-format e2m1 --fp4-recipe nvfp4; TE 2.20.2
# tensor/nvfp4_tensor.py NVFP4Quantizer.inner_tensor_specs): per usage, E2M1 data two to a byte and one E4M3 scale
# byte per 16 elements (+ one fp32 amax per tensor, not counted); a saved input keeps its column-wise usage alone (the
# random-Hadamard-transformed copy the weight gradient reads), the weight cache both usages.
_FP8, _SCALE, _E8M0 = _WIDTHS["fp8"], _WIDTHS["fp32"], _WIDTHS["uint8"]  # an element, an fp32 scale, an e8m0 scale
NVFP4 = 0.5 + _WIDTHS["uint8"] / 16  # an E2M1 element (half a byte) and its share of an E4M3 block scale
FP8_RECIPES = {
    "none": (None, 0.0),
    "delayed": (float(_FP8), 2.0 * _FP8),
    "tensorwise": (float(_FP8), 2.0 * _FP8),
    "blockwise": (_FP8 + _SCALE / 128, 2 * (_FP8 + _SCALE / (128 * 128))),
    "mxfp8": (_FP8 + _E8M0 / 32, 2 * (_FP8 + _E8M0 / 32)),
    "rowwise": (None, 0.0),
    "nvfp4": (NVFP4, 2 * NVFP4),
}
TORCHAO_RECIPES = ("none", "tensorwise", "rowwise")  # torchao Float8LinearRecipeName values torchtitan runs


# --fp8-param-gather: the weights kept quantized (TE 2.20.2 module/base.py reset_parameters: the weight's quantizer set
# to rowwise and columnwise usage, no workspace cached beside it: linear.py passes no weight workspace for a quantized
# weight): a Float8Tensor (delayed, tensorwise: its FP8 data, the transpose the second usage) or an MXFP8Tensor
# (mxfp8: row-wise and column-wise data, each with its e8m0 scale per 32 elements). Megatron-Core 0.16.1 keeps no
# other copy: an MXFP8 model's parameter all-gather reuses the gradient buffer (distributed/param_and_grad_buffer.py:
# 776-791, reuse_grad_buf_for_mxfp8_param_ag, which Megatron-Bridge's MXFP8 recipe sets). Blockwise's
# Float8BlockwiseQTensor weights are not modelled. nvfp4 (Megatron-LM --fp4-param-gather): an NVFP4Tensor, E2M1 data
# with its E4M3 scales per usage.
PARAM_GATHER_RECIPES = ("delayed", "tensorwise", "mxfp8", "nvfp4")


def param_gather_bytes(recipe: str) -> float:
    """B_w under --fp8-param-gather: one usage of the quantized weight (its row-wise data and scales); the other
    usage is B_c (fp8_bytes)."""
    width = FP8_RECIPES[recipe][1] / 2
    return int(width) if float(width).is_integer() else width


# Transformer Engine's Float8Tensor recipes (delayed, tensorwise): on a card whose FP8 GEMMs take any layout (compute
# capability 10.x, 11.x or >= 13: Blackwell; TE 2.20.2 pytorch/utils.py is_non_tn_fp8_gemm_supported) one _data
# buffer backs both usages and no transpose is made (tensor/storage/float8_tensor_storage.py update_usage,
# float8_tensor.py inner_tensor_specs: "no separate transpose is materialized"); MXFP8 and NVFP4 keep both usages
FLOAT8_RECIPES = ("delayed", "tensorwise")


def fp8_bytes(recipe: str, act_bytes: float, param_gather: bool, transpose: bool = True) -> tuple[float, float]:
    """(B_q, B_c): the bytes of a saved GEMM input element (B_a without FP8) and of the FP8 weight copies per
    parameter (0 without FP8). With --fp8-param-gather the weights themselves are the row-wise FP8 copy (B_w = 1),
    so the cache holds the transposed one alone; without `transpose` (a Float8Tensor on a Blackwell card) the one
    copy serves both usages: the cache holds it alone, or nothing beside FP8 weights."""
    saved, cache = FP8_RECIPES[recipe]
    saved = act_bytes if saved is None else saved
    copies = 1 if not transpose and recipe in FLOAT8_RECIPES else 2  # the usages' buffers a weight has
    cache = cache / 2 * (copies - int(param_gather))
    return tuple(int(x) if float(x).is_integer() else x for x in (saved, cache))
