"""Mixtral config.json files (transformers' MixtralConfig)."""

from __future__ import annotations

from ..hfkeys import BASE, Reader
from .registry import family


@family("mixtral", BASE + ("num_local_experts", "num_experts_per_tok"), "Mixtral (experts)")
def mixtral(raw: dict, r: Reader) -> dict:
    """Mixtral: every layer's MLP is num_local_experts experts of intermediate_size, num_experts_per_tok per token."""
    return {
        "E": r.count("num_local_experts"),
        "k_e": r.count("num_experts_per_tok"),
        "f_e": r.count("intermediate_size"),
    }
