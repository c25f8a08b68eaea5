"""GPT-2 config.json files (transformers' GPT2Config): LayerNorm, a GeLU MLP, learned positions, tied head."""

from __future__ import annotations

from ..hfkeys import Only, Reader, false_or_null
from .registry import family

GPT2 = (
    "n_embd",
    "n_layer",
    "n_head",
    "n_positions",
    "n_ctx",
    "n_inner",
    "vocab_size",
    "activation_function",
    "attn_pdrop",
    "embd_pdrop",
    "resid_pdrop",
    "tie_word_embeddings",
    "layer_norm_epsilon",
    "scale_attn_weights",
    "scale_attn_by_inverse_layer_idx",
    "reorder_and_upcast_attn",
    "summary_type",
    "summary_use_proj",
    "summary_activation",
    "summary_proj_to_labels",
    "summary_first_dropout",
)  # summary_*: the double-heads model's
# the values GPT-2's non-integer structural keys may take (its build reads the integers)
GPT2_VALUES = {
    "activation_function": Only(
        lambda x: x in ("gelu_new", "gelu", "gelu_pytorch_tanh", "gelu_fast"),
        "a GeLU MLP (gelu_new, gelu, gelu_pytorch_tanh, gelu_fast)",
    ),
    "reorder_and_upcast_attn": Only(
        false_or_null, "attention in the compute dtype (an fp32 upcast of the scores is not modelled)"
    ),
    **{
        key: Only(
            lambda x: isinstance(x, (int, float)) and not isinstance(x, bool) and 0 <= x < 1,
            "a dropout probability from 0 to 1",
        )
        for key in ("attn_pdrop", "embd_pdrop", "resid_pdrop")
    },
}


def gpt2_letters(r: Reader) -> dict:
    """GPT-2: n_embd, n_head (multi-head: k = a), n_layer, vocab_size, n_inner (null: 4 n_embd), tied unless
    tie_word_embeddings is false (transformers' GPT2LMHeadModel)."""
    h = r.count("n_embd")
    return {
        "h": h,
        "f": r.count("n_inner", 4 * h),
        "a": r.count("n_head"),
        "k": r.count("n_head"),
        "L": r.count("n_layer"),
        "v": r.count("vocab_size"),
        "tied": r.flag("tie_word_embeddings", True),
        "head_dim": None,
    }


@family("gpt2", GPT2, "GPT-2 (LayerNorm, GeLU, learned positions)", gpt2_letters, GPT2_VALUES)
def gpt2(raw: dict, r: Reader) -> dict:
    """GPT-2: LayerNorm, a GeLU MLP, biases on every linear (Conv1D), n_positions learned positions, dropout where
    any of attn_pdrop, embd_pdrop, resid_pdrop is above 0 (transformers' GPT2Block)."""
    dropout = any(r.get(key, 0) > 0 for key in ("attn_pdrop", "embd_pdrop", "resid_pdrop"))  # values checked
    return {
        "mlp": "gelu",
        "norm": "layer",
        "positions": r.count("n_positions"),
        "qkv_bias": True,
        "o_bias": True,
        "mlp_bias": True,
        "dropout": dropout,
    }
