"""GPipe's temporaries in jaxcheck's step (the schedule that --schedule gpipe compiles, and the rows 1F1B's clock
rewrites: recipes.jax.onef1b): each row a buffer with the phases it is live in, read from XLA's buffer-assignment
dumps of grids/derive.toml (its derivation in the row's doc and in docs/jaxcheck.md)."""
from __future__ import annotations

import sympy as sp

from ...components import FP32
from ...components.experts import experts_params
from ...components.weights import final_norm_params, layer_params
from ...config.switches import Switches
from ...config.symbols import B_a, B_g, B_w, a, b, c, d_gk, d_gv, h, m, n_gv, p, s, s_p, t, v
from ...components.gdn import CHUNK as GDN_CHUNK
from . import moe as jaxmoe, zero as jaxzero
from .buffers import PHASES, Buffer
from .params import N, gdn_layer_params, linear_layers, moe_layer_params, one_layer, one_layer_dense, stack_layers
from .step import FLASH_BLOCK
from .tensors import head_widths, layer_tensors, out_width, scores, tokens

I = m + p - 1  # iterations of the GPipe loop
ALL = PHASES
FLASH_FWD_BYTES = 2 * FP32  # fp32 masked scores and exp(scores - max) of one key block
FLASH_BWD_BYTES = 3 * FP32  # fp32 probabilities and the dK, dV products of one key block (XLA's transposed layout)
# XLA:CPU holds two fp32 arrays of a key block in the flash backward, the probabilities and their product with dO, and
# the latter cast to compute dtype for the dK product: all three live at once in tests/test_verify.py's shape (s 128,
# full remat: ynn_fusion.44 f32[2,128,384], subtract_exponential_fusion.3, convert_bitcast_fusion.20 bf16[2,384,128]);
# in grids/derive-1f1b.toml's tiny p4 none and tied-1024 t2 p2 selective the cast follows the first array's end
# (ynn_fusion.3 f32[4,128,2048] to 456, subtract_exponential_fusion.1 456-458, the bf16 cast 458-459)
FLASH_BWD_BYTES_CPU = 2 * FP32 + B_a


def per_layer(sw: Switches, moe: bool = False, gdn: bool = False) -> sp.Expr:
    """One layer's residuals for one micro batch, in bytes (the sum of tensors.layer_tensors; gdn: a Gated DeltaNet
    layer's)."""
    return sp.Add(*(x.expr for x in layer_tensors(sw, moe, gdn)))


def _per_layer_fp32(sw: Switches, moe: bool = False, gdn: bool = False) -> sp.Expr:
    """One layer's residuals with every compute-dtype tensor widened to fp32 (as XLA:CPU converts them)."""
    return sp.Add(*(x.expr.subs(B_a, FP32) for x in layer_tensors(sw, moe, gdn)))


def per_layer_fp32_kept(sw: Switches, moe: bool = False, gdn: bool = False) -> sp.Expr:
    """One layer's residuals that are fp32 already (no compute-dtype width): what XLA:CPU's ring copies hold."""
    return sp.Add(*(x.expr for x in layer_tensors(sw, moe, gdn) if not x.expr.has(B_a)))


def largest_layer(sw: Switches, fp32: bool = False) -> sp.Expr:
    """One layer's residuals of the larger kind a stage holds (fp32: widened, as XLA:CPU converts them): its main
    stack's, or a hybrid's attention or Gated DeltaNet layer's."""
    f = _per_layer_fp32 if fp32 else per_layer
    return sp.Max(f(sw, sw.moe), f(sw, sw.moe, True)) if sw.gdn else f(sw, sw.moe)


def _iteration_slice(sw: Switches) -> sp.Expr:
    """One iteration's residuals of one layer copied out of the fp32 stacks by XLA:CPU for the backward's layer loop.
    Not under full remat (the layer loop reads the stacked inputs in place), nor with one iteration (m + p - 1 = 1:
    XLA removes the trip-count-1 pipeline loop, so the layer loop reads the stacks themselves)."""
    if sw.recompute == "full":
        return sp.Integer(0)
    return sp.Piecewise((0, sp.Eq(I, 1)), (largest_layer(sw, True), True))


