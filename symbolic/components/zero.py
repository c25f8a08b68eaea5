"""Buffers that sharding gradients (ZeRO-2) and parameters (ZeRO-3, FSDP) over the d*c data-parallel ranks adds to a
stage: the gradients being reduce-scattered and, with ZeRO-3, the parameters all-gathered for compute."""
from __future__ import annotations

import functools

import sympy as sp

from ..config.switches import Switches
from ..config.symbols import B_g, B_w
from .base import Component
from .experts import experts_params
from .weights import default_kinds, default_layers, end_params, kind_cases, layer_params


@functools.lru_cache(maxsize=None)
def _max(*args: sp.Expr) -> sp.Expr:
    """sympy.Max of these expressions, remembered: evaluating Max compares its arguments symbolically (a third of a
    derivation's time), and switch sets that differ only in what does not size a layer (remat, ZeRO stage) ask for
    the same ones."""
    return sp.Max(*args)


def largest_layer(sw: Switches, layers: sp.Expr | None = None, moe_layers: sp.Expr | None = None,
                  kinds: dict | None = None) -> sp.Expr:
    """Parameters of a stage's largest layer on one GPU: a dense layer, or an MoE layer with its E/e experts, with
    the mixers of a hybrid (weights.kind_cases), of the kinds the stage holds (`layers`, `moe_layers` of them MoE
    and `kinds` the hybrid kinds' counts: default L/p, L_e/p and their shares)."""
    kinds = default_kinds("first", sw) if kinds is None else kinds
    if not sw.moe and not kinds:
        return layer_params(sw)
    layers, moe_layers = default_layers("first") if layers is None else (layers, moe_layers)
    if not kinds:
        moe = layer_params(sw, moe=True) + experts_params(sw)
        has_dense = sp.Piecewise((layer_params(sw), layers - moe_layers > 0), (0, True))
        has_moe = sp.Piecewise((moe, moe_layers > 0), (0, True))
        return _max(has_dense, has_moe)
    return _max(*(sp.Piecewise((layer_params(sw, moe, mixer, ffn) + (experts_params(sw) if moe else 0), held),
                                 (0, True)) for moe, mixer, ffn, held in kind_cases(sw, layers, moe_layers, kinds)))


def largest_unit(stage: str, sw: Switches = Switches(), layers: sp.Expr | None = None,
                 moe_layers: sp.Expr | None = None, kinds: dict | None = None) -> sp.Expr:
    """Parameters of the largest unit a stage gathers or reduces at once: one layer, or its embedding / LM head."""
    ends = end_params(stage, sw)
    layer = largest_layer(sw, layers, moe_layers, kinds)
    return layer if ends == 0 else _max(layer, ends)


def zero_buffers(stage: str, sw: Switches, layers: sp.Expr | None = None,
                 moe_layers: sp.Expr | None = None, kinds: dict | None = None) -> list[Component]:
    """ZeRO-2: the unsharded gradients of the unit being reduce-scattered; ZeRO-3 also the all-gathered weights of
    the unit being computed and of the prefetched next layer (none below ZeRO-2)."""
    parts = []
    unit = largest_unit(stage, sw, layers, moe_layers, kinds)
    if sw.sharded_grads:
        parts.append(Component(
            "grad_reduce_buffer", B_g * unit,
            "unsharded fp32 gradients of the layer (or embedding / LM head) whose reduce-scatter over d*c is in flight, "
            "B_g bytes per parameter (ZeRO-2/3: torch FSDP's per-module gradient in reduce_dtype fp32, DeepSpeed's "
            "reduce bucket, Megatron-LM FSDP's per-layer gradient buffer)"))
    if sw.sharded_weights:
        parts.append(Component(
            "params_gathered", B_w * (unit + largest_layer(sw, layers, moe_layers, kinds)),
            "all-gathered bf16 weights of the unit being computed and of the prefetched next layer, B_w bytes per "
            "parameter (ZeRO-3: torch FSDP's forward/backward prefetch of one module, Megatron-LM FSDP)"))
    return parts
