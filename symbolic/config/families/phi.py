"""Phi-3 and Phi-4 config.json files (transformers' Phi3Config; Phi-4-mini is model_type phi3 too)."""

from __future__ import annotations

from ..hfkeys import BASE, Only, Reader, zero_or_null
from .registry import family

PHI3 = BASE + (
    "resid_pdrop",
    "embd_pdrop",
    "original_max_position_embeddings",
    "partial_rotary_factor",
    "attention_bias",
    "mlp_bias",
    "lm_head_bias",
    "full_attn_mod",
    "interpolate_factor",
)
PHI3_VALUES = {
    # Phi3DecoderLayer's resid_attn_dropout / resid_mlp_dropout and the embedding dropout: their masks are not
    # modelled for a Llama-style model, so only 0 is read (the published Phi-3 and Phi-4 files have 0.0)
    **{
        key: Only(zero_or_null, "no dropout (0.0): dropout masks are not modelled for Phi-3")
        for key in ("resid_pdrop", "embd_pdrop")
    },
    "original_max_position_embeddings": Only(
        lambda x: x is None or isinstance(x, int) and not isinstance(x, bool) and x > 0, "a positive length"
    ),
    # Phi-4-mini's file carries these at the values that change nothing: transformers' Phi3Attention and Phi3MLP
    # have no biases (bias=False), its head none; every layer full attention (full_attn_mod 1), RoPE not
    # interpolated (interpolate_factor 1)
    **{
        key: Only(lambda x: x in (False, None), "no biases (false): Phi3Attention and Phi3MLP have none")
        for key in ("attention_bias", "mlp_bias", "lm_head_bias")
    },
    "full_attn_mod": Only(lambda x: x in (1, None) and not isinstance(x, bool), "1 (every layer full attention)"),
    "interpolate_factor": Only(lambda x: x in (1, 1.0, None) and not isinstance(x, bool), "1 (no interpolation)"),
    # RoPE over a fraction of each head (Phi-4-mini 0.75): no parameter, no buffer
    "partial_rotary_factor": Only(
        lambda x: isinstance(x, (int, float)) and not isinstance(x, bool) and 0 < x <= 1,
        "a fraction of the head from 0 to 1",
    ),
}


@family("phi3", PHI3, "Phi-3 (fused QKV and gate-up projections)", values=PHI3_VALUES)
def phi3(raw: dict, r: Reader) -> dict:
    """Phi-3: a Llama whose Q, K, V are one qkv_proj [h, (a + 2k) dh] and whose gate and up are one gate_up_proj
    [h, 2f] (Phi3Attention, Phi3MLP): the same parameters and, in the trainers' layouts, the same tensors; no biases."""
    return {}
