"""What an MoE layer of jaxcheck's compiled step keeps per micro batch (jaxcheck.model.moe, .dispatch): the residuals
of its MLP half under each remat policy, named as the model's checkpoint names, one device's shard.

Per device an MoE layer routes the T = b s / (c t) tokens of its sequence-parallel shard (the between-blocks
layout), keeps C = ceil(C_f T k_e / E) of each expert's assignments per source device, and runs its E/e local experts
on n = t_e e C rows each (all-to-all over the e expert ranks, all-gathered over tensor when t_e = t)."""

from __future__ import annotations

import sympy as sp

from ...config.dtypes import DTYPES
from ...config.switches import Switches
from ...config.symbols import B_a, B_g, B_w, C_f, E, L, b, c, e, f_e, f_s, h, k_e, p, s, t, t_e
from ...components.base import FP32, INT32, Component, repeated, tokens

BOOL = sp.Integer(DTYPES["bool"])  # bytes of a bool
FLOAT_GUARD = sp.Rational(1, 10**9)  # jaxcheck's capacity subtracts it before the ceiling; renderings leave it out


def moe_tokens() -> sp.Expr:
    """T: one device's tokens of one micro batch in an MoE layer, b s / (c t)."""
    return b * s / (c * t)


def capacity() -> sp.Expr:
    """C: the assignments each expert takes from one device's T tokens, ceil(C_f T k_e / E), at least 1
    (jaxcheck.model.dispatch.capacity, which subtracts 1e-9 before the ceiling against float noise)."""
    return sp.Max(1, sp.ceiling(C_f * moe_tokens() * k_e / E - FLOAT_GUARD))


def expert_rows() -> sp.Expr:
    """n: the rows each local expert computes, t_e e C (C from each of the e expert ranks, gathered over tensor when
    t_e = t)."""
    return t_e * e * capacity()


def _experts(width: sp.Expr, nbytes: sp.Expr) -> sp.Expr:
    """Bytes of a [E/e, n, width] tensor of the local experts' rows."""
    return nbytes * E / e * expert_rows() * width


def _router_none() -> list[Component]:
    """Remat none: what autodiff of the router keeps besides its input (moe_in): the fp32 softmax over E, its two
    [T, 1] reductions, the int32 top-k indices [T, k_e], the top-k probabilities and their sum and its reciprocal."""
    T = moe_tokens()
    return [
        Component("router_probs", FP32 * T * E, "'router_probs': fp32 softmax over the E experts [T, E]"),
        repeated("softmax_sums", 2, FP32 * T, "fp32 [T, 1] max and sum of the router's softmax"),
        Component("topk_indices", INT32 * T * k_e, "int32 indices of the k_e chosen experts [T, k_e, 1]"),
        repeated("topk_sums", 2, FP32 * T, "fp32 [T, 1] sum of the top-k probabilities and its reciprocal"),
        Component("router_topk", FP32 * T * k_e, "'router_topk': the k_e chosen probabilities [T, k_e]"),
    ]


def _dispatch(selective: bool) -> list[Component]:
    """The routing slots, the local experts' rows and SwiGLU (none: with SiLU's three intermediates), the combine's
    slots, kept flags and weights (none: fp32 and their bf16 cast), and the gathered expert outputs [T k_e, h]."""
    A = moe_tokens() * k_e  # assignments
    parts = [
        Component("slot_tokens", INT32 * E * capacity(), "'moe_slots': the token each send-buffer slot holds [E, C]"),
        Component(
            "moe_dispatched",
            _experts(h, B_a),
            "'moe_dispatched': the local experts' rows [E/e, n, h] after "
            "the all-to-all (and the all-gather over tensor when t_e = t)",
        ),
        Component("moe_gate", _experts(f_e / t_e, B_a), "'moe_gate': each local expert's gate [E/e, n, f_e/t_e]"),
        Component("moe_up", _experts(f_e / t_e, B_a), "'moe_up': each local expert's up [E/e, n, f_e/t_e]"),
    ]
    if not selective:
        parts.append(
            repeated(
                "moe_silu_parts",
                3,
                _experts(f_e / t_e, B_a),
                "three SiLU intermediates of the experts' gate (sigmoid, its complement, silu)",
            )
        )
    parts += [
        Component("moe_swiglu", _experts(f_e / t_e, B_a), "'moe_swiglu': silu(gate) * up, the experts' down input"),
        Component("assignment_slots", INT32 * A, "'moe_slots': each assignment's slot in the returned buffer [T k_e]"),
        Component("assignment_kept", BOOL * A, "'moe_slots': whether each assignment is within capacity [T k_e]"),
    ]
    if not selective:
        parts += [
            Component("combine_weights", FP32 * A, "fp32 router weight of each assignment, 0 if dropped"),
            Component("combine_weights_cast", B_a * A, "those weights cast to the compute dtype [T k_e, 1]"),
        ]
    parts.append(
        Component(
            "moe_expert_out",
            B_a * A * h,
            "'moe_expert_out': each assignment's expert output "
            "[T k_e, h], gathered from the returned buffer for the weighted combine",
        )
    )
    return parts


