"""What ZeRO-2 and ZeRO-3 change in jaxcheck's compiled step (the `jax` profile): the ways gradients and parameters
are split over data x context, and the buffers the sharding adds, one unit at a time."""

from __future__ import annotations

import sympy as sp

from ...components.base import GROUPS
from ...config.switches import Switches
from ...config.symbols import B_g, B_w, h, p, t, v
from .buffers import Buffer
from .clock import TICK


def grad_shards(sw: Switches) -> sp.Expr:
    """Ways the gradient accumulators are split: d*c with ZeRO-2/3 (a layer's major dimension that d*c divides,
    jaxcheck.model.rules.layer_zero_spec), else 1."""
    return GROUPS.zero_group if sw.sharded_grads else sp.Integer(1)


def expert_grad_shards(sw: Switches) -> sp.Expr:
    """Ways the routed experts' gradient accumulators are split: their expert data-parallel group d t c / (e t_e)
    with ZeRO-2/3 (jaxcheck.model.rules.zero_group), else 1."""
    from ...components.experts import expert_data_parallel

    return expert_data_parallel() if sw.sharded_grads else sp.Integer(1)


def param_shards(sw: Switches) -> sp.Expr:
    """Ways the parameters are split: d*c with ZeRO-3, else 1."""
    return GROUPS.zero_group if sw.sharded_weights else sp.Integer(1)


def tick_slices(sw: Switches) -> sp.Expr:
    """Ways XLA:CPU slices a 1F1B tick's head gradient (and with MTP the modules') before the all-reduce at the
    tick's end: with ZeRO-2/3 it makes each as this rank's ZeRO shard (h/(d*c) of the head's) where d*c divides p,
    else whole. Read in XLA:CPU dumps of grids/derive-mtp-cpu.toml and others (evidence: docs/accuracy.md,
    tick_slices)."""
    if not sw.sharded_grads:
        return sp.Integer(1)
    return sp.Piecewise((GROUPS.zero_group, sp.Eq(sp.Mod(p, GROUPS.zero_group), 0)), (1, True))


def rows(sw: Switches) -> list[Buffer]:
    """The temporaries ZeRO-2/3 add to the step (none below ZeRO-2), each read from an XLA:GPU dump (h100-80gb) of
    grids/derive-zero.toml (docs/accuracy.md, under the row's name)."""
    out = []
    ticks = sw.schedule == "1f1b"  # GPipe's rows stay as read, on both backends
    if sw.sharded_grads:
        out += [
            Buffer(
                "head_grad_micro",
                (h / (tick_slices(sw) if ticks and sw.backend == "cpu" else 1), v / t),
                B_g,
                ("loss_head",),
                "one micro batch's fp32 gradient of the LM head [h, v/t], whole, before its reduce-scatter over "
                "d*c; XLA:CPU's 1F1B tick makes it as a ZeRO shard where d*c divides p (tick_slices)",
            ),
            Buffer(
                "head_grad_scattered",
                (h / GROUPS.zero_group, v / t),
                B_g,
                ("loss_head",),
                "that gradient reduce-scattered, [h/(d c), v/t], before it joins the sharded accumulator (XLA:CPU's "
                "1F1B tick all-reduces it at the tick's end instead and slices the sum into the accumulator after "
                "the loss)",
                backend="gpu" if ticks else "all",
            ),
        ]
        out += (
            []
            if ticks
            else [  # 1F1B reduce-scatters each micro batch's into its accumulator (onef1b's embed_grad)
                Buffer(
                    "embed_grad_shard",
                    (v / (t * GROUPS.zero_group), h),
                    B_g,
                    ("update", "update_gather"),
                    "the "
                    "embedding's gradient reduce-scattered over d*c [v/(t d c), h] while the whole one (embed_grad) "
                    "still exists",
                )
            ]
        )
    if sw.sharded_weights:
        loss = ("relayout", "loss", "loss_input_grad", "loss_head")
        # under 1F1B the gathered embedding and head live through every tick
        embed = TICK if ticks else ("forward_embed",) + (("forward",) + loss if sw.tied else ())
        out += [
            Buffer(
                "embed_gathered",
                (v / t, h),
                B_w,
                embed,
                "the embedding [v/t, h] all-gathered over d*c in param dtype for the lookup, before the pipeline's "
                "layers (1F1B: through every tick); tied, kept as the LM head through the loss loop",
            ),
            Buffer(
                "head_gathered",
                (h, v / t),
                sp.Integer(0) if sw.tied else B_w,
                TICK if ticks else loss[1:],
                "the LM head [h, v/t] all-gathered over d*c in param dtype for the loss (1F1B: through every "
                "tick); tied, that is embed_gathered",
            ),
        ]
    return out
