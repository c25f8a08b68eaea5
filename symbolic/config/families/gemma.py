"""Gemma 2 and Gemma 3 config.json files (transformers' Gemma2Config, Gemma3TextConfig; a gemma3 checkpoint's
text_config with --text-only)."""

from __future__ import annotations

from ..hfkeys import ATTENTION_KINDS, BASE, Only, Reader
from .registry import family

GEMMA = BASE + (
    "hidden_activation",
    "hidden_act",
    "query_pre_attn_scalar",
    "final_logit_softcapping",
    "attn_logit_softcapping",
    "attention_bias",
    "use_bidirectional_attention",
)
# Gemma 3 adds: the local layers' own RoPE base, the local/global pattern (layer_types in newer files)
GEMMA3 = GEMMA + ("rope_local_base_freq", "sliding_window_pattern", "_sliding_window_pattern")


def _cap(x) -> bool:
    return x is None or isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0


GEMMA_VALUES = {
    # GeGLU: gate and up [h, f], GeLU (tanh approximation) of the gate times up: SwiGLU's tensors with another act
    "hidden_activation": Only(lambda x: x in ("gelu_pytorch_tanh", "gelu", None), "a GeGLU MLP (gelu_pytorch_tanh)"),
    "hidden_act": Only(lambda x: x in ("gelu_pytorch_tanh", "gelu", None), "a GeGLU MLP (gelu_pytorch_tanh)"),
    "query_pre_attn_scalar": Only(_cap, "a positive scale of the queries (a scalar)"),
    "final_logit_softcapping": Only(_cap, "a positive cap, or null"),
    "attn_logit_softcapping": Only(_cap, "a positive cap, or null"),
    "attention_bias": Only(lambda x: x is False or x is None, "no attention biases (false)"),
    # causal attention only: bidirectional attention is EmbeddingGemma's
    "use_bidirectional_attention": Only(lambda x: x in (False, None), "causal attention (false or null)"),
    "rope_local_base_freq": Only(lambda x: isinstance(x, (int, float)) and not isinstance(x, bool), "a number"),
    **{
        key: Only(
            lambda x: x is None or isinstance(x, int) and not isinstance(x, bool) and x > 0, "a positive layer period"
        )
        for key in ("sliding_window_pattern", "_sliding_window_pattern")
    },
    "layer_types": Only(
        lambda x: x is None or isinstance(x, list) and all(kind in ATTENTION_KINDS for kind in x),
        "full or sliding-window attention layers",
    ),
}


@family("gemma2", GEMMA, "Gemma 2 (sandwich norms, soft-capping)", values=GEMMA_VALUES)
def gemma2(raw: dict, r: Reader) -> dict:
    """Gemma 2 (Gemma2DecoderLayer): four RMSNorms per layer (input, post-attention, pre- and post-feedforward), a
    GeGLU MLP, the embedding scaled by sqrt(h) (a scalar), the tied head; soft-capped logits (final_logit_softcapping)
    and attention scores (attn_logit_softcapping) where the caps are set."""
    return {
        "sandwich": True,
        "logit_softcap": r.get("final_logit_softcapping") is not None,
        "attn_softcap": r.get("attn_logit_softcapping") is not None,
    }


@family("gemma3_text", GEMMA3, "Gemma 3 (sandwich norms, per-head q/k norms)", values=GEMMA_VALUES)
def gemma3_text(raw: dict, r: Reader) -> dict:
    """Gemma 3 (Gemma3DecoderLayer): Gemma 2's layer with RMSNorms over each head's dh on Q and K (q_norm, k_norm)
    and soft-capping only where a file sets a cap (Gemma3TextConfig's defaults are null)."""
    return {**gemma2(raw, r), "qk_norm": "head"}
