"""The 1F1B table of jaxcheck's step (the default schedule, jaxcheck.model.onef1b): each stage's residual rings of
K = min(m, p) slots, the accumulators the tick loop carries to the update, what one tick's loss and stage shift hold,
and the per-layer and per-micro-batch rows both schedules share (recipes.jax.working); each backend's own rows are
recipes.jax.onef1b_gpu's and onef1b_cpu's, in their places in the table. The dumps each row was read from are in
docs/accuracy.md under the row's name."""

from __future__ import annotations

import sympy as sp

from ...components import FP32
from ...components.experts import experts_params
from ...config.switches import Switches
from ...config.symbols import B_a, B_g, b, c, h, s, s_p, t, v
from . import moe as jaxmoe, onef1b_cpu, onef1b_gpu, working, zero as jaxzero
from .buffers import Buffer
from .clock import K, TICK, UPDATE
from .onef1b_cpu import BWD_CPU
from .params import linear_layers, stack_layers
from .working import BACKWARD as BWD, largest_layer, per_layer as layer_bytes, stream_shape
from .zero import expert_grad_shards


def _rings(sw: Switches) -> tuple[Buffer, ...]:
    """Every layer's residuals for K micro batches, a ring per layer kind, written by a stage's forward and read by
    its backward."""
    dense_layers, moe_layers = stack_layers(sw)
    return (
        Buffer(
            "residual_stacks",
            (K, dense_layers),
            layer_bytes(sw),
            TICK,
            (
                f"every layer's residuals ({sw.recompute} remat) for K = min(m, p) micro batches, rings [K, L/p, ...] "
                "written by a stage's forward into slot i mod K, read by its backward (dense layers: (L - L_e)/p)"
            ),
        ),
        *(
            [
                Buffer(
                    "moe_residual_stacks",
                    (K, moe_layers),
                    layer_bytes(sw, moe=True),
                    TICK,
                    (f"every MoE layer's residuals ({sw.recompute} remat) for K micro batches, rings [K, L_e/p, ...]"),
                )
            ]
            if sw.moe
            else []
        ),
        *(
            [
                Buffer(
                    "gdn_residual_stacks",
                    (K, linear_layers(sw)),
                    layer_bytes(sw, sw.moe, True),
                    TICK,
                    (
                        f"every Gated DeltaNet layer's residuals ({sw.recompute} remat) for K micro batches, rings [K, L_g/p, "
                        "...]"
                    ),
                )
            ]
            if sw.gdn
            else []
        ),
    )


def _carried(sw: Switches) -> tuple[Buffer, ...]:
    """What the tick loop carries: the lookup's partial sums, the stage buffers, and the accumulators of the LM
    head's, the embedding's and the positions' gradients, kept to the update."""
    shard = jaxzero.grad_shards(sw)
    loop = TICK + UPDATE
    return (
        Buffer(
            "lookup_partial",
            (b, s / c, h),
            B_a,
            ("forward_embed",),
            ("one micro batch's vocab-parallel lookup partial sums [b, s/c, h] before their sum over t"),
        ),
        Buffer(
            "stage_buffer",
            stream_shape(sw),
            B_a,
            TICK,
            (
                "the stage buffers the loop carries from tick to tick: every stage's forward output and backward "
                "cotangent [b, s, h]"
            ),
            count=2,
        ),
        Buffer(
            "head_grad",
            (h / shard, v / t),
            B_g,
            loop,
            (
                "fp32 accumulator of the LM head's gradient (of the embedding's when tied), each tick's added in place "
                "and kept to the AdamW update"
            ),
        ),
        Buffer(
            "embed_grad",
            (v / (t * shard), h),
            B_g,
            loop,
            (
                "fp32 accumulator of the embedding's gradient, the lookup's of each micro batch added as stage 0's "
                "backward reaches it (ZeRO-2/3: reduce-scattered over d*c into it)"
            ),
        ),
        *(
            [
                Buffer(
                    "positions_grad",
                    (s_p / shard, h),
                    B_g,
                    loop,
                    (
                        "fp32 accumulator of the learned positions' gradient, each micro batch's added with the embedding's "
                        "(ZeRO-2/3: reduce-scattered over d*c into it)"
                    ),
                )
            ]
            if sw.positions
            else []
        ),
    )


