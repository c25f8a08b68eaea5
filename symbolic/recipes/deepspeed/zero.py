"""DeepSpeed ZeRO with bf16 ({"bf16": {"enabled": true}}), buffer by buffer (deepspeedai/DeepSpeed edaa7221:
runtime/zero/stage_1_and_2.py DeepSpeedZeroOptimizer for stages 1 and 2, runtime/zero/stage3.py for stage 3,
runtime/zero/config.py for the bucket defaults)."""

from __future__ import annotations

import sympy as sp

from ...config.switches import Switches
from ...config.symbols import B_g, B_o, B_w, h, t, v
from ...components.base import FP32, GROUPS, Component
from ...components.weights import default_layers, layer_params
from ...components.zero import largest_layer, largest_unit

REDUCE_BUCKET = sp.Integer(500_000_000)  # reduce_bucket_size: 5e8 elements (zero/config.py)
PREFETCH_BUCKET = sp.Integer(50_000_000)  # stage3_prefetch_bucket_size: 5e7 elements (zero/config.py; docs say 5e8)
SUB_GROUP = sp.Integer(1_000_000_000)  # sub_group_size: 1e9 elements per optimizer sub-group (zero/config.py)


def states(params: sp.Expr, sw: Switches) -> list[Component]:
    """bf16 weights (sharded at stage 3), the gradients in grad_accum_dtype (unset: the model's dtype, bf16; kept
    whole until the step at stage 1, partitioned from stage 2), and the fp32 master partition with Adam's fp32
    moments. Stage 1 with fp32 gradients (B_g > B_w) is DeepSpeed's BF16_Optimizer (engine.py's sanity check):
    a whole fp32 gradient buffer beside autograd's whole bf16 .grad, and no partition copy (bf16_optimizer.py)."""
    n = GROUPS.zero_group
    weights = B_w * params / n if sw.sharded_weights else B_w * params
    grads = B_g * params / n if sw.sharded_grads else B_g * params
    parts = [
        Component(
            "weights",
            weights,
            "bf16 model weights, B_w bytes per parameter (bit16_groups_flat; sharded over d*c at stage 3)",
        ),
        Component(
            "gradients",
            grads,
            "gradients, B_g bytes per parameter: whole until the step at stage 1 (with fp32 "
            "ones: BF16_Optimizer's flat fp32 buffer), the rank's reduced partition from stage 2",
        ),
        Component(
            "optimizer",
            B_o * params / n,
            "fp32 master partition (single_partition_of_fp32_groups) and Adam "
            "exp_avg, exp_avg_sq over it, B_o bytes per parameter, 1/(d c) each",
        ),
    ]
    if sw.dist_opt and not sw.sharded_grads:
        upcast = B_g > B_w  # grad_accum_dtype fp32: BF16_Optimizer
        parts += [
            Component(
                "grad_partition",
                sp.Piecewise((0, upcast), (B_g * params / n, True)),
                "the bf16 copy of this rank's gradient slice that stage 1 reduces into before the step "
                "(DeepSpeedZeroOptimizer grads_in_partition; none under BF16_Optimizer)",
            ),
            Component(
                "lp_grads",
                sp.Piecewise((B_w * params, upcast), (0, True)),
                "BF16_Optimizer: autograd's whole bf16 .grad, added into the fp32 buffer at the boundary "
                "(immediate_grad_update off, its default)",
            ),
        ]
    return parts


def buffers(stage: str, params: sp.Expr, sw: Switches, layers: sp.Expr | None = None) -> list[Component]:
    """The independent-partition gradient (ipg) bucket every stage fills for its reductions, and at stage 3 the
    all-gathered weights of the module being computed with the prefetched ones."""
    parts = [
        Component(
            "reduce_bucket",
            B_g * sp.Min(params, REDUCE_BUCKET, evaluate=False),
            "one reduce bucket of reduce_bucket_size = 5e8 elements in the communication dtype bf16 "
            "(overlap_comm off at stages 1 and 2, its default there: one buffer)",
        )
    ]
    if sw.sharded_weights:
        parts.append(_gathered(stage, sw, layers))
    return parts


def _gathered(stage: str, sw: Switches, layers: sp.Expr | None) -> Component:
    """ZeRO-3's gathered bf16 weights: the module being computed (with zero.Init, or under full recompute, which saves
    no weight of a layer), else every layer's and the head's kept to their backward; with the prefetched parameters."""
    if sw.zero_init or sw.recompute == "full":
        held = largest_unit(stage, sw, layers, None if layers is None else sp.Integer(0))
        doc = (
            "the all-gathered bf16 weights of the module being computed and up to "
            "stage3_prefetch_bucket_size = 5e7 prefetched parameters of the next"
        )
    else:
        held = (default_layers(stage)[0] if layers is None else layers) * layer_params(sw) + (
            h * v / t if stage in ("last", "only") else 0
        )
        doc = (
            "every layer's and the LM head's gathered bf16 weights, kept from their forward to their "
            "backward: without deepspeed.zero.Init ZeRO-3's memory-efficient linear is not "
            "installed, and F.linear saves the gathered weight (its partitioned 'release' leaves "
            "that storage alive; full recompute saves none), with the prefetched parameters"
        )
    prefetch = sp.Min(largest_layer(sw), PREFETCH_BUCKET, evaluate=False)
    return Component("params_gathered", B_w * (held + prefetch), doc)


def optimizer_step(params: sp.Expr, sw: Switches, backward: sp.Expr) -> Component:
    """The optimizer step's temporaries beyond what the backward holds (the activations are freed by then), so that
    the total is the larger of the two moments: stage 3 flattens a sub-group's bf16 gradients and casts them to fp32
    (sub_group_size elements, B_g + 4 bytes each: stage3.py), stages 1 and 2 an fp32 copy of the rank's gradient
    slice (stage_1_and_2.py)."""
    n = GROUPS.zero_group
    step = (B_g + FP32) * sp.Min(params / n, SUB_GROUP, evaluate=False) if sw.sharded_weights else FP32 * params / n
    return Component(
        "optimizer_step",
        sp.Max(0, step - backward),
        "the step's gradient copies (stage 3: one sub-group of sub_group_size = 1e9 elements "
        "in bf16 and fp32; stages 1-2: the fp32 slice) beyond the backward's tensors: the total is the "
        "larger moment",
    )
