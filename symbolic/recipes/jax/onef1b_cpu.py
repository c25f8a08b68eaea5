"""The XLA:CPU rows of the 1F1B table (recipes.jax.onef1b): the copies XLA:CPU makes of the LM head, the residual
rings and one layer's weights for its fp32 dots, and the all-reduce at a tick's end where it sums the head's and the
lookup's gradients. Each read from an XLA:CPU dump named in its doc."""
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
# attention backward, after its MLP's (grids/derive-1f1b.toml on CPU: tiny p4 none, dynamic-slice_convert_fusion.10-14
# die at 406-407 and the dynamic-update-slices of the rings run at 398-430, the attention backward at 451-458;
# tied-1024 t2 p2 selective alike)
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
    joins none and runs at once, before the loss. Read in ten CPU dumps: held in derive-1f1b's moe-mixtral-1024 d2
    p2, llama3-8b d2 p4 and llama2-7b d2 t2 p2 zero3, derive-hybrid's qwen3.5-moe-768 d4 p1 zero2, derive-gemma2's
    gemma2-1536 d4 p3 zero2, derive-mtp's mtp-v3-768 d2 t2 p1, holdout-1f1b-2's two-layer d1 p2 c4 and
    holdout-cpu-1f1b-2's two-layer d2 p2 c2 zero3 (all-reduce.237, the head's and the lookup's together); run at
    once in derive-1f1b's llama3-8b d2 t2 p2 c2 zero1 (psum_invariant.17 over d*c, the head's all-reduce.277 over d
    and .278 over c) and holdout-cpu-3's gpt2 d2 p2 c2 zero1; with d*c = 1 nothing to hold (tiny d1 p1, tied-1024
    d1 t2 p2: the lookup's gradient joins its accumulator before the logits)."""
    if sw.sharded_grads:
        return sp.Piecewise((0, sp.Eq(GROUPS.zero_group, 1)), (1, True))
    return sp.Piecewise((0, sp.Eq(GROUPS.zero_group, 1)), (1, sp.Or(sp.Eq(d, 1), sp.Eq(c, 1))), (0, True))


def head_cast(sw: Switches) -> Buffer:
    """The LM head cast to compute dtype once a tick (XLA:CPU; XLA:GPU fuses the cast into the logits product)."""
    # XLA:CPU's copies of the LM head: the compute-dtype cast is freed at the last logits product (with MTP the
    # modules', after the model's), the fp32 widening after the head's last backward product; both before the
    # all-reduce at the tick's end (backward_embed) that sums the head and lookup gradients where the lookup's is held
    # (lookup_held; grids/derive-mtp-cpu.toml's six mtp-mimo-1024 steps, holdout-cpu-1f1b-2's two-layer d2 p2 c2
    # zero3: wrapped_convert.19 bf16[2048,65536] 175-611, the logits at 611; convert_convert_fusion.8 f32 174-626,
    # the all-reduce at 627); where it is not, that phase is the lookup's backward before the loss, both live
    # (head_copies_at_lookup)
    cast_ticks = ("forward_embed", "forward", "backward_attention", "backward_weights") + (("loss",) if sw.mtp else ())
    return Buffer("head_cast", (h, v / t), B_a, cast_ticks, (
        "the LM head cast to compute dtype at the start of every tick and live to its last logits product "
        "(XLA:CPU; llama3-8b d2 t2 p2 c2 full zero1 on CPU: wrapped_convert.21 bf16[4096,64128] 171-695, the "
        "logits at 695; with MTP the modules' logits: derive-mtp's mtp-v3-768 d2 t2 p1: wrapped_convert.125 "
        "747-3220); at the logits product itself, head_cast_at_logits"), backend="cpu")


