"""Optimizer states: fp32 master weights and Adam m, v (B_o = 12 bytes per parameter), sharded over d*c from ZeRO-1 on
(the distributed optimizer); under Megatron-Core's Muon, the 2-D layer weights B_o (master + momentum) and the rest
AdamW's ADAM_BYTES."""

from __future__ import annotations

import sympy as sp

from ..config.precision import ADAM_BYTES
from ..config.switches import Switches
from ..config.symbols import B_o
from .base import GROUPS, Component


def optimizer(params: sp.Expr, sw: Switches, adam: sp.Expr = sp.Integer(0)) -> Component:
    """Master weights + Adam moments; divided by d*c at ZeRO stage 1 and above (Fujii et al. 2024: 12/(d c)). Under
    Muon, `adam` of the `params` (embeddings, LM head, norms) keep AdamW's states."""
    if sw.muon:
        return muon_optimizer(params, adam)
    if sw.dist_opt:
        return Component(
            "optimizer",
            B_o * params / GROUPS.zero_group,
            "fp32 master weights + Adam m, v (B_o bytes/param) sharded over the d*c data-parallel ranks (Megatron distributed optimizer)",
        )
    return Component(
        "optimizer",
        B_o * params,
        "fp32 master weights + Adam m, v (B_o bytes/param) replicated on every data-parallel rank (no distributed optimizer)",
    )


def muon_optimizer(params: sp.Expr, adam: sp.Expr) -> Component:
    """Megatron-Core 0.16.1's Muon (optimizer/muon.py get_megatron_muon_optimizer): every 2-D weight but the embedding
    and LM head under TensorParallelMuon, one fp32 momentum_buffer beside its fp32 master weight (B_o = 8 bytes:
    muon_init_state_fn on Float16OptimizerWithFloat16Params' fp32 copies), the others (embeddings, LM head, norms)
    under AdamW (ADAM_BYTES); replicated on every data-parallel rank: that function refuses the distributed optimizer."""
    return Component(
        "optimizer",
        B_o * (params - adam) + ADAM_BYTES * adam,
        "fp32 master weights + Muon momentum (B_o bytes/param) of the 2-D layer weights, fp32 master + AdamW m, v of "
        "the embeddings, LM head and norms, replicated on every data-parallel rank (Megatron-Core Muon)",
    )