def _shared(sw: Switches, selective: bool) -> list[Component]:
    """The shared experts (a tensor-parallel SwiGLU of width f_s on the gathered input; none: with SiLU's three
    intermediates), and with the sigmoid gate its fp32 output (none: and its cast) and the gated output."""
    if not sw.shared:
        return []
    parts = [
        Component("shared_in", tokens(h, B_a, False), "'shared_in': the MoE input all-gathered over t [b, s/c, h]"),
        Component("shared_gate", tokens(f_s, B_a, True), "'shared_gate': the shared experts' gate [b, s/c, f_s/t]"),
        Component("shared_up", tokens(f_s, B_a, True), "'shared_up': the shared experts' up"),
    ]
    if not selective:
        parts.append(
            repeated(
                "shared_silu_parts", 3, tokens(f_s, B_a, True), "three SiLU intermediates of the shared experts' gate"
            )
        )
    parts.append(Component("shared_swiglu", tokens(f_s, B_a, True), "'shared_swiglu': their down input"))
    if sw.shared_gate:
        parts.append(
            Component(
                "shared_sigmoid",
                tokens(1, FP32, True),
                "'shared_sigmoid': fp32 sigmoid of the shared gate [b, s/(c t), 1]",
            )
        )
        if not selective:
            parts.append(Component("shared_sigmoid_cast", tokens(1, B_a, True), "that sigmoid in compute dtype"))
        parts.append(
            Component(
                "shared_out",
                tokens(h, B_a, True),
                "'shared_out': the shared experts' output before the gate [b, s/(c t), h]",
            )
        )
    return parts


def moe_mlp_none(sw: Switches) -> list[Component]:
    """Remat none: the MoE half of a layer after its RMSNorm's residuals: the MoE input, the router, the dispatch and
    the experts, the combine, the shared experts."""
    return [
        Component(
            "moe_in",
            tokens(h, B_a, True),
            "'moe_in': the normed input of the router and the dispatch, in the between-blocks layout [b, s/(c t), h]",
        ),
        *_router_none(),
        *_dispatch(False),
        *_shared(sw, False),
    ]


def moe_mlp_selective(sw: Switches) -> list[Component]:
    """Remat selective: the MoE tensors SELECTIVE_SAVED names (the top-k indices are recomputed from the saved
    softmax; no all-to-all runs again)."""
    T = moe_tokens()
    return [
        Component("moe_in", tokens(h, B_a, True), "'moe_in': the normed input of the router and the dispatch"),
        Component("router_probs", FP32 * T * E, "'router_probs': fp32 softmax over the E experts [T, E]"),
        Component("router_topk", FP32 * T * k_e, "'router_topk': the k_e chosen probabilities [T, k_e]"),
        Component("router_weights", FP32 * T * k_e, "'router_weights': the renormalised top-k weights [T, k_e]"),
        *_dispatch(True),
        *_shared(sw, True),
    ]