def _stacks_widening(sw: Switches) -> sp.Expr:
    """What a layer's residual stack grows by when widened to fp32 (its main stack's kind), or a hybrid's whole
    iteration (its attention and Gated DeltaNet layers each)."""
    grow = lambda gdn: _per_layer_fp32(sw, sw.moe, gdn) - per_layer(sw, sw.moe, gdn)  # noqa: E731
    if sw.gdn:
        return sum(stack_layers(sw)) * grow(False) + linear_layers(sw) * grow(True)
    return grow(False)


def _looped(width: sp.Expr) -> sp.Expr:
    """A width that exists only inside the loss loop: 0 with one micro batch, where the compiled program has no loop
    (XLA removes a while loop of one trip and schedules its body with the rest of the step; dumps of the three-layer
    model, d4 t2 b4 selective, m = 1 against m = 2)."""
    return sp.Piecewise((0, sp.Eq(m, 1)), (width, True))


def stream_shape(sw: Switches) -> tuple:
    """Per-device shape of one micro batch's [b, s, h] in the between-blocks layout (s over c, and t with SP)."""
    return (b, s / (c * (t if sw.sp else 1)), h)


def _recomputed(sw: Switches) -> sp.Expr:
    """One layer's residuals of its attention half that the backward recomputes before the attention backward:
    full remat, all of them (remat none's list up to 'attn_out'); selective, those it did not save."""
    if sw.recompute == "none":
        return sp.Integer(0)
    kept = Switches(recompute="none", flash_attn=sw.flash_attn, sp=sw.sp, backend=sw.backend, mla=sw.mla,
                    q_lora=sw.q_lora)
    parts = layer_tensors(kept)
    half = parts[: [x.name for x in parts].index("attn_out") + 1]
    if sw.recompute == "selective":
        saved = {x.name for x in layer_tensors(sw)}
        half = [x for x in half if x.name not in saved]
    return sp.Add(*(x.expr for x in half))


def attention_backward(sw: Switches) -> sp.Expr:
    """One layer's attention backward beyond its residuals. Flash: one key block's fp32 probabilities and dK, dV
    products (XLA:CPU: two fp32 arrays of it and a compute-dtype one), bf16 transposed copies of q and dO (two each),
    the fp32 dq carry, fp32 dk, dv of the gathered keys.
    Unfused: fp32 dS, bf16 dP and dS per score element."""
    if sw.flash_attn:
        per_score = FLASH_BWD_BYTES_CPU if sw.backend == "cpu" else FLASH_BWD_BYTES
        block = per_score * b * a * s * sp.Min(s, FLASH_BLOCK) / (t * c)
        q_w, k_w, v_w = head_widths(sw)
        return block + 2 * tokens(q_w + out_width(sw), B_a, True) + tokens(q_w, FP32, True) \
            + c * tokens(k_w + v_w, FP32, True)
    return scores(FP32 + 2 * B_a)


def gdn_backward(sw: Switches) -> sp.Expr:
    """One Gated DeltaNet layer's backward beyond its residuals: its rule's custom VJP recomputes the chunks and
    differentiates them (jaxcheck.model.gdn). Read from one XLA:GPU dump (grids/derive-hybrid.toml's
    qwen3.5-moe-768 d2 e2 s2048 none zero1: 116.5 MiB made in that layer's backward and live at its peak, the
    gemm_fusion_dot.822 to loop_broadcast_fusion.19 of the rule's backward): eleven fp32 [b, s, n_gv/t, d_gv] chunk
    tensors ([s/64, b, n_gv/t, 64, d] and the dots that make them), seven bf16 ones, five fp32 chunk matrices
    [b, s, n_gv/t, 64] (the triangular solve's), and the fp32 chunk states [s/64, b, n_gv/t, d_gk, d_gv]. That dump
    has d_gk = d_gv, so the row cannot tell the key-wide tensors from the value-wide ones; a second (qwen3.5-1024 d2
    p2 selective zero3, n_gv = 2 n_gk, d = 64) held 104 MiB where this counts 82. 0 without Gated DeltaNet layers."""
    if not sw.gdn:
        return sp.Integer(0)
    chunk = sp.Min(s, GDN_CHUNK)
    heads = b * s * n_gv / t  # c = 1 (the rule table)
    return FP32 * heads * (11 * d_gv + 5 * chunk) + B_a * heads * 7 * d_gv \
        + FP32 * b * n_gv / t * (s / chunk) * d_gk * d_gv


