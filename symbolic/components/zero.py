"""Buffers that sharding gradients (ZeRO-2) and parameters (ZeRO-3, FSDP) over the d*c data-parallel ranks adds to a
stage: the gradients being reduce-scattered and, with ZeRO-3, the parameters all-gathered for compute (Megatron-FSDP's
prefetch window where the stage's parameters are given)."""

from __future__ import annotations

import functools

import sympy as sp

from ..config.switches import Switches
from ..config.symbols import B_g, B_w
from .base import Component
from .experts import experts_params
from .weights import default_kinds, default_layers, end_params, kind_cases, layer_params

# megatron-core 0.16.1 distributed/fsdp/src/megatron_fsdp/megatron_fsdp.py, MegatronFSDP.__init__ under
# optim_grads_params: suggested_communication_unit_size = max(1_000_000_000, 2 x the FSDP units' mean parameter count)
# (commented "Cap to 1B elements", a floor in fact), suggested_AG_prefetch_size = half of it
AG_PREFETCH = 500_000_000


@functools.lru_cache(maxsize=None)
def _max(*args: sp.Expr) -> sp.Expr:
    """sympy.Max of these expressions, remembered: evaluating Max compares its arguments symbolically (a third of a
    derivation's time), and switch sets that differ only in what does not size a layer (remat, ZeRO stage) ask for
    the same ones."""
    return sp.Max(*args, evaluate=False)


def largest_layer(
    sw: Switches, layers: sp.Expr | None = None, moe_layers: sp.Expr | None = None, kinds: dict | None = None
) -> sp.Expr:
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
    return _max(
        *(
            sp.Piecewise((layer_params(sw, moe, mixer, ffn) + (experts_params(sw) if moe else 0), held), (0, True))
            for moe, mixer, ffn, held in kind_cases(sw, layers, moe_layers, kinds)
        )
    )


def largest_unit(
    stage: str,
    sw: Switches = Switches(),
    layers: sp.Expr | None = None,
    moe_layers: sp.Expr | None = None,
    kinds: dict | None = None,
) -> sp.Expr:
    """Parameters of the largest unit a stage gathers or reduces at once: one layer, or its embedding / LM head."""
    ends = end_params(stage, sw)
    layer = largest_layer(sw, layers, moe_layers, kinds)
    return layer if ends == 0 else _max(layer, ends)


def fsdp_window(unit: sp.Expr, layer: sp.Expr, params: sp.Expr) -> sp.Expr:
    """Parameters Megatron-FSDP holds all-gathered at once: the unit being computed and the buckets its all-gather
    prefetches behind it until they reach max(AG_PREFETCH, a unit's) parameters, one more unit at most past that
    (AllGatherPipeline.all_gather_params in megatron_fsdp/param_and_grad_buffer.py, forward and backward order alike;
    a unit's own buckets released after it runs); the whole stage (`params`, experts included) where it is smaller."""
    return _window(params, 2 * unit, layer)


@functools.lru_cache(maxsize=None)
def _window(params: sp.Expr, units: sp.Expr, layer: sp.Expr) -> sp.Expr:
    """min(params, units + max(AG_PREFETCH, layer)), its Min and Max built unevaluated and remembered: evaluating them
    compares two stage-sized expressions symbolically (seconds each, 15 s of a test session), and the two bounds
    are not comparable for symbolic sizes anyway, so an evaluated Min keeps the same two arguments."""
    return sp.Min(params, units + sp.Max(AG_PREFETCH, layer, evaluate=False), evaluate=False)


def zero_buffers(
    stage: str,
    sw: Switches,
    layers: sp.Expr | None = None,
    moe_layers: sp.Expr | None = None,
    kinds: dict | None = None,
    params: sp.Expr | None = None,
) -> list[Component]:
    """ZeRO-2: the unsharded gradients of the unit being reduce-scattered; ZeRO-3 also the all-gathered weights of
    the unit being computed and of the prefetched next layer, or with `params` (the stage's parameters on one GPU:
    Megatron-LM's FSDP) Megatron-FSDP's prefetch window (fsdp_window); none below ZeRO-2."""
    parts = []
    unit = largest_unit(stage, sw, layers, moe_layers, kinds)
    if sw.sharded_grads:
        parts.append(
            Component(
                "grad_reduce_buffer",
                B_g * unit,
                "unsharded fp32 gradients of the layer (or embedding / LM head) whose reduce-scatter over d*c is in flight, "
                "B_g bytes per parameter (ZeRO-2/3: torch FSDP's per-module gradient in reduce_dtype fp32, DeepSpeed's "
                "reduce bucket, Megatron-LM FSDP's per-layer gradient buffer)",
            )
        )
    if sw.sharded_weights and params is not None:
        parts.append(
            Component(
                "params_gathered",
                B_w * fsdp_window(unit, largest_layer(sw, layers, moe_layers, kinds), params),
                "all-gathered bf16 weights Megatron-FSDP holds at once, B_w bytes per parameter: the unit being computed "
                "and the buckets prefetched behind it up to max(5e8, a layer's) parameters, the whole stage where it is "
                "smaller (megatron-core 0.16.1 megatron_fsdp.py: the communication unit floored at 1e9 elements, "
                "suggested_AG_prefetch_size half of it)",
            )
        )
    elif sw.sharded_weights:
        parts.append(
            Component(
                "params_gathered",
                B_w * (unit + largest_layer(sw, layers, moe_layers, kinds)),
                "all-gathered bf16 weights of the unit being computed and of the prefetched next layer, B_w bytes per "
                "parameter (ZeRO-3: torch FSDP's forward/backward prefetch of one module)",
            )
        )
    return parts
