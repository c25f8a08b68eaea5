"""OLMoE config.json files (transformers' OlmoeConfig)."""

from __future__ import annotations

from ..hfkeys import BASE, Reader
from .registry import family


@family("olmoe", BASE + ("attention_bias", "num_experts", "num_experts_per_tok"), "OLMoE")
def olmoe(raw: dict, r: Reader) -> dict:
    """OLMoE: every layer's MLP is num_experts experts of intermediate_size; RMSNorm over the whole Q (a dh) and K
    (k dh) projections (q_norm, k_norm); optional biases (attention_bias)."""
    bias = r.flag("attention_bias")
    return {
        "E": r.count("num_experts"),
        "k_e": r.count("num_experts_per_tok"),
        "f_e": r.count("intermediate_size"),
        "qk_norm": "full",
        "qkv_bias": bias,
        "o_bias": bias,
    }


@family("olmo2", BASE + ("attention_bias",), "OLMo 2 (a Llama with its norms after attention and the MLP)")
def olmo2(raw: dict, r: Reader) -> dict:
    """OLMo 2 (transformers 5.25.0 modeling_olmo2.py, Olmo2DecoderLayer): a Llama whose two RMSNorms sit after
    attention and after the MLP (x + norm(attn(x)), then h + norm(mlp(h))), with RMSNorm over the whole Q and K
    projections as OLMoE's. Its parameters are a pre-norm layer's, and so are its saved bytes: the four [s, b, h]
    tensors a layer keeps are the qkv and MLP inputs (the layer's and the residual's) and the two norms' inputs (the
    o and down projections' outputs), where a pre-norm layer keeps the norms' inputs and outputs
    (benchmarks/olmo2_saved.py measures the two layouts equal)."""
    bias = r.flag("attention_bias")
    return {"qk_norm": "full", "qkv_bias": bias, "o_bias": bias}
