"""OLMoE config.json files (transformers' OlmoeConfig)."""
from __future__ import annotations

from ..hfkeys import BASE, Reader
from .registry import family


@family("olmoe", BASE + ("attention_bias", "num_experts", "num_experts_per_tok"), "OLMoE")
def olmoe(raw: dict, r: Reader) -> dict:
    """OLMoE: every layer's MLP is num_experts experts of intermediate_size; RMSNorm over the whole Q (a dh) and K
    (k dh) projections (q_norm, k_norm); optional biases (attention_bias)."""
    bias = r.flag("attention_bias")
    return {"E": r.count("num_experts"), "k_e": r.count("num_experts_per_tok"), "f_e": r.count("intermediate_size"),
            "qk_norm": "full", "qkv_bias": bias, "o_bias": bias}
