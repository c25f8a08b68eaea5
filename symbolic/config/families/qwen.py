"""Qwen2 and Qwen3 config.json files (transformers' Qwen2Config, Qwen3Config)."""
from __future__ import annotations

from ..hfkeys import BASE, Reader
from .registry import family


@family("qwen2", BASE, "Qwen2 (Q, K, V biases)")
def qwen2(raw: dict, r: Reader) -> dict:
    """Qwen2: biases on Q, K and V (always: transformers' Qwen2Attention has no key for them), none on O."""
    return {"qkv_bias": True}


@family("qwen3", BASE + ("attention_bias",), "Qwen3 (per-head q/k norms)")
def qwen3(raw: dict, r: Reader) -> dict:
    """Qwen3: RMSNorm over each head's dh on Q and K (q_norm, k_norm), optional Q, K, V, O biases."""
    bias = r.flag("attention_bias")
    return {"qk_norm": "head", "qkv_bias": bias, "o_bias": bias}
