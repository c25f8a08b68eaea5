"""Megatron-Core's global memory buffer ("mpu": megatron-core 0.16.1 utils.py GlobalMemoryBuffer.get_tensor, one
tensor per (name, dtype), grown to the largest request and kept for the process): the all-gathers that ask for it
with sequence parallelism (tensor_parallel/layers.py LinearWithGradAccumulationAndAsyncCommunication, forward and
backward: every Megatron ColumnParallelLinear, the LM head's under Transformer Engine layers, every layer's under
--transformer-impl local) and the all-gather token dispatcher (transformer/moe/token_dispatcher.py token_dispatch,
use_global_buffer=True)."""

from __future__ import annotations

import sympy as sp

from ..config.switches import Switches
from ..config.symbols import B_a, b, c, e, h, s, t, t_e
from .base import Component


def _when(rows: sp.Expr, held) -> sp.Expr:
    return sp.Piecewise((rows, held), (0, True))


def mpu_buffer(sw: Switches, has_head: bool, moe_layers: sp.Expr) -> Component:
    """The buffer's bytes on a stage: B_a h times the most rows any of its users gathers, the s b / c sequence of a
    sequence-parallel column-parallel linear (t > 1: the LM head on the head's stage, every layer's linears under
    the local implementation) and the T t_e e tokens of the all-gather dispatcher (t_e e > 1, a stage with MoE
    layers)."""
    rows = []
    if sw.sp and (has_head or sw.local):
        rows.append(_when(s * b / c, t > 1))
    if sw.moe and sw.dispatcher == "allgather":
        rows.append(_when(s * b / (t * c) * t_e * e, (moe_layers > 0) & (t_e * e > 1)))
    if not rows:
        return Component("mpu_buffer", sp.Integer(0), "no all-gather into Megatron-Core's global buffer on this stage")
    users = ", ".join(
        (["the LM head's sequence-parallel all-gather"] if has_head and sw.sp else [])
        + (["every sequence-parallel linear's (local)"] if sw.local and sw.sp else [])
        + (["the all-gather dispatcher's tokens"] if sw.moe and sw.dispatcher == "allgather" else [])
    )
    return Component(
        "mpu_buffer",
        B_a * h * sp.Max(*rows),
        f"Megatron-Core's persistent global memory buffer ('mpu', utils.py GlobalMemoryBuffer), B_a x h "
        f"x the most rows gathered into it: {users}",
    )
