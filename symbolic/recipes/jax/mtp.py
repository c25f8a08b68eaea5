"""What the multi-token-prediction modules add to the `jax` profile's 1F1B table (jaxcheck.model.mtp): they run
inside the last stage's loss each tick, so their gradients join accumulators the tick loop carries and their layer's
residuals live only through the loss. Read from XLA's dumps of grids/derive-mtp.toml (h100-80gb, and XLA:CPU for the
rows of that backend); accuracy in docs/accuracy.md."""
from __future__ import annotations

from dataclasses import replace

import sympy as sp

from ...components.base import FP32, GROUPS
from ...components.experts import experts_params
from ...config.switches import Switches
from ...config.symbols import B_a, B_g, B_w, b, c, h, n_mtp, s, t, v
from . import moe as jaxmoe
from .buffers import Buffer
from .clock import TICK, UPDATE
from .params import N, mtp_module_params, one_layer_dense
from .tensors import layer_tensors
from .working import attention_backward
from .zero import expert_grad_shards, grad_shards, tick_slices

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
    shard = grad_shards(sw)
    experts = experts_params(sw) / expert_grad_shards(sw) if sw.mtp_moe else sp.Integer(0)
    module = _module(sw)
    through = LOSS + ("loss_modules",)  # a module's forward to its backward
    loop = TICK + UPDATE  # a carry of the tick loop, kept to the update
    return (
        Buffer("mtp_grads", (n_mtp * (mtp_module_params(sw) / shard + experts),), B_g, loop, "fp32 accumulators "
               "of the MTP modules' gradients (their routed experts' over the expert data-parallel group with "
               "ZeRO-2/3, the rest over d*c), each tick's loss adding its own (derive-mtp 0, d2 e2 selective zero1: "
               "param.392{79..93} of the tick loop, f32[1536,768] eh_proj, f32[4,768,256] x 3 experts)"),
        Buffer("mtp_logits", (n_mtp, b, s / c, v / t), FP32, ("loss",), "each module's fp32 logits [b, s/c, v/t] "
               "beside the model's logits and their gradient: XLA:GPU computes every logits of the loss before the "
               "heads' backward takes them one at a time (derive-mtp 1, d2 e2 t2 none zero2: gemm_fusion_dot.646 "
               "and loop_multiply_fusion.17, the module's logits and softmax, beside input_scatter_fusion.13, the "
               "model's logits gradient, the step's peak)"),
        Buffer("mtp_layer", (n_mtp,), _layer_residuals(sw), through, "each module's layer residuals for the micro "
               "batch, all of them (the loss runs under jax.vjp without a remat policy), from its forward to its "
               "backward after the heads'"),
        *([Buffer("mtp_moe_forward", (n_mtp,), _moe_row(sw, "moe_forward"), through, "each module's MoE layer's "
                  "forward working set (recipes.jax.moe's moe_forward: the all-to-all's received buffer, the fused "
                  "gate|up product, the rows transposed expert-major), kept to its backward: no remat in the loss "
                  "(derive-mtp 0: all_to_all.45.1 bf16[2,4,256,768], loop_transpose_fusion.11, gemm_fusion_dot.831 "
                  "f32[2,1024,512], live from the module's forward through the loss's peak)")] if sw.mtp_moe else []),
        Buffer("mtp_casts", (n_mtp, module), B_a, through, "each module's weights cast to compute dtype, kept from "
               "its forward to its backward (derive-mtp 0: wrapped_convert.14 bf16[1536,768] eh_proj, "
               "wrapped_convert.25-27 bf16[4,768,256] experts)"),
        Buffer("mtp_backward", (), _layer_backward(sw), ("loss_modules",), "one module's layer backward: the "
               "attention's backward, its input's gradients, the experts' (derive-mtp 1: gemm_fusion_dot.822-824 "
               "of the module's backward, after the heads')"),
        *([Buffer("mtp_expert_grads", (experts_params(sw),), B_g, ("loss_modules",), "one module's local experts' "
                  "weight gradients, whole, made by the dispatch's backward before they join the accumulators, as "
                  "a pipeline MoE layer's expert_layer_grads (derive-mtp 2: gemm_fusion_dot.962 f32[4,256,768] and "
                  ".963 f32[2,768,512]); a dense weight's gradient joins its accumulator as it is made (derive-mtp "
                  "5: loop_add_fusion.25-28)")] if sw.mtp_moe else []),
    )