def _loss_rows(sw: Switches) -> tuple[Buffer, ...]:
    """The lookup gradient made before the loss where it is held, and what the all-reduce at the tick's end holds."""
    held = lookup_held(sw)
    # with one layer per stage, the fp32 width of its gradients held to the tick's all-reduce over d*c
    one_layer_held = sp.Piecewise((B_g, sp.And(sp.Eq(N, 1), sp.Ne(GROUPS.zero_group, 1))), (0, True))
    return (
        Buffer("lookup_grad_early", (v / t, h), held * B_g, LOSS_CPU, "the same lookup gradient made before the "
               "loss and held through it for the all-reduce at the tick's end (lookup_held; grids/derive-hybrid.toml's "
               "qwen3.5-moe-768 d4 e2 p1 full zero2: wrapped_scatter.22 f32[24576,768] live 3003-3030, the logits "
               "from 3009, the step's peak at 3023; derive-1f1b's moe-mixtral-1024 d2 e2 p2: wrapped_scatter.8 "
               "720-747 around the logits at 726)", backend="cpu"),
        *([Buffer("head_grad_at_reduce", (h / tick_slices(sw), v / t), held * B_g, ("backward_embed",),
                  "where the lookup gradient is held: the micro batch's fp32 head gradient (tick_slices: a ZeRO "
                  "shard of it) and its sum from the all-reduce it shares with the lookup's at the tick's end "
                  "(holdout-cpu-1f1b-2's two-layer d2 p2 c2 zero3: all-reduce.237 of ynn_fusion.14 and "
                  "wrapped_scatter.1, f32[65536,2048] each, with its two outputs the step's peak); with MTP, "
                  "recipes.jax.mtp's mtp_model_head_grad and mtp_grads_summed", count=2, backend="cpu"),
           Buffer("layer_grads_held", (one_layer_dense(sw),), one_layer_held, LOSS_CPU + ("backward_embed",),
                  "with one layer per stage, whose one-trip layer loop XLA removes, the layer's fresh fp32 weight "
                  "gradients wait for the all-reduce at the tick's end, through the loss (holdout-cpu-1f1b's "
                  "two-layer d2 p2 b2 selective zero2: convert_bitcast_fusion.3, .4, .6 f32[5504,2048] live 287-567 "
                  "across the logits at 546); none when d*c = 1; with MTP, recipes.jax.mtp's mtp_tick_grads",
                  backend="cpu"),
           Buffer("layer_grads_summed", (one_layer_dense(sw),), one_layer_held, ("backward_embed",),
                  "their sums from that all-reduce, beside them", backend="cpu"),
           Buffer("head_copies_at_lookup", (h, v / t), (1 - held) * (B_a + FP32), ("backward_embed",), "where the "
                  "lookup gradient is not held, its backward runs before the loss, beside the head's compute-dtype "
                  "cast and fp32 widening (derive-1f1b's llama3-8b d2 t2 p2 c2 full zero1: psum_invariant.17 at 690, "
                  "the step's peak, wrapped_convert.21 and convert_convert_fusion.15 live; tiny d1 p1: "
                  "wrapped_scatter.1 at 652, the head's copies live to 660 and 675)", backend="cpu")]
          if not sw.mtp else []),
    )


