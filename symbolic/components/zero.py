"""Buffers that sharding gradients (ZeRO-2) and parameters (ZeRO-3, FSDP) over the d*c data-parallel ranks adds to a
stage: the gradients being reduce-scattered and, with ZeRO-3, the parameters all-gathered for compute."""
from __future__ import annotations

import sympy as sp

from ..config.switches import Switches
from ..config.symbols import B_g, B_w
from .base import Component
from .weights import end_params, layer_params


def largest_unit(stage: str, tied: bool = False) -> sp.Expr:
    """Parameters of the largest unit a stage gathers or reduces at once: one layer, or its embedding / LM head."""
    ends = end_params(stage, tied)
    return layer_params() if ends == 0 else sp.Max(layer_params(), ends)


def zero_buffers(stage: str, sw: Switches) -> list[Component]:
    """ZeRO-2: the unsharded gradients of the unit being reduce-scattered; ZeRO-3 also the all-gathered weights of
    the unit being computed and of the prefetched next layer (none below ZeRO-2)."""
    parts = []
    if sw.zero >= 2:
        parts.append(Component(
            "grad_reduce_buffer", B_g * largest_unit(stage, sw.tied),
            "unsharded fp32 gradients of the layer (or embedding / LM head) whose reduce-scatter over d*c is in flight, "
            "B_g bytes per parameter (ZeRO-2/3: torch FSDP's per-module gradient in reduce_dtype fp32, DeepSpeed's "
            "reduce bucket, Megatron-LM FSDP's per-layer gradient buffer)"))
    if sw.zero >= 3:
        parts.append(Component(
            "params_gathered", B_w * (largest_unit(stage, sw.tied) + layer_params()),
            "all-gathered bf16 weights of the unit being computed and of the prefetched next layer, B_w bytes per "
            "parameter (ZeRO-3: torch FSDP's forward/backward prefetch of one module, Megatron-LM FSDP)"))
    return parts
