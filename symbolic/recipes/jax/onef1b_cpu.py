"""The XLA:CPU rows of the 1F1B table (recipes.jax.onef1b): the copies XLA:CPU makes of the LM head, the residual
rings and one layer's weights for its fp32 dots, and the all-reduce at a tick's end where it sums the head's and the
lookup's gradients. Each read from XLA:CPU dumps, named in docs/accuracy.md under the row's name."""

from __future__ import annotations

import sympy as sp

from ...components.base import FP32, GROUPS
from ...config.switches import Switches
from ...config.symbols import B_a, B_g, b, c, d, h, s, t, v
from .buffers import Buffer
from .clock import K, TICK
from .params import N, linear_layers, one_layer, one_layer_dense, stack_layers
from .working import per_layer as layer_bytes, per_layer_fp32_kept
from .zero import tick_slices

# XLA:CPU writes the pending residuals into their ring and frees the slot's sliced residuals before a layer's
# attention backward, after its MLP's (evidence: docs/accuracy.md, BWD_CPU)
BWD_CPU = ("backward_weights",)
# the phases of a tick's loop over its layers (each step one layer's forward and another's backward)
LAYER_LOOP = ("forward", "backward_attention", "backward_weights")
# the last stage's loss, from its logits to its modules' backward (with MTP): XLA:CPU's lookup_grad_early
LOSS_CPU = ("loss", "loss_input_grad", "loss_head", "loss_modules")


def lookup_held(sw: Switches) -> sp.Expr:
    """1 where XLA:CPU holds the lookup gradient through the loss, else 0. Summed over d*c, the lookup's all-reduce
    joins the loss's (the head gradient's) at the tick's end, so the lookup's backward, whose input the layer loop
    has already made, runs before the loss and its output waits there; where d and c both split the batch without
    ZeRO-2/3, XLA reduces the head gradient over d and c one at a time, the lookup's all-reduce over both at once
    joins none and runs at once, before the loss; with d*c = 1 nothing to hold. Read in ten CPU dumps (evidence:
    docs/accuracy.md, lookup_held)."""
    if sw.sharded_grads:
        return sp.Piecewise((0, sp.Eq(GROUPS.zero_group, 1)), (1, True))
    return sp.Piecewise((0, sp.Eq(GROUPS.zero_group, 1)), (1, sp.Or(sp.Eq(d, 1), sp.Eq(c, 1))), (0, True))


def head_cast(sw: Switches) -> Buffer:
    """The LM head cast to compute dtype once a tick (XLA:CPU; XLA:GPU fuses the cast into the logits product)."""
    # XLA:CPU's copies of the LM head: the compute-dtype cast is freed at the last logits product (with MTP the
    # modules', after the model's), the fp32 widening after the head's last backward product; both before the
    # all-reduce at the tick's end (backward_embed) that sums the head and lookup gradients where the lookup's is held
    # (lookup_held); where it is not, that phase is the lookup's backward before the loss, both live
    # (head_copies_at_lookup; evidence: docs/accuracy.md, head_cast)
    cast_ticks = ("forward_embed", "forward", "backward_attention", "backward_weights") + (("loss",) if sw.mtp else ())
    return Buffer(
        "head_cast",
        (h, v / t),
        B_a,
        cast_ticks,
        (
            "the LM head [h, v/t] cast to compute dtype by XLA:CPU at the start of every tick, live to its last logits "
            "product (with MTP the modules'); at the logits product itself, head_cast_at_logits"
        ),
        backend="cpu",
    )


