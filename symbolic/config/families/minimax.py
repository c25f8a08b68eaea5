"""MiniMax-M2 config.json files (transformers' MiniMaxM2Config)."""
from __future__ import annotations

from ..hfkeys import BASE, Reader
from .registry import family


@family("minimax_m2", BASE + ("num_local_experts", "num_experts_per_tok"), "MiniMax-M2 (sigmoid-routed experts)")
def minimax_m2(raw: dict, r: Reader) -> dict:
    """MiniMax-M2 (MiniMaxM2DecoderLayer): GQA attention with RMSNorms over the whole Q (a dh) and K (k dh)
    projections (q_norm, k_norm: OLMoE's kind), every layer an MoE of num_local_experts experts of
    intermediate_size, num_experts_per_tok per token, scored with a sigmoid plus a score-correction bias [E]
    (e_score_correction_bias); no shared expert. Multi-token-prediction keys of MiniMax's own code are not
    transformers' and are refused by name."""
    return {"E": r.count("num_local_experts"), "k_e": r.count("num_experts_per_tok"),
            "f_e": r.count("intermediate_size"), "qk_norm": "full", "expert_bias": True, "sigmoid": True}
