"""Llama 4's language model (transformers' Llama4TextConfig, model_type llama4_text; a llama4 checkpoint's
text_config, read with --text-only)."""

from __future__ import annotations

from ..hfkeys import ATTENTION_KINDS, BASE, Only, Reader, real_or_null, TRUE_OR_FALSE
from .registry import family

LLAMA4 = BASE + (
    "intermediate_size_mlp",
    "num_local_experts",
    "num_experts_per_tok",
    "moe_layers",
    "interleave_moe_layer_step",
    "use_qk_norm",
    "no_rope_layers",
    "no_rope_layer_interval",
    "attention_chunk_size",
    "attn_temperature_tuning",
    "floor_scale",
    "attn_scale",
    "attention_bias",
)


def _flags(x) -> bool:
    return x is None or isinstance(x, list) and all(v in (0, 1) and not isinstance(v, bool) for v in x)


LLAMA4_VALUES = {
    "attention_bias": Only(lambda x: x is False or x is None, "no attention biases (false)"),
    "use_qk_norm": TRUE_OR_FALSE,
    # which layers rotate (1) or are NoPE (0), and the chunk of chunked attention: no parameter; with flash
    # attention no buffer (unfused attention materialises all s keys whatever the mask, as for a sliding window)
    "no_rope_layers": Only(_flags, "a list of 0 (NoPE) and 1 (RoPE) per layer"),
    "attention_chunk_size": Only(
        lambda x: x is None or isinstance(x, int) and not isinstance(x, bool) and x > 0,
        "a positive chunk length, or null",
    ),
    # NoPE layers' query temperature: a scalar per position on tensors that exist either way
    "attn_temperature_tuning": TRUE_OR_FALSE,
    "floor_scale": Only(real_or_null, "a number"),
    "attn_scale": Only(real_or_null, "a number"),
    "layer_types": Only(
        lambda x: (
            x is None or isinstance(x, list) and all(kind in ATTENTION_KINDS + ("chunked_attention",) for kind in x)
        ),
        "full, sliding or chunked attention layers",
    ),
}


@family("llama4_text", LLAMA4, "Llama 4's language model (interleaved MoE, shared expert)", values=LLAMA4_VALUES)
def llama4_text(raw: dict, r: Reader) -> dict:
    """Llama 4 (Llama4TextDecoderLayer, Llama4TextMoe): the layers in moe_layers (default every
    interleave_moe_layer_step-th from step - 1) route each token to num_experts_per_tok of num_local_experts experts
    [h, 2 f_e] + [f_e, h] with f_e = intermediate_size, beside one shared expert of intermediate_size, the router
    [h, E] scoring with a sigmoid of its top-k logits; the other layers are dense MLPs of intermediate_size_mlp.
    use_qk_norm: a weightless RMSNorm on Q and K (Llama4TextWeightlessRMSNorm; on the RoPE layers only, counted here
    on every layer: its saved inputs are an upper bound by the NoPE layers' share, 1 in no_rope_layer_interval)."""
    L = r.count("num_hidden_layers")
    step = r.count("interleave_moe_layer_step", 1)
    moe = set(r.layers("moe_layers", L)) if r.get("moe_layers") is not None else set(range(step - 1, L, step))
    if not moe:
        raise r.fail("moe_layers", "no MoE layer: a dense Llama 4 is not a published shape (read it as llama)")
    f_e = r.count("intermediate_size")
    return {
        "f": r.count("intermediate_size_mlp"),
        "E": r.count("num_local_experts"),
        "k_e": r.count("num_experts_per_tok"),
        "f_e": f_e,
        "f_s": f_e,
        "sigmoid": True,
        "dense_layers": tuple(i for i in range(L) if i not in moe),
        "qk_norm": "weightless" if r.flag("use_qk_norm") else "none",
    }
