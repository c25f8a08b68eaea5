"""GPipe's table of temporaries in jaxcheck's step (the schedule --schedule gpipe compiles): the loop of I = m + p - 1
iterations keeps every iteration's residuals and stage outputs, and its working sets between forward and backward;
the per-layer and per-micro-batch rows both schedules hold are recipes.jax.working's. Each row a buffer with the
phases it is live in, read from XLA's buffer-assignment dumps of grids/derive.toml (its derivation in docs/jaxcheck.md,
the dumps in docs/accuracy.md under the row's name)."""

from __future__ import annotations

import sympy as sp

from ...components import FP32
from ...config.switches import Switches
from ...config.symbols import B_a, B_g, b, c, h, m, p, s, s_p, t, v
from . import moe as jaxmoe, working, zero as jaxzero
from .buffers import PHASES, Buffer
from .params import N, linear_layers, stack_layers
from .tensors import head_widths, scores, tokens
from .working import BACKWARD, LOSS, largest_layer, per_layer, per_layer_fp32, stream_shape

I = m + p - 1  # iterations of the GPipe loop
ALL = PHASES


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
    grow = lambda gdn: per_layer_fp32(sw, sw.moe, gdn) - per_layer(sw, sw.moe, gdn)  # noqa: E731
    if sw.gdn:
        return sum(stack_layers(sw)) * grow(False) + linear_layers(sw) * grow(True)
    return grow(False)


def _looped(width: sp.Expr) -> sp.Expr:
    """A width that exists only inside the loss loop: 0 with one micro batch, where the compiled program has no loop
    (XLA removes a while loop of one trip and schedules its body with the rest of the step; evidence:
    docs/accuracy.md, _looped)."""
    return sp.Piecewise((0, sp.Eq(m, 1)), (width, True))


def _relayout(sw: Switches) -> sp.Expr:
    """The largest residual stack XLA:GPU copies into the backward's layout between forward and backward (the old
    and the new layout are live together for a moment): remat none, the normed inputs [b, s/c, h] (flash) or the
    fp32 exp of the scores (unfused); selective, q; full, none (the stacked layer inputs keep their layout)."""
    if sw.recompute == "full":
        return sp.Integer(0)
    if not sw.flash_attn and sw.recompute == "none":
        return scores(FP32)
    return tokens(head_widths(sw)[0], B_a, True) if sw.recompute == "selective" else tokens(h, B_a, False)


def _stacks(sw: Switches) -> tuple[Buffer, ...]:
    """Every layer's residuals for every iteration, a stack per layer kind, from the forward to the backward."""
    dense_layers, moe_layers = stack_layers(sw)
    fwd_to_bwd = ("forward", "relayout") + LOSS + BACKWARD
    return (
        Buffer(
            "residual_stacks",
            (I, dense_layers),
            per_layer(sw),
            fwd_to_bwd,
            f"every layer's residuals ({sw.recompute} remat) for every iteration, [m + p - 1, L/p, ...], written by "
            "the forward in place, read by the backward"
            + (" (the dense layers' stack: (L - L_e)/p layers)" if sw.moe else ""),
        ),
        *(
            [
                Buffer(
                    "moe_residual_stacks",
                    (I, moe_layers),
                    per_layer(sw, moe=True),
                    fwd_to_bwd,
                    f"every MoE layer's residuals ({sw.recompute} remat) for every iteration, [m + p - 1, L_e/p, ...] "
                    "(recipes.jax.moe)",
                )
            ]
            if sw.moe
            else []
        ),
        *(
            [
                Buffer(
                    "gdn_residual_stacks",
                    (I, linear_layers(sw)),
                    per_layer(sw, sw.moe, True),
                    fwd_to_bwd,
                    f"every Gated DeltaNet layer's residuals ({sw.recompute} remat) for every iteration, [m + p - 1, "
                    "L_g/p, ...] (a hybrid's first stack: jaxcheck.model.gdn)",
                )
            ]
            if sw.gdn
            else []
        ),
    )


def _loop(sw: Switches) -> tuple[Buffer, ...]:
    """What the loop carries: its stage outputs, embedded micro batches and stage buffers, and the gradients of the
    LM head, the embedding and the positions."""
    return _carried(sw) + _grads(sw)


def _carried(sw: Switches) -> tuple[Buffer, ...]:
    """The loop's stage outputs, embedded micro batches, the lookup's partial sums and the stage buffer."""
    stream = stream_shape(sw)
    backward = BACKWARD
    return (
        Buffer(
            "stage_outputs",
            (I,) + stream,
            B_a,
            ("forward", "relayout") + LOSS,
            "the last stage's output of every iteration [m + p - 1, b, s, h]",
        ),
        Buffer("embeddings", (m,) + stream, B_a, ("forward",), "embedded micro batches [m, b, s, h]"),
        Buffer(
            "lookup_partial",
            (m, b, s / c, h),
            B_a,
            ("forward_embed",),
            "the vocab-parallel lookup's partial "
            "sums of every micro batch [m, b, s/c, h] before their sum over t, beside the embedding's all-gather",
        ),
        Buffer(
            "stage_buffer",
            stream,
            B_a,
            ("forward",) + backward,
            "the stage buffer and its copy shifted one "
            "stage by the collective-permute (forward: activations, backward: their cotangents)",
            count=2,
        ),
    )


