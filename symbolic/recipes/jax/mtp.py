"""What the multi-token-prediction modules add to the `jax` profile's 1F1B table (jaxcheck.model.mtp): they run
inside the last stage's loss each tick, so their gradients join accumulators the tick loop carries and their layer's
residuals live only through the loss. Read from XLA's dumps of grids/derive-mtp.toml (h100-80gb, and XLA:CPU for the
rows of that backend); accuracy, and the dumps of each row under its name, in docs/accuracy.md."""

from __future__ import annotations

from dataclasses import replace

import sympy as sp

from ...components.base import FP32
from ...components.experts import experts_params
from ...config.switches import Switches
from ...config.symbols import B_a, B_g, B_w, b, c, h, n_mtp, s, t, v
from . import moe as jaxmoe
from .buffers import Buffer
from .clock import TICK, UPDATE
from .mtp_cpu import cpu_rows
from .params import mtp_module_params, mtp_module_whole
from .tensors import layer_tensors
from .working import attention_backward
from .zero import expert_grad_shards, grad_shards

LOSS = ("loss", "loss_input_grad", "loss_head")  # the last stage's loss and its backward, inside one tick


def _layer_residuals(sw: Switches) -> sp.Expr:
    """One module's layer residuals for one micro batch: everything jax.vjp keeps (no remat policy in the loss)."""
    kept = replace(sw, recompute="none")
    return sp.Add(*(x.expr for x in layer_tensors(kept, sw.mtp_moe)))


def _moe_row(sw: Switches, name: str) -> sp.Expr:
    """The bytes of one of recipes.jax.moe's per-layer rows, for an MTP module's MoE layer (0 for a dense one)."""
    return next(row.bytes for row in jaxmoe.rows(sw) if row.name == name) if sw.mtp_moe else sp.Integer(0)


def _layer_backward(sw: Switches) -> sp.Expr:
    """One module's layer backward beyond its residuals, as a pipeline layer's: the attention's backward working set,
    the three [b, s/c, h] gradients of its normed input (gpipe's attention_backward and input_grads rows) and, for an
    MoE layer, the experts' backward (recipes.jax.moe's moe_backward row)."""
    return attention_backward(sw) + 3 * B_a * b * s * h / c + _moe_row(sw, "moe_backward")


def _module_rows(sw: Switches) -> tuple[Buffer, ...]:
    """Each module's accumulators, logits, layer residuals and casts, and its layer's backward, on both backends."""
    return _module_forward(sw) + _module_backward(sw)


def _module_forward(sw: Switches) -> tuple[Buffer, ...]:
    """Each module's gradient accumulators, fp32 logits, layer residuals and its MoE layer's forward."""
    shard = grad_shards(sw)
    experts = experts_params(sw) / expert_grad_shards(sw) if sw.mtp_moe else sp.Integer(0)
    through = LOSS + ("loss_modules",)  # a module's forward to its backward
    loop = TICK + UPDATE  # a carry of the tick loop, kept to the update
    return (
        Buffer(
            "mtp_grads",
            (n_mtp * (mtp_module_params(sw) / shard + experts),),
            B_g,
            loop,
            "fp32 accumulators "
            "of the MTP modules' gradients (their routed experts' over the expert data-parallel group with "
            "ZeRO-2/3, the rest over d*c), carried by the tick loop, each tick's loss adding its own",
        ),
        Buffer(
            "mtp_logits",
            (n_mtp, b, s / c, v / t),
            FP32,
            ("loss",),
            "each module's fp32 logits [b, s/c, v/t] "
            "beside the model's logits and their gradient: every logits of the loss is computed before the "
            "heads' backward takes them one at a time",
        ),
        Buffer(
            "mtp_layer",
            (n_mtp,),
            _layer_residuals(sw),
            through,
            "each module's layer residuals for the micro "
            "batch, all of them (the loss runs under jax.vjp without a remat policy), from its forward to its "
            "backward after the heads'",
        ),
        *(
            [
                Buffer(
                    "mtp_moe_forward",
                    (n_mtp,),
                    _moe_row(sw, "moe_forward"),
                    through,
                    "each module's MoE layer's "
                    "forward working set (recipes.jax.moe's moe_forward: the all-to-all's received buffer, the fused "
                    "gate|up product, the rows transposed expert-major), kept to its backward: no remat in the "
                    "loss",
                )
            ]
            if sw.mtp_moe
            else []
        ),
    )


