"""Optimizer states: fp32 master weights and Adam m, v (B_o = 12 bytes per parameter), sharded over d*c from ZeRO-1 on
(the distributed optimizer)."""
from __future__ import annotations

import sympy as sp

from ..config.switches import Switches
from ..config.symbols import B_o
from .base import GROUPS, Component


def optimizer(params: sp.Expr, sw: Switches) -> Component:
    """Master weights + Adam moments; divided by d*c at ZeRO stage 1 and above (Fujii et al. 2024: 12/(d c))."""
    if sw.dist_opt:
        return Component(
            "optimizer", B_o * params / GROUPS.zero_group,
            "fp32 master weights + Adam m, v (B_o bytes/param) sharded over the d*c data-parallel ranks (Megatron distributed optimizer)",
        )
    return Component(
        "optimizer", B_o * params,
        "fp32 master weights + Adam m, v (B_o bytes/param) replicated on every data-parallel rank (no distributed optimizer)",
    )