def _grads(sw: Switches) -> tuple[Buffer, ...]:
    """The gradients of the LM head (its accumulator, the zeros it starts from, the complete one kept), the
    embedding and the positions."""
    held = (h / jaxzero.grad_shards(sw), v / t)  # the head's gradient as the step keeps it (ZeRO-2/3: over d*c on h)
    backward = BACKWARD
    return (
        Buffer(
            "head_grad",
            held,
            _looped(B_g),
            LOSS,
            "fp32 gradient of the LM head (the embedding's when tied) "
            "[h, v/t] (ZeRO-2/3: h over d*c), the loss loop's accumulator, live with the logits; none with one "
            "micro batch (no loop: one product after the logits gradient)",
        ),
        Buffer(
            "head_grad_zeros",
            held,
            _looped(B_g),
            ("forward", "relayout"),
            "the zeros that accumulator starts "
            "from, materialised by XLA:GPU at the step's start and updated in place in the loss loop",
            backend="gpu",
        ),
        Buffer(
            "head_grad_kept",
            held,
            B_g,
            backward + ("update", "update_gather"),
            "the same gradient, complete "
            "before the pipeline backward (an optimization barrier) and kept to the AdamW update, which waits for "
            "every gradient (a second barrier)",
        ),
        Buffer(
            "embed_grad",
            (v / t, h),
            B_g,
            ("update",),
            "fp32 gradient of the embedding's local rows [v/t, h], "
            "scatter-added by the lookup's backward after the pipeline's; its sum over d*c (all-reduce; ZeRO-1: the "
            "updated rows' all-gather) is in flight as the update starts",
        ),
        *(
            [
                Buffer(
                    "positions_grad",
                    (s_p, h),
                    B_g,
                    ("update",),
                    "fp32 gradient of GPT's learned positions [s_p, "
                    "h] (replicated over t), made with the embedding's by the lookup's backward",
                )
            ]
            if sw.positions
            else []
        ),
    )


def _iterations(sw: Switches) -> tuple[Buffer, ...]:
    """The cotangents of every iteration, and what each backend copies between forward and backward."""
    stream = stream_shape(sw)
    backward = BACKWARD
    return (
        Buffer("output_grads", (m,) + stream, B_a, LOSS + backward, "cotangent of the pipeline's outputs"),
        Buffer(
            "iteration_grads",
            (I,) + stream,
            B_a,
            backward,
            "cotangents reaching the last stage and leaving stage 0 in every iteration [m + p - 1, b, s, h]",
            count=2,
        ),
        Buffer(
            "iteration_grads_zeros",
            (I,) + stream,
            B_a,
            ("forward", "relayout") + LOSS,
            "the zeros those "
            "cotangent stacks start from, a constant XLA:GPU materialises at the step's start and holds until the "
            "backward copies it",
            backend="gpu",
        ),
        Buffer(
            "relayout_copy",
            (I, N),
            _relayout(sw),
            ("relayout",),
            "one residual stack in the backward's layout while the forward's copy still exists",
            backend="gpu",
        ),
        Buffer(
            "stacks_widened",
            (I,) if sw.gdn else (I, N),
            _stacks_widening(sw),
            backward,
            "what the residual stacks grow by when XLA:CPU converts their compute-dtype tensors to fp32 before "
            "the backward loop",
            backend="cpu",
        ),
        Buffer(
            "iteration_slice",
            (N,),
            _iteration_slice(sw),
            backward,
            "one iteration's residuals copied out of the fp32 stacks for the backward's layer loop",
            backend="cpu",
        ),
    )


def rows(sw: Switches) -> tuple[Buffer, ...]:
    """Every temporary of the step with the phases it is live in (forward: one layer of the last iteration; relayout:
    between forward and loss; loss: one micro batch; backward_attention / backward_weights: one layer's attention
    backward / its weight gradients; update: AdamW)."""
    return (
        *_stacks(sw),
        *_loop(sw),
        *working.tied_and_norm(sw),
        working.block_grads(sw, BACKWARD + ("update", "update_gather")),
        *_iterations(sw),
        *working.forward_work(sw),
        Buffer(
            "head_cast",
            (h, v / t),
            _looped(B_a),
            ("loss",),
            "the LM head cast to compute dtype inside the "
            "loss loop (XLA:GPU fuses the cast into the logits product; with one micro batch there is no loop)",
            backend="cpu",
        ),
        *working.backward_work(sw),
        *jaxzero.rows(sw),
        *jaxmoe.rows(sw),
        *working.layer_gathered(sw),
    )