def _loop_rows(sw: Switches) -> tuple[Buffer, ...]:
    """The second copies of the rings, the slot's slices, the layer's and the head's widened weights, the logits
    gradient's transposed copy and the lookup gradient's sum."""
    dense_layers = stack_layers(sw)[0]
    per_layer, per_layer_fp32 = layer_bytes(sw, sw.moe), per_layer_fp32_kept(sw, sw.moe)
    # a hybrid's Gated DeltaNet layer: all its residuals, and those already fp32
    gdn_all = layer_bytes(sw, sw.moe, True) if sw.gdn else sp.Integer(0)
    gdn_fp32 = per_layer_fp32_kept(sw, sw.moe, True) if sw.gdn else sp.Integer(0)
    head_ticks = tuple(x for x in TICK if x != "backward_embed")
    return (
        Buffer("ring_copies", (K, dense_layers), per_layer_fp32, LAYER_LOOP, "a second copy of the fp32 residual "
               "rings (the norms' fp32 inputs, outputs and rsqrt) that XLA:CPU makes in the layer loop and frees "
               "before the loss (llama3-8b d2 t1 p4 none zero1 on CPU: copy.293 of copy.227's ring, both "
               "f32[1,4,8,1,2048,4096], live together at 313-390 and 350-409, the loss from 687)", backend="cpu"),
        *([Buffer("gdn_ring_copies", (K, linear_layers(sw)), gdn_fp32, LAYER_LOOP, "the same second copy of the Gated "
                  "DeltaNet layers' fp32 rings (grids/derive-hybrid.toml's qwen3.5-1024 d2 t2 p2 none on CPU: "
                  "copy.1115 and copy.1118 f32[1,2,3,1,2048,4,64], the l2norms' inputs)", backend="cpu"),
           Buffer("gdn_slot_slice", (linear_layers(sw),), sp.Piecewise((0, sp.Eq(K, 1)), (gdn_all - gdn_fp32, True)),
                  BWD_CPU, "the compute-dtype residuals of the Gated DeltaNet "
                  "layers' ring slot, sliced out at once as the attention layers' are (same dump: "
                  "dynamic-slice_convert_fusion.22-26 bf16[1,1,3,1,2048,1408])", backend="cpu")]
          if sw.gdn else []),
        Buffer("slot_slice", (dense_layers,), sp.Piecewise((0, sp.Eq(K, 1)), (per_layer - per_layer_fp32, True)),
               BWD_CPU, "the compute-dtype residuals of the backward's ring slot, "
               "every layer's, sliced out at once by XLA:CPU (same dump: dynamic-slice_convert_fusion.2 "
               "bf16[1,1,8,1,2048,14336] and its five siblings, live through the backward's layer loop, freed "
               "before the attention backward: BWD_CPU); none with "
               "one slot (K = 1: tiny d1 t1 p1 none reads its ring in place)", backend="cpu"),
        Buffer("layer_widened", (one_layer(sw),), FP32, ("backward_attention", "backward_weights"), "one layer's "
               "weights (an MoE layer's with its local experts) cast to compute dtype and converted back to fp32 for "
               "XLA:CPU's fp32 dots in the backward (moe-mixtral-1024 d2 e2 p2 full zero1 on CPU: "
               "convert_bitcast_fusion.23-25 f32[4,2816,1024] x 3 beside the sliced experts; llama3-8b d2 p4 none: "
               "convert_bitcast_fusion.25-28 f32[4096,14336] x 3)", backend="cpu"),
        Buffer("layer_widened_recompute", (one_layer(sw),), FP32 if sw.recompute == "full" else sp.Integer(0),
               ("backward_attention",), "full remat: the same layer's weights widened a second time for the forward "
               "the backward recomputes, beside the backward's own (gqa-5120 t8 p2 full zero1 on CPU: "
               "convert_bitcast_fusion.29-31 f32[5120,1728] x 3 and .16, .19 of the recomputed forward, live with "
               "wrapped_dynamic-slice.7-9 and the backward's)", backend="cpu"),
        Buffer("layer_widened_hoisted", (one_layer(sw),), sp.Piecewise((FP32, sp.Eq(N, 1)), (0, True)), TICK,
               "with one layer per stage, that layer's weights widened once for the whole step: XLA removes the "
               "one-trip layer loop and hoists the cast (three-layer t2 p3 c2 selective on CPU: "
               "convert_convert_fusion.2-4 f32[1,1,1536,2048], live from the step's start to its end)", backend="cpu"),
        Buffer("logits_grad_transposed", (v / t, b * s / c), FP32, ("loss_head",), "the micro batch's fp32 logits "
               "gradient copied into [v/t, b s/c] for the head gradient's dot (llama3-8b d2 p4 none on CPU: "
               "copy_bitcast_fusion.27 f32[128256,2048] of wrapped_scatter; three-layer t2 p3 c2: "
               "copy_bitcast_fusion.8 f32[16384,2048], at the step's peak)", backend="cpu"),
        *([Buffer("softcap_logits", (2, b, s / c, v / t), FP32, ("loss_head",), "with soft-capped logits (Gemma 2), "
                  "the fp32 tanh(logits / cap) kept for its derivative and the logits gradient times that "
                  "derivative, beside the capped logits' gradient and its transposed copy (grids/derive-gemma2.toml's "
                  "gemma2-1536 d2 t2 selective zero1 on CPU: multiply_tanh_fusion.3 and multiply_bitcast_fusion "
                  "f32[2048,16384] at the step's peak)", backend="cpu")] if sw.logit_softcap else []),
        Buffer("head_widened", (h, v / t), FP32, head_ticks, "the compute-dtype head converted back to fp32 for "
               "XLA:CPU's fp32 dots, live from the tick's start to the head's last backward product (same dump: "
               "convert_convert_fusion.15 f32[4096,64128] 170-710, the logits gradient's dots at 709-710)",
               backend="cpu"),
        *([Buffer("head_cast_at_logits", (v / t,), sp.Max(0, B_a * h - FP32 * b * s / c, evaluate=False),
                  ("loss",), "at the logits product XLA:CPU holds the head's cast and the fp32 logits, at the "
                  "softmax's exp the logits and their exp (the logits row's two): what the first exceeds the "
                  "second by (llama3-8b d2 t2 p2 c2: wrapped_convert.21 freed at the logits' ynn_fusion.55, 695, "
                  "subtract_exponential_fusion.5 at 701)", backend="cpu")] if not sw.mtp else []),
        Buffer("lookup_grad_summed", (v / t, h), B_g, ("backward_embed",), "the lookup gradient's sum over d*c, a "
               "buffer of its own beside its input (same dump: psum_invariant.17 f32[64128,4096], the all-reduce of "
               "wrapped_scatter.1, the step's peak); when d*c = 1 too, an all-reduce over one device XLA:CPU keeps "
               "(holdout-cpu-1f1b's three-layer d1 p3 selective: psum_invariant.18 f32[32768,1536] beside "
               "wrapped_scatter.1 at 532, the step's peak; derive-1f1b's tiny d1 p1: psum_invariant.13)",
               backend="cpu"),
    )


def rows(sw: Switches) -> tuple[Buffer, ...]:
    """XLA:CPU's own rows of a 1F1B tick (none on XLA:GPU's program: buffers.on keeps them apart)."""
    return _loss_rows(sw) + _loop_rows(sw)
