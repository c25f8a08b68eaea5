"""What the 1F1B clock (jaxcheck.model.onef1b) changes in the `jax` profile's buffer table: the GPipe rows that hold
every iteration ([m + p - 1, ...]) or every micro batch ([m, ...]) give way to what one tick carries, the residual
rings of K = min(m, p) slots, and the accumulators live through the whole loop."""
from __future__ import annotations

from dataclasses import replace

import sympy as sp

from ...config.switches import Switches
from ...config.symbols import B_a, B_g, b, c, d, h, m, p, s, s_p, t, v
from ...components.base import FP32, GROUPS
from .buffers import Buffer
from ...components.experts import experts_params
from .params import N, linear_layers, one_layer, one_layer_dense, stack_layers
from .gpipe import largest_layer, per_layer as layer_bytes, per_layer_fp32_kept
from .zero import expert_grad_shards, tick_slices

K = sp.Min(m, p, evaluate=False)  # residual ring slots per stage: the most loaded stage's in-flight micro batches
# phases of one tick: the first stage's lookup, the stages' forward, the last stage's loss (with MTP, its modules'
# backward after the heads', loss_modules), the stages' backward, the lookup's gradient; what the loop carries is
# live in all of them
TICK = ("forward_embed", "forward", "loss", "loss_input_grad", "loss_head", "loss_modules", "backward_attention",
        "backward_weights", "backward_embed")
# XLA:GPU (the H100 target, 132 SMs) computes an fp32 dot [M, K] x [K, N] whose output has fewer 128 x 128 tiles than
# SMs with a kernel that pads K, once K is long enough for the idle SMs to pay: K (SMS - tiles) >= SPLIT_WORK. Isolated
# dots bracket SPLIT_WORK in (192004, 200016] (128 tiles: K = 48001 unpadded, 50004 padded; 96 tiles: 4001 and 8001;
# 112 tiles: 8001 and 16001; at 64 tiles and fewer every K from 4001 was padded; from 132 tiles none up to 200001:
# benchmarks/vocab_pad_probe.py); docs/accuracy.md, "Vocabularies XLA:GPU pads"
SMS, SPLIT_WORK = 132, 196000
UPDATE = ("update", "update_gather")
BWD = ("backward_attention", "backward_weights")
# XLA:CPU writes the pending residuals into their ring and frees the slot's sliced residuals before a layer's
# attention backward, after its MLP's (grids/derive-1f1b.toml on CPU: tiny p4 none, dynamic-slice_convert_fusion.10-14
# die at 406-407 and the dynamic-update-slices of the rings run at 398-430, the attention backward at 451-458;
# tied-1024 t2 p2 selective alike)
BWD_CPU = ("backward_weights",)
# the phases of a tick's loop over its layers (each step one layer's forward and another's backward)
LAYER_LOOP = ("forward", "backward_attention", "backward_weights")
# the last stage's loss, from its logits to its modules' backward (with MTP): XLA:CPU's lookup_grad_early
LOSS_CPU = ("loss", "loss_input_grad", "loss_head", "loss_modules")
# GPipe's rows of every iteration or micro batch, and of its phase between forward and backward: no 1F1B buffer
GONE = ("stage_outputs", "embeddings", "output_grads", "iteration_grads", "iteration_grads_zeros", "relayout_copy",
        "head_grad_zeros", "head_grad_kept", "embed_grad_shard", "stacks_widened", "iteration_slice")


def dot_tiles() -> sp.Expr:
    """Output tiles of 128 x 128 of the product of the fp32 logits gradient [b s/c, v/t] with the head [h, v/t]."""
    return sp.ceiling(b * s / (c * 128)) * sp.ceiling(h / 128)


# the multiple XLA:GPU pads v/t to when it splits that product, by the product's output tiles: 8 from 64, 16 from 32,
# 32 below (isolated dots: the fewer the tiles, the more ways K is split; at very long K a few columns more)
VOCAB_GRAINS = ((8, 64, SMS), (16, 32, 64), (32, 0, 32))