def _masked_expert_grads(experts: sp.Expr):
    """1F1B with ZeRO-2/3: one MoE layer's local experts' fp32 weight gradients, whole, masked where the stage ran no
    backward."""
    from .buffers import Buffer

    return Buffer(
        "expert_layer_grads",
        (experts,),
        B_g,
        ("backward_weights",),
        (
            "one MoE layer's local experts' weight gradients in param dtype, whole: under 1F1B a stage's gradients "
            "are selected to zero where it ran no backward (jaxcheck.model.onef1b._masked), which XLA:GPU does on the "
            "whole fp32 gradient before ZeRO-2/3's reduce-scatter"
        ),
    )


def rows(sw: Switches) -> list:
    """The temporaries an MoE layer adds to the step (none without experts), one layer at a time, read from XLA:GPU
    dumps (h100-80gb) of grids/derive-moe.toml (docs/accuracy.md, under the row's name)."""
    from .buffers import Buffer

    if not sw.moe:
        return []
    local = E / e * expert_rows()  # the local experts' rows
    sent = E * capacity()  # one device's send (or receive) buffer, [E, C] rows of h
    parts = [
        Buffer(
            "moe_forward",
            (),
            B_a * (t_e * sent * h + local * (2 * f_e / t_e + h)),
            ("forward",),
            "one MoE "
            "layer's forward: the all-to-all's received buffer [E, C, h] (all-gathered over tensor to "
            "[t_e, E, C, h] when t_e = t > 1), the local experts' fused gate|up product "
            "[E/e, n, 2 f_e/t_e] and their rows transposed expert-major [E/e, n, h]",
        ),
        Buffer(
            "moe_backward",
            (),
            B_a * local * (f_e / t_e + h) + 2 * B_a * moe_tokens() * h,
            ("backward_attention",),
            "one MoE layer's backward, held with the attention's: the gradient of the "
            "experts' SwiGLU output [E/e, n, f_e/t_e] (the down projection's backward), the rows' cotangent "
            "[E/e, n, h], and the cotangents of the router's and the dispatch's input [T, h] (small expert matmuls "
            "fuse it into fp32 products instead)",
        ),
    ]
    experts = E / e * 3 * h * f_e / t_e  # one MoE layer's local expert parameters
    backward = ("backward_attention", "backward_weights")
    masked = sw.schedule == "1f1b" and sw.sharded_grads  # 1F1B masks the whole fp32 gradient before ZeRO's scatter
    one_layer = sp.Piecewise((0, sp.Eq(L / p, 1)), (B_w, True))  # one layer per stage: the stack read in place
    parts += [
        Buffer(
            "expert_layer_weights",
            (experts,),
            one_layer if not sw.sharded_weights else B_a,
            backward if not sw.sharded_weights else ("backward_attention",),
            "one MoE layer's local experts' weights for its backward: sliced from the stack in param dtype (none "
            "with one layer per stage), or (ZeRO-3) all-gathered over their expert data-parallel group in "
            "compute dtype, dead before the weight gradients' dots",
        ),
        _masked_expert_grads(experts)
        if masked
        else Buffer(
            "expert_layer_grads",
            (experts,),
            B_g if not sw.sharded_grads else sp.Rational(5, 3) * B_a,
            ("backward_weights",),
            "one MoE layer's local experts' weight gradients, converted to param dtype "
            "before they join the accumulator; ZeRO-2/3: the fused gate|up gradient [E/e, 2 f_e/t_e, h], its two "
            "slices and the down gradient, all-reduced in compute dtype in the dispatch's shard_map before the "
            "expert data-parallel shard is sliced",
        ),
    ]
    if sw.recompute == "full":
        parts.append(
            Buffer(
                "moe_recompute",
                (),
                B_a * (local * (3 * f_e / t_e + h) + t_e * sent * h),
                ("backward_attention",),
                "full remat: one MoE layer's forward run again in the backward, "
                "its gate, up and SwiGLU product [E/e, n, f_e/t_e] each, transposed rows [E/e, n, h] and "
                "received buffer [E, C, h] ([t_e, E, C, h] all-gathered over tensor when t_e = t > 1)",
            )
        )
    return parts
