"""What ZeRO-2 and ZeRO-3 change in jaxcheck's compiled step (the `jax` profile): the ways gradients and parameters
are split over data x context, and the buffers the sharding adds, one unit at a time."""
from __future__ import annotations

import sympy as sp

from ...config.switches import Switches
from ...config.symbols import B_g, B_w, c, d, h, t, v
from .buffers import Buffer


def grad_shards(sw: Switches) -> sp.Expr:
    """Ways the gradient accumulators are split: d*c with ZeRO-2/3 (a layer's major dimension that d*c divides,
    jaxcheck.model.rules.layer_zero_spec), else 1."""
    return d * c if sw.sharded_grads else sp.Integer(1)


def expert_grad_shards(sw: Switches) -> sp.Expr:
    """Ways the routed experts' gradient accumulators are split: their expert data-parallel group d t c / (e t_e)
    with ZeRO-2/3 (jaxcheck.model.rules.zero_group), else 1."""
    from ...components.experts import expert_data_parallel

    return expert_data_parallel() if sw.sharded_grads else sp.Integer(1)


def param_shards(sw: Switches) -> sp.Expr:
    """Ways the parameters are split: d*c with ZeRO-3, else 1."""
    return d * c if sw.sharded_weights else sp.Integer(1)


def rows(sw: Switches) -> list[Buffer]:
    """The temporaries ZeRO-2/3 add to the step (none below ZeRO-2), each read from an XLA:GPU dump (h100-80gb) of
    grids/derive-zero.toml."""
    out = []
    if sw.sharded_grads:
        out += [
            Buffer("head_grad_micro", (h, v / t), B_g, ("loss_head",), "one micro batch's fp32 gradient of the LM head, "
                   "whole, before its reduce-scatter over d*c (llama3-8b d2 t2 p2 c2 full zero2: gemm_fusion_dot.56 "
                   "f32[4096,64128])"),
            Buffer("head_grad_scattered", (h / (d * c), v / t), B_g, ("loss_head",), "that gradient reduce-scattered, "
                   "before it joins the sharded accumulator (same dump: reduce-scatter.2.1 f32[1024,64128])"),
            Buffer("embed_grad_shard", (v / (t * d * c), h), B_g, ("update", "update_gather"), "the embedding's "
                   "gradient "
                   "reduce-scattered over d*c while the whole one (embed_grad) still exists (same dump: "
                   "reduce-scatter.11.1 f32[16032,4096])"),
        ]
    if sw.sharded_weights:
        loss = ("relayout", "loss", "loss_head")
        out += [
            Buffer("embed_gathered", (v / t, h), B_w, ("forward_embed",) + (("forward",) + loss if sw.tied else ()),
                   "the embedding all-gathered over d*c in param dtype for the lookup, before the pipeline's layers "
                   "(llama3-8b d4 t2 selective zero3: all-gather-start.19 f32[64128,4096]; derive-moe 6: "
                   "all-gather-start.19 f32[16000,1024], the forward's peak, at the step's 8th instruction); tied, "
                   "kept as the LM head through the loss loop (tied-1024 d2 t2 p2 selective zero3: "
                   "all-gather-start.10 f32[16000,1024], live from the step's start)"),
            Buffer("head_gathered", (h, v / t), sp.Integer(0) if sw.tied else B_w, ("loss", "loss_head"), "the LM "
                   "head all-gathered over d*c in param dtype for the loss loop (llama3-8b d4 t2 selective zero3: "
                   "all-gather-start.21 f32[4096,64128]); tied, that is embed_gathered"),
        ]
    return out
