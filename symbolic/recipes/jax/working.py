"""The working sets both pipeline schedules of jaxcheck's step hold alike (GPipe's loop, recipes.jax.gpipe, and the
1F1B clock, recipes.jax.onef1b): one layer's residuals, its forward and backward beyond them, one micro batch's
loss, as expressions and as the buffer rows each schedule's table lists in its place. Each row read from XLA's
buffer-assignment dumps of grids/derive.toml (docs/jaxcheck.md; each row's evidence in docs/accuracy.md under its
name)."""

from __future__ import annotations

import sympy as sp

from ...components import FP32
from ...components.experts import experts_params
from ...components.weights import final_norm_params, layer_params
from ...config.switches import Switches
from ...config.symbols import B_a, B_g, B_w, a, b, c, d_gk, d_gv, h, n_gv, s, t, v
from ...components.gdn import CHUNK as GDN_CHUNK
from . import zero as jaxzero
from .buffers import PHASES as ALL, Buffer
from .params import N, gdn_layer_params, linear_layers, moe_layer_params, one_layer, one_layer_dense, stack_layers
from .step import FLASH_BLOCK
from .tensors import head_widths, layer_tensors, out_width, scores, tokens

BACKWARD = ("backward_attention", "backward_weights")  # one layer's backward: its attention's, then its weights'
LOSS = ("loss", "loss_input_grad", "loss_head")  # one micro batch's loss: logits, their cotangent, the head's gradient


FLASH_FWD_BYTES = 2 * FP32  # fp32 masked scores and exp(scores - max) of one key block
FLASH_BWD_BYTES = 3 * FP32  # fp32 probabilities and the dK, dV products of one key block (XLA's transposed layout)
# XLA:CPU holds two fp32 arrays of a key block in the flash backward, the probabilities and their product with dO, and
# the latter cast to compute dtype for the dK product (evidence: docs/accuracy.md, attention_backward)
FLASH_BWD_BYTES_CPU = 2 * FP32 + B_a


def per_layer(sw: Switches, moe: bool = False, gdn: bool = False) -> sp.Expr:
    """One layer's residuals for one micro batch, in bytes (the sum of tensors.layer_tensors; gdn: a Gated DeltaNet
    layer's)."""
    return sp.Add(*(x.expr for x in layer_tensors(sw, moe, gdn)))


def per_layer_fp32(sw: Switches, moe: bool = False, gdn: bool = False) -> sp.Expr:
    """One layer's residuals with every compute-dtype tensor widened to fp32 (as XLA:CPU converts them)."""
    return sp.Add(*(x.expr.subs(B_a, FP32) for x in layer_tensors(sw, moe, gdn)))


def per_layer_fp32_kept(sw: Switches, moe: bool = False, gdn: bool = False) -> sp.Expr:
    """One layer's residuals that are fp32 already (no compute-dtype width): what XLA:CPU's ring copies hold."""
    return sp.Add(*(x.expr for x in layer_tensors(sw, moe, gdn) if not x.expr.has(B_a)))


def largest_layer(sw: Switches, fp32: bool = False) -> sp.Expr:
    """One layer's residuals of the larger kind a stage holds (fp32: widened, as XLA:CPU converts them): its main
    stack's, or a hybrid's attention or Gated DeltaNet layer's."""
    f = per_layer_fp32 if fp32 else per_layer
    return sp.Max(f(sw, sw.moe), f(sw, sw.moe, True)) if sw.gdn else f(sw, sw.moe)


def stream_shape(sw: Switches) -> tuple:
    """Per-device shape of one micro batch's [b, s, h] in the between-blocks layout (s over c, and t with SP)."""
    return (b, s / (c * (t if sw.sp else 1)), h)


def recomputed_bytes(sw: Switches) -> sp.Expr:
    """One layer's residuals of its attention half that the backward recomputes before the attention backward:
    full remat, all of them (remat none's list up to 'attn_out'); selective, those it did not save."""
    if sw.recompute == "none":
        return sp.Integer(0)
    kept = Switches(
        recompute="none", flash_attn=sw.flash_attn, sp=sw.sp, backend=sw.backend, mla=sw.mla, q_lora=sw.q_lora
    )
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
        return (
            block
            + 2 * tokens(q_w + out_width(sw), B_a, True)
            + tokens(q_w, FP32, True)
            + c * tokens(k_w + v_w, FP32, True)
        )
    return scores(FP32 + 2 * B_a)


def gdn_backward(sw: Switches) -> sp.Expr:
    """One Gated DeltaNet layer's backward beyond its residuals: its rule's custom VJP recomputes the chunks and
    differentiates them (jaxcheck.model.gdn): eleven fp32 [b, s, n_gv/t, d_gv] chunk tensors, seven compute-dtype
    ones, five fp32 chunk matrices [b, s, n_gv/t, 64] and the fp32 chunk states [s/64, b, n_gv/t, d_gk, d_gv], read
    from one XLA:GPU dump (evidence: docs/accuracy.md, gdn_backward). 0 without Gated DeltaNet layers."""
    if not sw.gdn:
        return sp.Integer(0)
    chunk = sp.Min(s, GDN_CHUNK)
    heads = b * s * n_gv / t  # c = 1 (the rule table)
    return (
        FP32 * heads * (11 * d_gv + 5 * chunk)
        + B_a * heads * 7 * d_gv
        + FP32 * b * n_gv / t * (s / chunk) * d_gk * d_gv
    )