def _gpu_rows(sw: Switches) -> tuple[Buffer, ...]:
    """XLA:GPU's own rows of the modules' loss under ZeRO-2/3."""
    return (
        *([Buffer("mtp_head_grad_micro", (n_mtp, h, v / t), B_g, ("loss_head",), "ZeRO-2: each module's fp32 "
                  "gradient of the LM head for the micro batch, whole, beside the model's (recipes.jax.zero's "
                  "head_grad_micro) until one reduce-scatter over d*c takes them all (derive-mtp 1, d2 e2 t2 none "
                  "zero2: gemm_fusion_dot.649 and .647 f32[768,6144], both live to reduce-scatter.41); under ZeRO-3 "
                  "XLA:GPU makes the heads' gradients one at a time, the model's row standing for each (holdout-mtp-4 "
                  "3, mimo-1536 d2 t2 selective zero3: gemm_fusion_dot.220 f32[1536,12000] alone at the step's peak; "
                  "holdout-mtp-3's mtp-v3-1536 d2 e2 t2 selective zero3: one f32[1536,15000])",
                  backend="gpu")] if sw.sharded_grads and not sw.sharded_weights else []),
        *([Buffer("mtp_logits_grad", (b, s / c, v / t), FP32, ("loss_head",), "ZeRO-3: a module's fp32 logits "
                  "gradient beside the model's (onef1b's logits_grad) while the head gradients are made (holdout-mtp-4 "
                  "3: input_scatter_fusion and .1 f32[1,1024,12000], both live at the step's peak; holdout-mtp-3's "
                  "two ZeRO-3 steps, one and two modules: two such buffers live in both)", backend="gpu")]
          if sw.sharded_weights else []),
        *([Buffer("mtp_head_cast", (h, v / t), sp.Piecewise((B_a, sp.Eq(t, 1)), (0, True)), ("loss_head",), "ZeRO-3 "
                  "at t = 1: the gathered LM head cast to compute dtype for a logits product's backward, live with "
                  "the head gradients (derive-mtp 2, d4 e2 t1 full: wrapped_convert.79 bf16[768,12288] beside "
                  "gemm_fusion_dot.728; holdout-mtp-3's mtp-moe-896 d2 e2 p2 t1: wrapped_convert.52); at t = 2 none "
                  "was live there (holdout-mtp-4 3 and holdout-mtp-3's mtp-v3-1536 t2); without ZeRO-3 each "
                  "product's cast is consumed at once", backend="gpu")] if sw.sharded_weights else []),
    )


def _gathered(sw: Switches) -> tuple[Buffer, ...]:
    """ZeRO-3: the modules' gathered weights."""
    module = _module(sw)
    through = LOSS + ("loss_modules",)  # a module's forward to its backward
    return (
        *([Buffer("mtp_gathered", (n_mtp, module), B_w, ("forward_embed", "forward") + through, "ZeRO-3: the "
                  "modules' weights all-gathered over d*c in param dtype for the loss, whole through the tick "
                  "(derive-mtp 2, d4 e2 full zero3: all-gather-start.12 and .13, f32[2,768,256] x 3 of the experts, "
                  "live from the step's start)")] if sw.sharded_weights else []),
    )


