"""Qwen2 and Qwen3 config.json files (transformers' Qwen2Config, Qwen3Config)."""

from __future__ import annotations

from ..hfkeys import BASE, Only, Reader, TRUE_OR_FALSE
from .registry import family

# Qwen3 always has its q/k norms: use_qk_norm (Qwen3-Coder's config) may only say so
QWEN3_VALUES = {
    "use_qk_norm": Only(lambda x: x in (True, None), "Qwen3's per-head q/k norms (true)"),
    "attention_bias": TRUE_OR_FALSE,
}


@family("qwen2", BASE, "Qwen2 (Q, K, V biases)")
def qwen2(raw: dict, r: Reader) -> dict:
    """Qwen2: biases on Q, K and V (always: transformers' Qwen2Attention has no key for them), none on O."""
    return {"qkv_bias": True}


@family("qwen3", BASE + ("attention_bias", "use_qk_norm"), "Qwen3 (per-head q/k norms)", values=QWEN3_VALUES)
def qwen3(raw: dict, r: Reader) -> dict:
    """Qwen3: RMSNorm over each head's dh on Q and K (q_norm, k_norm), optional Q, K, V, O biases."""
    bias = r.flag("attention_bias")
    return {"qk_norm": "head", "qkv_bias": bias, "o_bias": bias}


# Qwen3-VL's language model (Qwen3VLTextConfig; a qwen3_vl checkpoint's text_config, read with --text-only): Qwen3's
# layers, its rotary embedding interleaved over time, height and width (mrope_section: no parameter)
family("qwen3_vl_text", BASE + ("attention_bias",), "Qwen3-VL's language model", values=QWEN3_VALUES)(qwen3)


@family("mimo", BASE + ("num_nextn_predict_layers",), "MiMo (Qwen2 with multi-token prediction)")
def mimo(raw: dict, r: Reader) -> dict:
    """Xiaomi's MiMo (remote code: MiMoConfig and MiMoModel subclass Qwen2's): Qwen2's layers, and
    num_nextn_predict_layers multi-token-prediction modules after the last layer, each token_layernorm and
    hidden_layernorm [h], input_proj [2h, h] without a bias, one Qwen2 decoder layer and final_layernorm [h], sharing
    the embedding and LM head (model.mtp_layers.N in the checkpoint; sglang 0.5.23 MiMoMultiTokenPredictorLayer):
    DeepSeek-V3's module with a Qwen2 layer."""
    return {**qwen2(raw, r), "mtp": r.count("num_nextn_predict_layers", 0, zero=True)}
