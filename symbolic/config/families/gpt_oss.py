"""gpt-oss config.json files (transformers' GptOssConfig)."""

from __future__ import annotations

from ..hfkeys import ATTENTION_KINDS, BASE, Only, Reader, real, TRUE_OR_FALSE
from .registry import family

GPT_OSS = BASE + (
    "num_local_experts",
    "num_experts_per_tok",
    "attention_bias",
    "swiglu_alpha",
    "swiglu_limit",
    "experts_per_token",
)


GPT_OSS_VALUES = {
    "attention_bias": TRUE_OR_FALSE,
    # its SwiGLU variant: gate clamped at swiglu_limit, gate * sigmoid(alpha gate) * (up + 1): scalars on SwiGLU's
    # tensors (counted as SwiGLU's)
    "swiglu_alpha": Only(real, "a number"),
    "swiglu_limit": Only(real, "a number"),
    "experts_per_token": Only(
        lambda x: x is None or isinstance(x, int) and not isinstance(x, bool) and x > 0,
        "a positive count (num_experts_per_tok's alias)",
    ),
    "layer_types": Only(
        lambda x: x is None or isinstance(x, list) and all(kind in ATTENTION_KINDS for kind in x),
        "full or sliding-window attention layers",
    ),
}


@family("gpt_oss", GPT_OSS, "gpt-oss (attention sinks, biased experts)", values=GPT_OSS_VALUES)
def gpt_oss(raw: dict, r: Reader) -> dict:
    """gpt-oss (GptOssDecoderLayer): GQA attention with biases on Q, K, V, O (attention_bias) and a learned sink
    logit per head (sinks [a]); every layer an MoE of num_local_experts experts (gate-up [h, 2 f_e] and down [f_e, h]
    with their biases, f_e = intermediate_size), num_experts_per_tok per token, a router [h, E] with a bias and a
    softmax over the top-k logits; alternating sliding-window layers (no parameter, no buffer with flash attention;
    layer_window, what the step time reads: transformers 5.25.0 configuration_gpt_oss.py:59,84-86, sliding_window 128 on even layers)."""
    k_e = r.count("num_experts_per_tok")
    if r.get("experts_per_token") not in (None, k_e):
        raise r.fail("experts_per_token", f"disagrees with num_experts_per_tok = {k_e}")
    bias = r.flag("attention_bias", True)
    L, window = r.count("num_hidden_layers"), r.count("sliding_window", 128)  # GptOssConfig's default window
    kinds = r.get("layer_types") or ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(L)]
    if len(kinds) != L:
        raise r.fail("layer_types", f"lists {len(kinds)} layers, not num_hidden_layers = {L}")
    return {
        "layer_window": tuple(window if kind == "sliding_attention" else 0 for kind in kinds),
        "E": r.count("num_local_experts"),
        "k_e": k_e,
        "f_e": r.count("intermediate_size"),
        "qkv_bias": bias,
        "o_bias": bias,
        "sinks": True,
        "moe_bias": True,
    }