def _cpu_rows(sw: Switches) -> tuple[Buffer, ...]:
    """XLA:CPU's own rows: the modules' widened weights and the all-reduce at the tick's end."""
    sliced = tick_slices(sw)
    module = _module(sw)
    return (
        Buffer("mtp_widened", (n_mtp, module), FP32, TICK, "each module's weights widened to fp32 for XLA:CPU's "
               "fp32 dots, and a transposed copy of each, once for the whole tick (derive-mtp 5 on CPU: "
               "wrapped_convert.7, .9, .11 f32[1024,1408] of the MLP and wrapped_copy.1-3 beside them, "
               "wrapped_convert.1 and wrapped_copy.5 of eh_proj, live from the tick's start to its end)",
               count=2, backend="cpu"),
        Buffer("mtp_head_grads", (n_mtp, h / sliced, v / t), B_g, ("loss_head", "backward_embed"), "each module's "
               "fp32 gradient of the LM head for the micro batch (tick_slices: a ZeRO shard of it), beside the "
               "model's, held to the tick's end, where XLA:CPU sums the tick's gradients over d*c in one all-reduce, "
               "at every ZeRO stage (derive-mtp 0 on CPU, ZeRO-1: ynn_fusion.212 and .213 f32[12288,768], the model's "
               "and the module's, to all-reduce.692, the step's peak; holdout-mtp-4 5, mimo-1536 d2 p3 full ZeRO-2: "
               "ynn_fusion.37 and .38 f32[24000,1536] to all-reduce.426, the step's peak; holdout-mtp-4 3, d2 t2 "
               "selective ZeRO-3: ynn_fusion.67 and .68 f32[12000,1536] to all-reduce.516: XLA:CPU reduce-scatters "
               "none of them)", backend="cpu"),
        Buffer("mtp_model_head_grad", (h / sliced, v / t), B_g, ("backward_embed",), "the model's own fp32 head "
               "gradient for the micro batch (recipes.jax.zero's head_grad_micro; tick_slices) held with the "
               "modules' to that all-reduce, at every ZeRO stage (the same dumps: ynn_fusion.212, .38, .68; ZeRO-1 "
               "also grids/derive-mtp-cpu.toml's mimo-1024 d2 p2 none zero1: ynn_fusion.61 and .62 f32[16384,1024], "
               "and holdout-cpu-3's mimo-1536 d2 p3 none zero1: ynn_fusion.33 and .34)", backend="cpu"),
        Buffer("mtp_tick_grads", (2, n_mtp * mtp_module_params(sw) / sliced
                                  + sp.Piecewise((one_layer_dense(sw), sp.Eq(N, 1)), (0, True))),
               sp.Piecewise((0, sp.Eq(GROUPS.zero_group, 1)), (B_g, True)), ("backward_embed",), "the tick's own fp32 gradients "
               "of the modules' weights but their routed experts (tick_slices), and their sums from that all-reduce "
               "beside them; with one layer per stage, whose one-trip layer loop XLA removes, its layer's too "
               "(derive-mtp-cpu's mimo-1024 d4 p2 selective zero2: convert_convert_fusion.1-3 f32[2816,1024] and the "
               "eh_proj's f32[1024,2048] to all-reduce.400{14,15,16,18}; holdout-mtp-4's mimo-1536 d2 p3 full zero2: "
               "convert_convert_fusion.1-3 of the module and convert_bitcast_fusion.10-13 of the layer, "
               "f32[1536,4096], to all-reduce.426{8,9,10,26,27,28}); none when d*c = 1", backend="cpu"),
        Buffer("mtp_grads_summed", ((n_mtp + 1) / sliced + 1, v / t, h),
               sp.Piecewise((0, sp.Eq(GROUPS.zero_group, 1)), (B_g, True)),
               ("backward_embed",), "that all-reduce's outputs beside its inputs: the model's and each module's "
               "head gradient and the shifted tokens' lookup gradient (the first stage's lookup's is "
               "lookup_grad_summed) (derive-mtp 0: all-reduce.692{0,1,4,5} f32[12288,768]; holdout-mtp-4 5: "
               "all-reduce.426{12,13,16,17} f32[24000,1536]; holdout-mtp-4 3: all-reduce.516{0,1,4,5}); none when "
               "d*c = 1", backend="cpu"),
        Buffer("mtp_lookup_grad", (v / t, h), B_g, ("backward_embed",), "the shifted tokens' lookup gradient of the "
               "local embedding rows, a scatter of its own beside the first stage's lookup_grad (same dump: "
               "wrapped_scatter.18 f32[12288,768] beside wrapped_scatter.17)", backend="cpu"),
    )


def _module(sw: Switches) -> sp.Expr:
    """One module's parameters, whole on this device (its routed experts' too)."""
    return mtp_module_params(sw) + (experts_params(sw) if sw.mtp_moe else 0)


def rows(sw: Switches) -> tuple[Buffer, ...]:
    """The MTP rows of the 1F1B table (none without MTP). The loss runs in order (jaxcheck.model.onef1b): every
    logits with the modules' forward ("loss"); the heads' backward, the model's cotangent ("loss_input_grad") and the
    head's gradients ("loss_head"); then, behind an optimization barrier, the modules' layers' backward
    ("loss_modules"). A module's residuals live from its forward to its backward, through all four."""
    if not sw.mtp:
        return ()
    return _module_rows(sw) + _gpu_rows(sw) + _gathered(sw) + _cpu_rows(sw)
