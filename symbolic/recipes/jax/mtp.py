"""What the multi-token-prediction modules add to the `jax` profile's 1F1B table (jaxcheck.model.mtp): they run
inside the last stage's loss each tick, so their gradients join accumulators the tick loop carries and their layer's
residuals live only through the loss. Read from XLA:GPU dumps of grids/derive-mtp.toml (h100-80gb)."""
from __future__ import annotations

from dataclasses import replace

import sympy as sp

from ...components.base import FP32
from ...components.experts import experts_params
from ...config.switches import Switches
from ...config.symbols import B_a, B_g, B_w, b, c, h, n_mtp, s, t, v
from .buffers import Buffer
from .params import mtp_module_params
from .tensors import layer_tensors
from .zero import expert_grad_shards, grad_shards

LOSS = ("loss", "loss_input_grad", "loss_head")  # the last stage's loss and its backward, inside one tick


def _layer_residuals(sw: Switches) -> sp.Expr:
    """One module's layer residuals for one micro batch: everything jax.vjp keeps (no remat policy in the loss)."""
    kept = replace(sw, recompute="none")
    return sp.Add(*(x.expr for x in layer_tensors(kept, sw.mtp_moe)))


def rows(sw: Switches, loop: tuple[str, ...]) -> tuple[Buffer, ...]:
    """The MTP rows of the 1F1B table (none without MTP); loop: the phases a tick-loop carry is live in."""
    if not sw.mtp:
        return ()
    shard = grad_shards(sw)
    experts = experts_params(sw) / expert_grad_shards(sw) if sw.mtp_moe else sp.Integer(0)
    module = mtp_module_params(sw) + (experts_params(sw) if sw.mtp_moe else 0)  # one module's, whole on this device
    return (
        Buffer("mtp_grads", (n_mtp * (mtp_module_params(sw) / shard + experts),), B_g, loop, "fp32 accumulators "
               "of the MTP modules' gradients (their routed experts' over the expert data-parallel group with "
               "ZeRO-2/3, the rest over d*c), each tick's loss adding its own (derive-mtp 0, d2 e2 selective zero1: "
               "param.392{79..93} of the tick loop, f32[1536,768] eh_proj, f32[4,768,256] x 3 experts)"),
        Buffer("mtp_embed_grad", (v / (t * shard), h), B_g, loop, "fp32 accumulator of the embedding's gradient "
               "from the MTP modules' lookups of the shifted tokens, a third vocabulary-sized accumulator beside the "
               "lookup's and the head's (same dump: param.392{93} f32[12288,768])"),
        Buffer("mtp_logits", (n_mtp, b, s / c, v / t), FP32, LOSS, "each module's fp32 logits [b, s/c, v/t] (then "
               "their softmax), beside the model's logits gradient: XLA:GPU computes every logits of the loss, then "
               "their gradients one after the other (same dump: gemm_fusion_dot.632 and loop_multiply_fusion.15 "
               "f32[1,1024,12288] beside input_scatter_fusion.16, the main logits' gradient, the step's peak)"),
        Buffer("mtp_layer", (n_mtp,), _layer_residuals(sw), LOSS, "each module's layer residuals for the micro "
               "batch, all of them (the loss runs under jax.vjp without a remat policy), from its forward to its "
               "backward inside the loss"),
        Buffer("mtp_casts", (n_mtp, module), B_a, LOSS, "each module's weights cast to compute dtype, kept from "
               "its forward to its backward (derive-mtp 0: wrapped_convert.14 bf16[1536,768] eh_proj, "
               "wrapped_convert.25-27 bf16[4,768,256] experts, live through the loss)"),
        *([Buffer("mtp_gathered", (n_mtp, module), B_w, ("forward_embed", "forward") + LOSS, "ZeRO-3: the "
                  "modules' weights all-gathered over d*c in param dtype for the loss, whole through the tick "
                  "(derive-mtp 2, d4 e2 full zero3: all-gather-start.12 and .13, f32[2,768,256] x 3 of the experts, "
                  "live from the step's start)")] if sw.sharded_weights else []),
    )