def _attention_forward(sw: Switches) -> sp.Expr:
    """One layer's attention forward beyond its residuals. Flash: one key block's fp32 scores and exp, and the fp32
    accumulator [b, s/c, a/t, dh] with its update. Unfused: fp32 scores, their exp and the softmax."""
    if sw.flash_attn:
        return FLASH_FWD_BYTES * b * a * s * sp.Min(s, FLASH_BLOCK) / (t * c) + 2 * tokens(out_width(sw), FP32, True)
    return scores(3 * FP32)


def _relayout(sw: Switches) -> sp.Expr:
    """The largest residual stack XLA:GPU copies into the backward's layout between forward and backward (the old
    and the new layout are live together for a moment): remat none, the normed inputs [b, s/c, h] (flash) or the
    fp32 exp of the scores (unfused); selective, q; full, none (the stacked layer inputs keep their layout)."""
    if sw.recompute == "full":
        return sp.Integer(0)
    if not sw.flash_attn and sw.recompute == "none":
        return scores(FP32)
    return tokens(head_widths(sw)[0], B_a, True) if sw.recompute == "selective" else tokens(h, B_a, False)


def rows(sw: Switches) -> tuple[Buffer, ...]:
    """Every temporary of the step with the phases it is live in (forward: one layer of the last iteration; relayout:
    between forward and loss; loss: one micro batch; backward_attention / backward_weights: one layer's attention
    backward / its weight gradients; update: AdamW)."""
    stream = stream_shape(sw)
    vocab = (h, v / t)
    shard = jaxzero.grad_shards(sw)
    held = (h / shard, v / t)  # the head's gradient as the step keeps it (ZeRO-2/3: over d*c on h)
    dense_layers, moe_layers = stack_layers(sw)
    gdn_gpu = sw.gdn and sw.backend == "gpu"  # XLA:CPU's Gated DeltaNet backward is not read: attention's row alone
    fwd_to_bwd = ("forward", "relayout", "loss", "loss_head", "backward_attention", "backward_weights")
    backward = ("backward_attention", "backward_weights")
    return (
        Buffer("residual_stacks", (I, dense_layers), per_layer(sw), fwd_to_bwd,
               f"every layer's residuals ({sw.recompute} remat) for every iteration, [m + p - 1, L/p, ...], written by "
               "the forward in place, read by the backward" + (" (the dense layers' stack: (L - L_e)/p layers)"
                                                                if sw.moe else "")),
        *([Buffer("moe_residual_stacks", (I, moe_layers), per_layer(sw, moe=True), fwd_to_bwd,
                  f"every MoE layer's residuals ({sw.recompute} remat) for every iteration, [m + p - 1, L_e/p, ...] "
                  "(recipes.jax.moe)")] if sw.moe else []),
        *([Buffer("gdn_residual_stacks", (I, linear_layers(sw)), per_layer(sw, sw.moe, True), fwd_to_bwd,
                  f"every Gated DeltaNet layer's residuals ({sw.recompute} remat) for every iteration, [m + p - 1, "
                  "L_g/p, ...] (a hybrid's first stack: jaxcheck.model.gdn)")] if sw.gdn else []),
        Buffer("stage_outputs", (I,) + stream, B_a, ("forward", "relayout", "loss", "loss_head"),
               "the last stage's output of every iteration [m + p - 1, b, s, h]"),
        Buffer("embeddings", (m,) + stream, B_a, ("forward",), "embedded micro batches [m, b, s, h]"),
        Buffer("lookup_partial", (m, b, s / c, h), B_a, ("forward_embed",), "the vocab-parallel lookup's partial "
               "sums of every micro batch [m, b, s/c, h] before their sum over t (derive-moe 6: loop_multiply_fusion "
               "bf16[512,4,1,1024] of the lookup's shard_map, beside the embedding's all-gather)"),
        Buffer("stage_buffer", stream, B_a, ("forward",) + backward, "the stage buffer and its copy shifted one "
               "stage by the collective-permute (forward: activations, backward: their cotangents)", count=2),
        Buffer("head_grad", held, _looped(B_g), ("loss", "loss_head"), "fp32 gradient of the LM head (of the embedding when "
               "tied) while the logits exist: the loss loop's accumulator, made when the loop starts. With one micro "
               "batch there is no loop (XLA removes a loop of one trip) and the gradient is one product made after "
               "the logits gradient, so it is not live with the logits"),
        Buffer("head_grad_zeros", held, _looped(B_g), ("forward", "relayout"), "the zeros that accumulator starts "
               "from: XLA:GPU materialises them at the step's start, as it does iteration_grads_zeros, and updates "
               "them in place in the loss loop (dump of llama3-8b d2 t2 p2 c2 m8: a broadcast f32[h, v/t] live from "
               "the step's 11th instruction to the loss loop)", backend="gpu"),
        Buffer("head_grad_kept", held, B_g, backward + ("update", "update_gather"), "the same gradient, complete "
               "before the "
               "pipeline backward (an optimization barrier with the pipeline's cotangent) and kept until the AdamW "
               "update, which starts once every gradient exists (a second barrier)"),
        Buffer("embed_grad", (v / t, h), B_g, ("update",), "fp32 gradient of the embedding's local [v/t, h] rows, "
               "made after the pipeline backward by the lookup's scatter-add and summed over d*c (its all-reduce, or "
               "with ZeRO-1 the all-gather of the updated rows, is in flight as the update starts)"),
        *([Buffer("positions_grad", (s_p, h), B_g, ("update",), "fp32 gradient of GPT's learned positions [s_p, "
                  "h] (replicated over t), made with the embedding's by the lookup's backward")] if sw.positions else []),
        Buffer("tied_grad_sum", vocab, B_g if sw.tied else sp.Integer(0), ("update",), "tied: the embedding's "
               "whole gradient, the lookup's plus the head's, a third buffer while both still exist"),
        Buffer("norm_grad", (final_norm_params(sw) / shard,), B_g, ALL, "fp32 gradient of the final norm"
               + (" (a LayerNorm's scale and bias)" if sw.norm == "layer" else "")),
        Buffer("block_grads", (dense_layers * layer_params(sw) / shard + moe_layers * (
                   moe_layer_params(sw) / shard + experts_params(sw) / jaxzero.expert_grad_shards(sw))
                   + linear_layers(sw) * (gdn_layer_params(sw) / shard + (
                       experts_params(sw) / jaxzero.expert_grad_shards(sw) if sw.moe else 0)),), B_g,
               backward + ("update", "update_gather"),
               "one fp32 accumulator per stacked weight [L/p, ...], each layer's gradient added in place"),
        Buffer("output_grads", (m,) + stream, B_a, ("loss", "loss_head") + backward, "cotangent of the pipeline's outputs"),
        Buffer("iteration_grads", (I,) + stream, B_a, backward, "cotangents reaching the last stage and leaving "
               "stage 0 in every iteration [m + p - 1, b, s, h]", count=2),
        Buffer("iteration_grads_zeros", (I,) + stream, B_a, ("forward", "relayout", "loss", "loss_head"), "the zeros those "
               "cotangent stacks start from: a constant XLA:GPU materialises at the step's start and holds until the "
               "backward copies it (dumps of grids/derive.toml, e.g. llama3-8b t2 p4 m16)", backend="gpu"),
        Buffer("relayout_copy", (I, N), _relayout(sw), ("relayout",),
               "one residual stack in the backward's layout while the forward's copy still exists", backend="gpu"),
        Buffer("stacks_widened", (I,) if sw.gdn else (I, N), _stacks_widening(sw), backward,
               "what the residual stacks grow by when XLA:CPU converts their compute-dtype tensors to fp32 before "
               "the backward loop (wrapped_convert in its buffer assignment)", backend="cpu"),
        Buffer("iteration_slice", (N,), _iteration_slice(sw), backward, "one iteration's residuals copied out "
               "of the fp32 stacks for the backward's layer loop", backend="cpu"),
        Buffer("layer_casts", (one_layer(sw),), B_a, ("forward",), "one layer's weights cast to compute dtype"),
        Buffer("attention_forward", (), _attention_forward(sw), ("forward",),
               "one layer's attention forward: score blocks and the fp32 accumulator (unfused: s x s scores)"),
        Buffer("logits", (b, s / c, v / t), FP32, ("loss",), "one micro batch's fp32 logits and their gradient",
               count=2),
        Buffer("head_input", (b, s / c, h), B_a, ("loss",), "one micro batch's final-norm output all-gathered over t "
               "(sequence parallelism), the LM head's input"),
        Buffer("head_cast", vocab, _looped(B_a), ("loss",), "the LM head cast to compute dtype inside the loss loop "
               "(XLA:GPU fuses the cast into the logits product; with one micro batch there is no loop)", backend="cpu"),
        Buffer("layer_weights", (one_layer_dense(sw),), sp.Piecewise((0, sp.Eq(N, 1)), (B_w, True)) if not sw.sharded_weights
               else B_a, backward,
               "one layer's weights sliced from the stage's stack in param dtype, for its backward (with one layer per "
               "stage there is no layer loop, which XLA removes, and the stack is read in place); ZeRO-3: all-gathered "
               "over d*c in compute dtype (llama3-8b d4 t2 selective zero3: all-gather-start.16 bf16[2048,14336])"),
        Buffer("recomputed", (), _recomputed(sw), ("backward_attention",), "one layer's attention-half residuals "
               "that the backward recomputes (full remat: all of them; selective: those it did not save)"),
        Buffer("attention_backward", (), sp.Max(attention_backward(sw), gdn_backward(sw)) if gdn_gpu
               else attention_backward(sw), ("backward_attention",),
               "one layer's attention backward: score blocks, transposed q and dO, dq, dk, dv" + (
                   "; or a Gated DeltaNet layer's rule backward (gdn_backward, read from an XLA:GPU dump), the "
                   "larger" if gdn_gpu else "")),
        Buffer("input_grads", (b, s / c, h), B_a, ("backward_attention",), "gradients of the layer's normed input "
               "from the Q, K and V projections, [b, s/c, h] before their reduce-scatter over t", count=3),
        Buffer("layer_grads", (one_layer_dense(sw),), B_g, ("backward_weights",),
               "one layer's weight gradients converted to param dtype, before they join the accumulator"),
        *jaxzero.rows(sw),
        *jaxmoe.rows(sw),
        *([Buffer("layer_gathered", (one_layer(sw),), B_w, ("update_gather",), "ZeRO-2: one layer's updated weights "
                  "all-gathered in param dtype (its routed experts over their expert data-parallel group, the rest "
                  "over d*c) into the donated parameter stack, while the updated shards of every layer exist "
                  "(jaxcheck.zero.apply_updates; holdout-moe 8: all-gather-start f32[32,256,1280] x 3 beside the "
                  "updated shards f32[1,3,8,256,1280] x 3)")] if (sw.sharded_grads and not sw.sharded_weights) else []),
    )