def _module_backward(sw: Switches) -> tuple[Buffer, ...]:
    """Each module's compute-dtype casts, one module's layer backward and its local experts' gradients."""
    module = mtp_module_whole(sw)
    through = LOSS + ("loss_modules",)  # a module's forward to its backward
    return (
        Buffer(
            "mtp_casts",
            (n_mtp, module),
            B_a,
            through,
            "each module's weights cast to compute dtype, kept from its forward to its backward",
        ),
        Buffer(
            "mtp_backward",
            (),
            _layer_backward(sw),
            ("loss_modules",),
            "one module's layer backward, after the "
            "heads': the attention's backward, its input's gradients, the experts'",
        ),
        *(
            [
                Buffer(
                    "mtp_expert_grads",
                    (experts_params(sw),),
                    B_g,
                    ("loss_modules",),
                    "one module's local experts' "
                    "fp32 weight gradients, whole, made by the dispatch's backward before they join the accumulators, "
                    "as a pipeline MoE layer's expert_layer_grads (a dense weight's joins its accumulator as it is "
                    "made)",
                )
            ]
            if sw.mtp_moe
            else []
        ),
    )


def _gpu_rows(sw: Switches) -> tuple[Buffer, ...]:
    """XLA:GPU's own rows of the modules' loss under ZeRO-2/3."""
    if sw.sharded_weights:
        return (
            Buffer(
                "mtp_logits_grad",
                (b, s / c, v / t),
                FP32,
                ("loss_head",),
                "ZeRO-3: a module's fp32 logits "
                "gradient [b, s/c, v/t] beside the model's (onef1b's logits_grad) while the head gradients are "
                "made",
                backend="gpu",
            ),
            Buffer(
                "mtp_head_cast",
                (h, v / t),
                sp.Piecewise((B_a, sp.Eq(t, 1)), (0, True)),
                ("loss_head",),
                "ZeRO-3 "
                "at t = 1: the gathered LM head [h, v/t] cast to compute dtype for a logits product's backward, "
                "live with the head gradients; none at t > 1, nor without ZeRO-3 (each product's cast is consumed "
                "at once)",
                backend="gpu",
            ),
        )
    if not sw.sharded_grads:
        return ()
    return (
        Buffer(
            "mtp_head_grad_micro",
            (n_mtp, h, v / t),
            B_g,
            ("loss_head",),
            "ZeRO-2: each module's fp32 "
            "gradient of the LM head [h, v/t] for the micro batch, whole, beside the model's (recipes.jax.zero's "
            "head_grad_micro) until one reduce-scatter over d*c takes them all; under ZeRO-3 XLA:GPU makes the "
            "heads' gradients one at a time, the model's row standing for each",
            backend="gpu",
        ),
    )


def _gathered(sw: Switches) -> tuple[Buffer, ...]:
    """ZeRO-3: the modules' gathered weights."""
    if not sw.sharded_weights:
        return ()
    through = LOSS + ("loss_modules",)  # a module's forward to its backward
    return (
        Buffer(
            "mtp_gathered",
            (n_mtp, mtp_module_whole(sw)),
            B_w,
            ("forward_embed", "forward") + through,
            "ZeRO-3: the modules' weights all-gathered over d*c in param dtype for the loss, whole through the tick",
        ),
    )


def rows(sw: Switches) -> tuple[Buffer, ...]:
    """The MTP rows of the 1F1B table (none without MTP). The loss runs in order (jaxcheck.model.onef1b): every
    logits with the modules' forward ("loss"); the heads' backward, the model's cotangent ("loss_input_grad") and the
    head's gradients ("loss_head"); then, behind an optimization barrier, the modules' layers' backward
    ("loss_modules"). A module's residuals live from its forward to its backward, through all four."""
    if not sw.mtp:
        return ()
    return _module_rows(sw) + _gpu_rows(sw) + _gathered(sw) + cpu_rows(sw)
