"""MiniMax-M2 config.json files (transformers' MiniMaxM2Config), with the keys MiniMax's own remote code writes into
its published files (MiniMax-M2 to M2.7) read at the values transformers' MiniMaxM2 builds."""

from __future__ import annotations

from ..hfkeys import BASE, Only, Reader, count_or_null
from .registry import family

# MiniMax's remote-code keys (configuration_minimax_m2.py of the checkpoints), each at the value MiniMaxM2 models
REMOTE = (
    "attn_type_list",
    "qk_norm_type",
    "use_qk_norm",
    "rotary_dim",
    "scoring_func",
    "shared_intermediate_size",
    "use_routing_bias",
    "use_mtp",
    "num_mtp_modules",
    "mtp_transformer_layers",
)
MINIMAX_VALUES = {
    # 1: softmax attention in every layer (0 is MiniMax-Text-01's lightning attention: not modelled)
    "attn_type_list": Only(
        lambda x: x is None or isinstance(x, list) and all(kind == 1 and not isinstance(kind, bool) for kind in x),
        "softmax attention (1) in every layer; lightning attention (0) is not modelled",
    ),
    "qk_norm_type": Only(lambda x: x in ("per_layer", None), "per_layer: RMSNorms over the whole Q and K projections"),
    "use_qk_norm": Only(lambda x: x in (True, None), "the q/k norms MiniMaxM2Attention always has (true)"),
    "rotary_dim": Only(count_or_null, "a positive width (RoPE over part of each head: no parameter)"),
    "scoring_func": Only(lambda x: x in ("sigmoid", None), "sigmoid routing scores (what MiniMaxM2 has)"),
    "shared_intermediate_size": Only(lambda x: x in (0, None) and not isinstance(x, bool), "no shared expert (0)"),
    "use_routing_bias": Only(lambda x: x in (True, None), "the score-correction bias MiniMaxM2's router has (true)"),
    # the MTP modules of MiniMax's own training code: transformers' MiniMaxM2ForCausalLM builds none and the published
    # checkpoints store none (MiniMax-M2.7's safetensors total is this model's 228,689,764,864 parameters plus its fp8
    # block scales, 13,880,064: docs/families.md), so training from the checkpoint holds none
    "use_mtp": Only(lambda x: isinstance(x, bool) or x is None, "true or false (MTP modules are not built)"),
    "num_mtp_modules": Only(lambda x: count_or_null(x, 0), "a count (MTP modules are not built)"),
    "mtp_transformer_layers": Only(lambda x: count_or_null(x, 0), "a count (MTP modules are not built)"),
}


@family(
    "minimax_m2",
    BASE + ("num_local_experts", "num_experts_per_tok") + REMOTE,
    "MiniMax-M2 (sigmoid-routed experts)",
    values=MINIMAX_VALUES,
)
def minimax_m2(raw: dict, r: Reader) -> dict:
    """MiniMax-M2 (MiniMaxM2DecoderLayer): GQA attention with RMSNorms over the whole Q (a dh) and K (k dh)
    projections (q_norm, k_norm: OLMoE's kind), every layer an MoE of num_local_experts experts of
    intermediate_size, num_experts_per_tok per token, scored with a sigmoid plus a score-correction bias [E]
    (e_score_correction_bias); no shared expert, no MTP module (as transformers builds it)."""
    return {
        "E": r.count("num_local_experts"),
        "k_e": r.count("num_experts_per_tok"),
        "f_e": r.count("intermediate_size"),
        "qk_norm": "full",
        "expert_bias": True,
        "sigmoid": True,
    }
