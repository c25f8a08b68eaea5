"""Llama, Mistral and Granite config.json files (transformers' LlamaConfig, MistralConfig, GraniteConfig)."""

from __future__ import annotations

from ..hfkeys import BASE, Only, Reader, real
from .registry import family


@family("llama", BASE + ("attention_bias", "mlp_bias"), "Llama")
def llama(raw: dict, r: Reader) -> dict:
    """Llama: optional biases on Q, K, V and O (attention_bias) and on the MLP (mlp_bias)."""
    bias = r.flag("attention_bias")
    return {"qkv_bias": bias, "o_bias": bias, "mlp_bias": r.flag("mlp_bias")}


@family("mistral", BASE, "Mistral")
def mistral(raw: dict, r: Reader) -> dict:
    """Mistral: a Llama with no key beyond the base letters (its sliding window keeps no s x s tensor)."""
    return {}


# Granite's scalars (transformers 5.25.0 modeling_granite.py): the embedding times embedding_multiplier, each
# residual branch times residual_multiplier, attention scores scaled by attention_multiplier (in place of 1/sqrt(dh))
# and the logits divided by logits_scaling; autograd's product or quotient by a Python number saves no tensor
GRANITE_SCALARS = ("embedding_multiplier", "residual_multiplier", "attention_multiplier", "logits_scaling")


@family(
    "granite",
    BASE + ("attention_bias", "mlp_bias") + GRANITE_SCALARS,
    "Granite (a Llama with scalar multipliers)",
    values={key: Only(real, "a number (a scalar multiplier)") for key in GRANITE_SCALARS},
)
def granite(raw: dict, r: Reader) -> dict:
    """Granite (GraniteDecoderLayer): Llama's layers and tensors, with scalar multipliers that hold no tensor."""
    return llama(raw, r)