def _loss_rows(sw: Switches) -> tuple[Buffer, ...]:
    """The lookup gradient made before the loss where it is held, and what the all-reduce at the tick's end holds."""
    held = lookup_held(sw)
    # with one layer per stage, the fp32 width of its gradients held to the tick's all-reduce over d*c
    one_layer_held = sp.Piecewise((B_g, sp.And(sp.Eq(N, 1), sp.Ne(GROUPS.zero_group, 1))), (0, True))
    return (
        Buffer(
            "lookup_grad_early",
            (v / t, h),
            held * B_g,
            LOSS_CPU,
            "the fp32 lookup gradient [v/t, h] made "
            "before the loss and held through it for the all-reduce at the tick's end (lookup_held)",
            backend="cpu",
        ),
        *(
            [
                Buffer(
                    "head_grad_at_reduce",
                    (h / tick_slices(sw), v / t),
                    held * B_g,
                    ("backward_embed",),
                    "where the lookup gradient is held: the micro batch's fp32 head gradient (tick_slices: a ZeRO "
                    "shard of it) and its sum from the all-reduce it shares with the lookup's at the tick's end; with "
                    "MTP, recipes.jax.mtp's mtp_model_head_grad and mtp_grads_summed",
                    count=2,
                    backend="cpu",
                ),
                Buffer(
                    "layer_grads_held",
                    (one_layer_dense(sw),),
                    one_layer_held,
                    LOSS_CPU + ("backward_embed",),
                    "with one layer per stage (XLA removes the one-trip layer loop), the layer's fresh fp32 weight "
                    "gradients held through the loss to the all-reduce at the tick's end; none when d*c = 1; with MTP, "
                    "recipes.jax.mtp's mtp_tick_grads",
                    backend="cpu",
                ),
                Buffer(
                    "layer_grads_summed",
                    (one_layer_dense(sw),),
                    one_layer_held,
                    ("backward_embed",),
                    "their sums from that all-reduce, beside them",
                    backend="cpu",
                ),
                Buffer(
                    "head_copies_at_lookup",
                    (h, v / t),
                    (1 - held) * (B_a + FP32),
                    ("backward_embed",),
                    "where the "
                    "lookup gradient is not held, the head's compute-dtype cast and fp32 widening [h, v/t], live beside "
                    "the lookup's backward that runs before the loss",
                    backend="cpu",
                ),
            ]
            if not sw.mtp
            else []
        ),
    )


def _loop_rows(sw: Switches) -> tuple[Buffer, ...]:
    """The second copies of the rings, the slot's slices, the layer's and the head's widened weights, the logits
    gradient's transposed copy and the lookup gradient's sum."""
    return _ring_rows(sw) + _widened_rows(sw) + _head_rows(sw)


def _ring_rows(sw: Switches) -> tuple[Buffer, ...]:
    """The second copies of the residual rings (a hybrid's Gated DeltaNet rings too) and the slot's slices."""
    dense_layers = stack_layers(sw)[0]
    per_layer, per_layer_fp32 = layer_bytes(sw, sw.moe), per_layer_fp32_kept(sw, sw.moe)
    # a hybrid's Gated DeltaNet layer: all its residuals, and those already fp32
    gdn_all = layer_bytes(sw, sw.moe, True) if sw.gdn else sp.Integer(0)
    gdn_fp32 = per_layer_fp32_kept(sw, sw.moe, True) if sw.gdn else sp.Integer(0)
    return (
        Buffer(
            "ring_copies",
            (K, dense_layers),
            per_layer_fp32,
            LAYER_LOOP,
            "a second copy of the fp32 residual "
            "rings [K, L/p, ...] (the norms' fp32 inputs, outputs and rsqrt) that XLA:CPU makes in the layer loop "
            "and frees before the loss",
            backend="cpu",
        ),
        *(
            [
                Buffer(
                    "gdn_ring_copies",
                    (K, linear_layers(sw)),
                    gdn_fp32,
                    LAYER_LOOP,
                    "the same second copy of the Gated "
                    "DeltaNet layers' fp32 rings [K, L_g/p, ...] (the l2norms' inputs)",
                    backend="cpu",
                ),
                Buffer(
                    "gdn_slot_slice",
                    (linear_layers(sw),),
                    sp.Piecewise((0, sp.Eq(K, 1)), (gdn_all - gdn_fp32, True)),
                    BWD_CPU,
                    "the compute-dtype residuals of the Gated DeltaNet "
                    "layers' ring slot, sliced out at once as the attention layers' are; none with one slot (K = 1)",
                    backend="cpu",
                ),
            ]
            if sw.gdn
            else []
        ),
        Buffer(
            "slot_slice",
            (dense_layers,),
            sp.Piecewise((0, sp.Eq(K, 1)), (per_layer - per_layer_fp32, True)),
            BWD_CPU,
            "the compute-dtype residuals of the backward's ring slot, "
            "every layer's, sliced out at once by XLA:CPU and freed before the attention backward (BWD_CPU); none "
            "with one slot (K = 1: the ring is read in place)",
            backend="cpu",
        ),
    )