def _tick(sw: Switches) -> tuple[Buffer, ...]:
    """A tick's own gradients: ZeRO-2/3's expert gradient shard, one micro batch's head gradient, its logits
    gradient."""
    out = []
    if sw.moe and sw.sharded_grads:  # ZeRO-2/3: the masked expert gradient's shard, made beside it
        out.append(
            Buffer(
                "expert_grad_shard",
                (experts_params(sw) / (3 * expert_grad_shards(sw)),),
                sp.Piecewise((0, sp.Eq(expert_grad_shards(sw), 1)), (B_g, True)),
                ("backward_weights",),
                "one expert weight's fp32 gradient sliced to this rank's expert "
                "data-parallel shard before it joins the accumulator, while the masked whole gradients "
                "exist; none when that group is one rank (nothing to slice)",
            )
        )
    micro = (
        []
        if sw.sharded_grads
        else [  # with ZeRO-2/3, recipes.jax.zero's head_grad_micro
            Buffer(
                "head_grad_micro",
                (h, v / t),
                B_g,
                ("loss_head",),
                "one micro batch's fp32 gradient of the LM head "
                "[h, v/t], made whole beside the logits gradient before it joins the accumulator",
            )
        ]
    )
    return (
        *out,
        *micro,
        Buffer(
            "logits_grad",
            (b, s / c, v / t),
            FP32,
            ("loss_input_grad", "loss_head"),
            "one micro batch's fp32 "
            "logits gradient [b, s/c, v/t], the input of the last stage's cotangent and of the head gradient's "
            "product",
        ),
    )


def _stage(sw: Switches) -> tuple[Buffer, ...]:
    """A stage's pending residuals, its shifted stage buffer, and the lookup's gradient at the tick's end."""
    per_layer = layer_bytes(sw, sw.moe)
    stream = stream_shape(sw)
    return (
        Buffer(
            "pending_residuals",
            (),
            largest_layer(sw) if sw.gdn else per_layer,
            BWD_CPU if sw.backend == "cpu" else BWD,
            "the residuals of "
            "the layer whose forward ran in this step of the layer loop, written into their ring slot once the "
            "backward's layer has read it (jaxcheck.model.onef1b; XLA:CPU: before the attention backward)",
        ),
        Buffer(
            "stage_shift",
            stream,
            B_a,
            ("forward", "backward_attention", "backward_weights"),
            "a stage buffer shifted one stage by the collective-permute, beside the buffer it came from",
        ),
        Buffer(
            "lookup_grad",
            (v / t, h),
            B_g,
            ("backward_embed",),
            "one micro batch's gradient of the local "
            "embedding rows [v/t, h], scatter-added into zeros by the lookup's backward before it joins the "
            "accumulator",
        ),
    )


def rows(sw: Switches) -> tuple[Buffer, ...]:
    """The 1F1B table, in program order: rings, carried accumulators, the shared working sets, ZeRO's and the
    experts' rows, a tick's own, each backend's own."""
    return (
        *_rings(sw),
        *_carried(sw),
        *working.tied_and_norm(sw),
        working.block_grads(sw, TICK + UPDATE),
        *working.forward_work(sw),
        onef1b_cpu.head_cast(sw),
        *working.backward_work(sw),
        *jaxzero.rows(sw),
        *jaxmoe.rows(sw),
        *working.layer_gathered(sw),
        *_tick(sw),
        *onef1b_gpu.rows(sw),
        *_stage(sw),
        *onef1b_cpu.rows(sw),
    )
