"""Gradient memory: Megatron-LM keeps fp32 main gradients for every local parameter unless ZeRO-2/3 shard them."""

from __future__ import annotations

import sympy as sp

from ..config.switches import Switches
from ..config.symbols import B_g
from .base import GROUPS, Component


def gradients(params: sp.Expr, sw: Switches) -> Component:
    """Main-gradient buffer: B_g bytes per local parameter, not sharded by ZeRO-1 (Fujii et al. 2024: 4 bytes),
    sharded over d*c by ZeRO-2 and 3 (each rank keeps the reduce-scattered shard it updates)."""
    if sw.sharded_grads:
        return Component(
            "gradients",
            B_g * params / GROUPS.zero_group,
            "fp32 main gradients, B_g bytes per local parameter, sharded over the d*c data-parallel ranks: each keeps "
            "the reduce-scattered shard it updates (ZeRO-2/3; torch FSDP, Megatron-LM FSDP optim_grads)",
        )
    return Component(
        "gradients",
        B_g * params,
        "fp32 main-gradient buffer, B_g bytes per local parameter, not sharded by the distributed optimizer (Megatron-LM)",
    )