def _widened_rows(sw: Switches) -> tuple[Buffer, ...]:
    """One layer's weights widened to fp32 for XLA:CPU's dots: in backward, under full remat, hoisted."""
    return (
        Buffer(
            "layer_widened",
            (one_layer(sw),),
            FP32,
            ("backward_attention", "backward_weights"),
            "one layer's "
            "weights (an MoE layer's with its local experts) cast to compute dtype and converted back to fp32 for "
            "XLA:CPU's fp32 dots in the backward",
            backend="cpu",
        ),
        Buffer(
            "layer_widened_recompute",
            (one_layer(sw),),
            FP32 if sw.recompute == "full" else sp.Integer(0),
            ("backward_attention",),
            "full remat: the same layer's weights widened to fp32 a second time for the "
            "forward the backward recomputes, beside the backward's own",
            backend="cpu",
        ),
        Buffer(
            "layer_widened_hoisted",
            (one_layer(sw),),
            sp.Piecewise((FP32, sp.Eq(N, 1)), (0, True)),
            TICK,
            "with one layer per stage, that layer's weights widened to fp32 once for the whole step: XLA removes "
            "the one-trip layer loop and hoists the cast",
            backend="cpu",
        ),
    )


def _head_rows(sw: Switches) -> tuple[Buffer, ...]:
    """The logits gradient's transposed copy, soft-capped logits, the head widened to fp32 and its cast at
    the logits, and the lookup gradient's sum."""
    head_ticks = tuple(x for x in TICK if x != "backward_embed")
    return (
        Buffer(
            "logits_grad_transposed",
            (v / t, b * s / c),
            FP32,
            ("loss_head",),
            "the micro batch's fp32 logits gradient copied into [v/t, b s/c] by XLA:CPU for the head gradient's dot",
            backend="cpu",
        ),
        *(
            [
                Buffer(
                    "softcap_logits",
                    (2, b, s / c, v / t),
                    FP32,
                    ("loss_head",),
                    "with soft-capped logits (Gemma 2), "
                    "the fp32 tanh(logits / cap) [b, s/c, v/t] kept for its derivative and the logits gradient times "
                    "that derivative, beside the capped logits' gradient and its transposed copy",
                    backend="cpu",
                )
            ]
            if sw.logit_softcap
            else []
        ),
        Buffer(
            "head_widened",
            (h, v / t),
            FP32,
            head_ticks,
            "the compute-dtype head converted back to fp32 "
            "[h, v/t] for XLA:CPU's fp32 dots, live from the tick's start to the head's last backward product",
            backend="cpu",
        ),
        *(
            [
                Buffer(
                    "head_cast_at_logits",
                    (v / t,),
                    sp.Max(0, B_a * h - FP32 * b * s / c, evaluate=False),
                    ("loss",),
                    "at the logits product XLA:CPU holds the head's cast and the fp32 logits, at the "
                    "softmax's exp the logits and their exp (the logits row's two): what the first exceeds the "
                    "second by",
                    backend="cpu",
                )
            ]
            if not sw.mtp
            else []
        ),
        Buffer(
            "lookup_grad_summed",
            (v / t, h),
            B_g,
            ("backward_embed",),
            "the fp32 lookup gradient's sum over d*c "
            "[v/t, h], a buffer of its own beside its input; when d*c = 1 too (XLA:CPU keeps an all-reduce over "
            "one device)",
            backend="cpu",
        ),
    )


def rows(sw: Switches) -> tuple[Buffer, ...]:
    """XLA:CPU's own rows of a 1F1B tick (none on XLA:GPU's program: buffers.on keeps them apart)."""
    return _loss_rows(sw) + _loop_rows(sw)
