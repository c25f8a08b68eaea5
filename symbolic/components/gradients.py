"""Gradient memory: Megatron-LM keeps fp32 main gradients for every local parameter, even with the distributed optimizer."""
from __future__ import annotations

import sympy as sp

from ..config.symbols import B_g
from .base import Component


def gradients(params: sp.Expr) -> Component:
    """Main-gradient buffer: B_g bytes per local parameter, not sharded by ZeRO-1 (Fujii et al. 2024: 4 bytes)."""
    return Component(
        "gradients", B_g * params,
        "fp32 main-gradient buffer, B_g bytes per local parameter, not sharded by the distributed optimizer (Megatron-LM)",
    )
