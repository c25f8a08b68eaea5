"""Buffers that sharding gradients (ZeRO-2) and parameters (ZeRO-3, FSDP) over the d*c data-parallel ranks adds to a
stage: the gradients being reduce-scattered and, with ZeRO-3, the parameters all-gathered for compute."""
from __future__ import annotations

import sympy as sp

from ..config.switches import Switches
from ..config.symbols import B_g, B_w
from .base import Component
from .experts import experts_params
from .weights import default_layers, default_linear, end_params, layer_params


def largest_layer(sw: Switches, layers: sp.Expr | None = None, moe_layers: sp.Expr | None = None,
                  linear_layers: sp.Expr | None = None) -> sp.Expr:
    """Parameters of a stage's largest layer on one GPU: a dense layer, or an MoE layer with its E/e experts, with
    softmax attention or a Gated DeltaNet, of the kinds the stage holds (`layers`, `moe_layers` of them MoE and
    `linear_layers` Gated DeltaNet layers: default L/p, L_e/p, L_g/p)."""
    if not sw.moe and not sw.gdn:
        return layer_params(sw)
    layers, moe_layers = default_layers("first") if layers is None else (layers, moe_layers)
    linear_layers = default_linear("first") if linear_layers is None else linear_layers
    mixers = [(False, layers - linear_layers > 0), (True, linear_layers > 0)] if sw.gdn else [(False, sp.true)]
    mlps = [(False, layers - moe_layers > 0), (True, moe_layers > 0)] if sw.moe else [(False, sp.true)]
    kinds = [sp.Piecewise((layer_params(sw, moe=moe, linear=linear) + (experts_params(sw) if moe else 0),
                           sp.And(mixer, mlp)), (0, True)) for linear, mixer in mixers for moe, mlp in mlps]
    return sp.Max(*kinds)


def largest_unit(stage: str, sw: Switches = Switches(), layers: sp.Expr | None = None,
                 moe_layers: sp.Expr | None = None, linear_layers: sp.Expr | None = None) -> sp.Expr:
    """Parameters of the largest unit a stage gathers or reduces at once: one layer, or its embedding / LM head."""
    ends = end_params(stage, sw)
    layer = largest_layer(sw, layers, moe_layers, linear_layers)
    return layer if ends == 0 else sp.Max(layer, ends)


def zero_buffers(stage: str, sw: Switches, layers: sp.Expr | None = None,
                 moe_layers: sp.Expr | None = None, linear_layers: sp.Expr | None = None) -> list[Component]:
    """ZeRO-2: the unsharded gradients of the unit being reduce-scattered; ZeRO-3 also the all-gathered weights of
    the unit being computed and of the prefetched next layer (none below ZeRO-2)."""
    parts = []
    unit = largest_unit(stage, sw, layers, moe_layers, linear_layers)
    if sw.sharded_grads:
        parts.append(Component(
            "grad_reduce_buffer", B_g * unit,
            "unsharded fp32 gradients of the layer (or embedding / LM head) whose reduce-scatter over d*c is in flight, "
            "B_g bytes per parameter (ZeRO-2/3: torch FSDP's per-module gradient in reduce_dtype fp32, DeepSpeed's "
            "reduce bucket, Megatron-LM FSDP's per-layer gradient buffer)"))
    if sw.sharded_weights:
        parts.append(Component(
            "params_gathered", B_w * (unit + largest_layer(sw, layers, moe_layers, linear_layers)),
            "all-gathered bf16 weights of the unit being computed and of the prefetched next layer, B_w bytes per "
            "parameter (ZeRO-3: torch FSDP's forward/backward prefetch of one module, Megatron-LM FSDP)"))
    return parts
