"""Phi-3.5-MoE config.json files (transformers' PhimoeConfig, transformers 5.25.0 models/phimoe/)."""

from __future__ import annotations

from ..hfkeys import BASE, Only, Reader, count_or_null, real, zero_or_null, TRUE_OR_FALSE
from .registry import family

PHIMOE = BASE + (
    "num_local_experts",
    "num_experts_per_tok",
    "attention_bias",
    "lm_head_bias",
    "router_jitter_noise",
    "input_jitter_noise",
    "hidden_dropout",
    "original_max_position_embeddings",
)
PHIMOE_VALUES = {
    "lm_head_bias": TRUE_OR_FALSE,
    # sparsemixer's jitter_eps: the threshold of its masks (a scalar; the masks are the router's saved tensors), not a
    # noise tensor as Mixtral's router_jitter_noise is
    "router_jitter_noise": Only(real, "a number (SparseMixer's mask threshold)"),
    # PhimoeSparseMoeBlock and PhimoeTopKRouter multiply the MoE input in place by a uniform noise in training; its
    # tensors are the router's, refused with it (rules: "no SparseMixer router")
    "input_jitter_noise": Only(real, "a number"),
    # not a PhimoeConfig attribute (the checkpoint's remote code's): 0.0 in Phi-3.5-MoE's file, no dropout built
    "hidden_dropout": Only(zero_or_null, "no dropout (0.0): transformers' Phimoe has none"),
    # the length the longrope rope_scaling extends (no parameter, no buffer training keeps)
    "original_max_position_embeddings": Only(count_or_null, "a positive length"),
}


@family("phimoe", PHIMOE, "Phi-3.5-MoE (SparseMixer-routed experts, LayerNorm)", values=PHIMOE_VALUES)
def phimoe(raw: dict, r: Reader) -> dict:
    """Phi-3.5-MoE (PhimoeDecoderLayer): GQA attention with biases on Q, K, V, O (attention_bias), LayerNorms (a
    weight and a bias of h each) before attention and the MLP and at the end, every layer an MoE of
    num_local_experts SwiGLU experts of intermediate_size, routed by SparseMixer (sparsemixer: always 2 experts per
    token, whatever num_experts_per_tok, so only 2 is read), and an LM head with a bias [v] (lm_head_bias)."""
    if r.count("num_experts_per_tok") != 2:
        raise r.fail(
            "num_experts_per_tok",
            "transformers' sparsemixer routes every token to 2 experts (top-2 hard-coded): only 2 is modelled",
        )
    bias = r.flag("attention_bias")
    return {
        "E": r.count("num_local_experts"),
        "k_e": 2,
        "f_e": r.count("intermediate_size"),
        "qkv_bias": bias,
        "o_bias": bias,
        "norm": "layer",
        "sparsemixer": True,
        "head_bias": r.flag("lm_head_bias"),
    }