def vocab_padded(grain: int, low: int, high: int) -> sp.Boolean:
    """Whether XLA:GPU pads v/t to a multiple of `grain` (VOCAB_GRAINS): the product has from `low` to `high` - 1
    output tiles (fewer than SMS), v/t is long enough for it to split (v/t (SMS - tiles) >= SPLIT_WORK), and `grain`
    does not divide v/t. Read on the H100 target; an A100's bound differs (1024 x 1536 with v/t = 20001 unpadded
    there, padded on the H100). One flat conjunction, so that its printed form breaks between its terms."""
    tiles = dot_tiles()
    return sp.And(tiles >= low, tiles < high, v / t * (SMS - tiles) >= SPLIT_WORK,
                  sp.Ne(v / t, grain * sp.ceiling(v / (grain * t))))


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


def in_flight() -> sp.Expr:
    """Micro batches whose residuals every stage's ring holds: K = min(m, p), rank 0's 1F1B count (rank r needs
    min(m, p - r); one SPMD program has one shape on every device)."""
    return K


def rows(gpipe: tuple[Buffer, ...], sw: Switches, stream: tuple, shard: sp.Expr,
         per_layer: sp.Expr, per_layer_fp32: sp.Expr = sp.Integer(0)) -> tuple[Buffer, ...]:
    """The 1F1B table from the GPipe one: its per-layer and per-micro-batch working sets as they are, its stacks of
    every iteration as rings of K slots, its accumulators live through the loop, and what a tick adds (stream: one
    micro batch's [b, s, h] between blocks; shard: ways gradients are split;
    per_layer: one layer's residuals of one micro batch)."""
    dense_layers, moe_layers = stack_layers(sw)
    loop = TICK + UPDATE
    # XLA:CPU's copies of the LM head: the compute-dtype cast is freed at the last logits product (with MTP the
    # modules', after the model's), the fp32 widening after the head's last backward product; both before the
    # all-reduce at the tick's end (backward_embed) that sums the head and lookup gradients where the lookup's is held
    # (lookup_held; grids/derive-mtp-cpu.toml's six mtp-mimo-1024 steps, holdout-cpu-1f1b-2's two-layer d2 p2 c2
    # zero3: wrapped_convert.19 bf16[2048,65536] 175-611, the logits at 611; convert_convert_fusion.8 f32 174-626,
    # the all-reduce at 627); where it is not, that phase is the lookup's backward before the loss, both live
    # (head_copies_at_lookup)
    cast_ticks = ("forward_embed", "forward", "backward_attention", "backward_weights") + (("loss",) if sw.mtp else ())
    head_ticks = tuple(x for x in TICK if x != "backward_embed")
    held = lookup_held(sw)
    # with one layer per stage, the fp32 width of its gradients held to the tick's all-reduce over d*c
    one_layer_held = sp.Piecewise((B_g, sp.And(sp.Eq(N, 1), sp.Ne(GROUPS.zero_group, 1))), (0, True))
    # a hybrid's Gated DeltaNet layer: all its residuals, and those already fp32
    gdn_all = layer_bytes(sw, sw.moe, True) if sw.gdn else sp.Integer(0)
    gdn_fp32 = per_layer_fp32_kept(sw, sw.moe, True) if sw.gdn else sp.Integer(0)
    change = {
        "residual_stacks": lambda row: replace(row, shape=(K, dense_layers), phases=TICK, doc=(
            f"every layer's residuals ({sw.recompute} remat) for K = min(m, p) micro batches, rings [K, L/p, ...] "
            "written by a stage's forward into slot i mod K, read by its backward (dense layers: (L - L_e)/p)")),
        "moe_residual_stacks": lambda row: replace(row, shape=(K, moe_layers), phases=TICK, doc=(
            f"every MoE layer's residuals ({sw.recompute} remat) for K micro batches, rings [K, L_e/p, ...]")),
        "gdn_residual_stacks": lambda row: replace(row, shape=(K, linear_layers(sw)), phases=TICK, doc=(
            f"every Gated DeltaNet layer's residuals ({sw.recompute} remat) for K micro batches, rings [K, L_g/p, "
            "...]")),
        "lookup_partial": lambda row: replace(row, shape=row.shape[1:], doc=(
            "one micro batch's vocab-parallel lookup partial sums [b, s/c, h] before their sum over t")),
        "stage_buffer": lambda row: replace(row, phases=TICK, doc=(
            "the stage buffers the loop carries from tick to tick: every stage's forward output and backward "
            "cotangent [b, s, h]")),
        "head_grad": lambda row: replace(row, width=B_g, phases=loop, doc=(
            "fp32 accumulator of the LM head's gradient (of the embedding's when tied), each tick's added in place "
            "and kept to the AdamW update")),
        "embed_grad": lambda row: replace(row, shape=(v / (t * shard), h), phases=loop, doc=(
            "fp32 accumulator of the embedding's gradient, the lookup's of each micro batch added as stage 0's "
            "backward reaches it (ZeRO-2/3: reduce-scattered over d*c into it)")),
        "positions_grad": lambda row: replace(row, shape=(s_p / shard, h), phases=loop, doc=(
            "fp32 accumulator of the learned positions' gradient, each micro batch's added with the embedding's "
            "(ZeRO-2/3: reduce-scattered over d*c into it)")),
        "block_grads": lambda row: replace(row, phases=loop),
        "expert_layer_grads": lambda row: replace(row, width=B_g, doc=(
            "one MoE layer's local experts' weight gradients in param dtype, whole: under 1F1B a stage's gradients "
            "are selected to zero where it ran no backward (jaxcheck.model.onef1b._masked), which XLA:GPU does on the "
            "whole fp32 gradient before ZeRO-2/3's reduce-scatter (grids/derive-1f1b-ep-zero.toml's moe2-top1-1024 "
            "d4 e2 p4 selective zero3: loop_select_fusion.23-25 f32[1,16,1024,2048] x 3, the step's peak; and at "
            "L/p = 2, d2 e2 p2 none zero2: loop_select_fusion.7-9 f32[16,1024,2048] x 3)"))
        if sw.sharded_grads else row,
        "embed_gathered": lambda row: replace(row, phases=TICK),
        "head_cast": lambda row: replace(row, width=B_a, phases=cast_ticks, doc=(
            "the LM head cast to compute dtype at the start of every tick and live to its last logits product "
            "(XLA:CPU; llama3-8b d2 t2 p2 c2 full zero1 on CPU: wrapped_convert.21 bf16[4096,64128] 171-695, the "
            "logits at 695; with MTP the modules' logits: derive-mtp's mtp-v3-768 d2 t2 p1: wrapped_convert.125 "
            "747-3220); at the logits product itself, head_cast_at_logits")),
        "head_gathered": lambda row: replace(row, phases=TICK),
    }
    out = [change.get(row.name, lambda x: x)(row) for row in gpipe if row.name not in GONE]
    if sw.moe and sw.sharded_grads:  # ZeRO-2/3: the masked expert gradient's shard, made beside it
        out.append(Buffer("expert_grad_shard", (experts_params(sw) / (3 * expert_grad_shards(sw)),),
                          sp.Piecewise((0, sp.Eq(expert_grad_shards(sw), 1)), (B_g, True)),
                          ("backward_weights",), "one expert weight's gradient sliced to this rank's expert "
                          "data-parallel shard before it joins the accumulator, while the masked whole gradients "
                          "exist (moe2-top1-1024 d4 e2 p4 zero3: loop_dynamic_slice_fusion.10 f32[1,8,1024,2048]); "
                          "none when that group is one rank (nothing to slice)"))
    micro = [] if sw.sharded_grads else [  # with ZeRO-2/3, recipes.jax.zero's head_grad_micro
        Buffer("head_grad_micro", (h, v / t), B_g, ("loss_head",), "one micro batch's fp32 gradient of the LM head "
               "[h, v/t], made whole before it joins the accumulator (llama3-8b d2 t1 p4 none zero1: "
               "gemm_fusion_dot.98 f32[4096,128256] beside the logits gradient, the step's peak)")]
    return tuple(out) + (*micro,
        Buffer("logits_grad", (b, s / c, v / t), FP32, ("loss_input_grad", "loss_head"), "the micro batch's fp32 "
               "logits gradient, the input of the last stage's cotangent and of the head gradient's product (same "
               "dump: input_scatter_fusion.1 f32[1,2048,128256])"),
        *(Buffer("vocab_padded" + ("" if grain == 8 else f"_{grain}"),
                 (b * s / c + h, grain * sp.ceiling(v / (grain * t))),
                 sp.Piecewise((FP32, vocab_padded(grain, low, high)), (0, True)), ("loss_input_grad",),
                 "a vocabulary XLA:GPU pads: where it splits the cotangent's dot over v/t (few output tiles, long "
                 "v/t), it pads both operands, the logits gradient [b s/c, v/t] and the head [h, v/t], in fp32, to a "
                 "multiple of 8 from 64 output tiles, 16 from 32 and 32 below, one row each (VOCAB_GRAINS; "
                 "grids/derive-1f1b-ep-zero.toml's moe3-derive-vocab-40002-1024 d4 e2 p2 full zero3: loop_pad_fusion "
                 "and loop_pad_fusion.1 f32[1024,40016], the step's peak; grids/derive-vocab.toml's moe-top1-768 d2 "
                 "e2 t2 p2 full zero3, v/t = 25000 at 48 tiles: f32[1024,25008] and f32[768,25008]); none when the "
                 "multiple divides v/t or XLA does not split the dot", backend="gpu")
          for grain, low, high in VOCAB_GRAINS),
        *(Buffer("head_shard_padded" + ("" if grain == 8 else f"_{grain}"), (h / GROUPS.zero_group, v / t),
                 sp.Piecewise((B_g, sp.And(sp.Eq(t, 1), vocab_padded(grain, low, high))), (0, True)),
                 ("loss_input_grad",), "ZeRO-2/3 at t = 1: beside the padded operands, the micro batch's head-gradient "
                 "shard [h/(d c), v/t] in fp32, which XLA:GPU makes while they are live, one row per padding multiple "
                 "(grids/derive-vocab-2.toml's vocab-derive-30001-1024 d2 p2 zero2 and zero3: gemm_fusion_dot.108 and "
                 ".127 f32[512,30001] at the step's peak beside loop_pad_fusion and .1; not at ZeRO-1, nor at t = 2: "
                 "vocab-derive-30002-1792 d2 t2 p2 zero2 and zero3)", backend="gpu")
          for grain, low, high in (VOCAB_GRAINS if sw.sharded_grads else ())),
        *([Buffer("softcap_head_cast", (v / t, h), B_a, ("loss_input_grad",), "with soft-capped logits (Gemma 2), "
                  "the LM head cast to compute dtype once more for the cotangent's product, a buffer of its own "
                  "(grids/derive-gemma2.toml's gemma2-1536 d2 p2 c2 none zero2 and d4 p3 full zero2: "
                  "loop_convert_fusion.4 and .5 bf16[32768,1536], transpose(jvp())/convert_element_type)",
                  backend="gpu")] if sw.logit_softcap else []),
        Buffer("pending_residuals", (), largest_layer(sw) if sw.gdn else per_layer,
               BWD_CPU if sw.backend == "cpu" else BWD, "the residuals of "
               "the layer whose forward ran in this step of the layer loop, written into their ring slot once the "
               "backward's layer is done (jaxcheck.model.onef1b: the write waits for the backward's reads; XLA:CPU "
               "writes them before the attention backward, BWD_CPU)"),
        Buffer("stage_shift", stream, B_a, ("forward", "backward_attention", "backward_weights"), "a stage buffer "
               "shifted one stage by the collective-permute, beside the buffer it came from"),
        Buffer("lookup_grad", (v / t, h), B_g, ("backward_embed",), "one micro batch's gradient of the local "
               "embedding rows [v/t, h], scatter-added into zeros by the lookup's backward before it joins the "
               "accumulator"),
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
