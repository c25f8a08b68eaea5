"""Llama and Mistral config.json files (transformers' LlamaConfig, MistralConfig)."""
from __future__ import annotations

from ..hfkeys import BASE, Reader
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