def attention_forward_bytes(sw: Switches) -> sp.Expr:
    """One layer's attention forward beyond its residuals. Flash: one key block's fp32 scores and exp, and the fp32
    accumulator [b, s/c, a/t, dh] with its update. Unfused: fp32 scores, their exp and the softmax."""
    if sw.flash_attn:
        return FLASH_FWD_BYTES * b * a * s * sp.Min(s, FLASH_BLOCK) / (t * c) + 2 * tokens(out_width(sw), FP32, True)
    return scores(3 * FP32)


def tied_and_norm(sw: Switches) -> tuple[Buffer, ...]:
    """The tied embedding's summed gradient and the final norm's gradient."""
    vocab = (h, v / t)
    shard = jaxzero.grad_shards(sw)
    return (
        Buffer(
            "tied_grad_sum",
            vocab,
            B_g if sw.tied else sp.Integer(0),
            ("update",),
            "tied: the embedding's whole gradient, the lookup's plus the head's, a third buffer while both still exist",
        ),
        Buffer(
            "norm_grad",
            (final_norm_params(sw) / shard,),
            B_g,
            ALL,
            "fp32 gradient of the final norm" + (" (a LayerNorm's scale and bias)" if sw.norm == "layer" else ""),
        ),
    )


def block_grads(sw: Switches, phases: tuple[str, ...]) -> Buffer:
    """The fp32 accumulators of the stage's stacked weights, live in `phases` (the schedule's)."""
    shard = jaxzero.grad_shards(sw)
    dense_layers, moe_layers = stack_layers(sw)
    return Buffer(
        "block_grads",
        (
            dense_layers * layer_params(sw) / shard
            + moe_layers * (moe_layer_params(sw) / shard + experts_params(sw) / jaxzero.expert_grad_shards(sw))
            + linear_layers(sw)
            * (gdn_layer_params(sw) / shard + (experts_params(sw) / jaxzero.expert_grad_shards(sw) if sw.moe else 0)),
        ),
        B_g,
        phases,
        "one fp32 accumulator per stacked weight [L/p, ...], each layer's gradient added in place",
    )


def forward_work(sw: Switches) -> tuple[Buffer, ...]:
    """One layer's forward beyond its residuals, and one micro batch's loss."""
    return (
        Buffer("layer_casts", (one_layer(sw),), B_a, ("forward",), "one layer's weights cast to compute dtype"),
        Buffer(
            "attention_forward",
            (),
            attention_forward_bytes(sw),
            ("forward",),
            "one layer's attention forward: score blocks and the fp32 accumulator (unfused: s x s scores)",
        ),
        Buffer(
            "logits", (b, s / c, v / t), FP32, ("loss",), "one micro batch's fp32 logits and their gradient", count=2
        ),
        Buffer(
            "head_input",
            (b, s / c, h),
            B_a,
            ("loss",),
            "one micro batch's final-norm output all-gathered over t (sequence parallelism), the LM head's input",
        ),
    )


def backward_work(sw: Switches) -> tuple[Buffer, ...]:
    """One layer's backward beyond its residuals: its weights, what it recomputes, its attention's backward, its
    input's and weights' gradients."""
    gdn_gpu = sw.gdn and sw.backend == "gpu"  # XLA:CPU's Gated DeltaNet backward is not read: attention's row alone
    backward = BACKWARD
    return (
        Buffer(
            "layer_weights",
            (one_layer_dense(sw),),
            sp.Piecewise((0, sp.Eq(N, 1)), (B_w, True)) if not sw.sharded_weights else B_a,
            backward,
            "one layer's weights sliced from the stage's stack in param dtype for its backward (none with one layer "
            "per stage: XLA removes the layer loop, the stack is read in place); ZeRO-3: all-gathered over d*c in "
            "compute dtype",
        ),
        Buffer(
            "recomputed",
            (),
            recomputed_bytes(sw),
            ("backward_attention",),
            "one layer's attention-half residuals "
            "that the backward recomputes (full remat: all of them; selective: those it did not save)",
        ),
        Buffer(
            "attention_backward",
            (),
            sp.Max(attention_backward(sw), gdn_backward(sw)) if gdn_gpu else attention_backward(sw),
            ("backward_attention",),
            "one layer's attention backward: score blocks, transposed q and dO, dq, dk, dv"
            + (
                "; or a Gated DeltaNet layer's rule backward (gdn_backward, read from an XLA:GPU dump), the larger"
                if gdn_gpu
                else ""
            ),
        ),
        Buffer(
            "input_grads",
            (b, s / c, h),
            B_a,
            ("backward_attention",),
            "gradients of the layer's normed input "
            "from the Q, K and V projections, [b, s/c, h] before their reduce-scatter over t",
            count=3,
        ),
        Buffer(
            "layer_grads",
            (one_layer_dense(sw),),
            B_g,
            ("backward_weights",),
            "one layer's weight gradients converted to param dtype, before they join the accumulator",
        ),
    )


def layer_gathered(sw: Switches) -> tuple[Buffer, ...]:
    """ZeRO-2: one layer's updated weights all-gathered (none otherwise)."""
    return (
        *(
            [
                Buffer(
                    "layer_gathered",
                    (one_layer(sw),),
                    B_w,
                    ("update_gather",),
                    "ZeRO-2: one layer's updated weights "
                    "all-gathered in param dtype (routed experts over their expert data-parallel group, the rest over "
                    "d*c) into the donated parameter stack while every layer's updated shards exist "
                    "(jaxcheck.zero.apply_updates)",
                )
            ]
            if (sw.sharded_grads and not sw.sharded_weights)
            else []
        ),
    )
