"""What an MoE layer's MLP keeps for backward per micro batch, and the dispatch buffers it holds while one layer runs,
per GPU, as Megatron-Core's MoELayer with the all-to-all token dispatcher and grouped experts does: the router on the
sequence-parallel shard of T = s b / (t c) tokens, each token sent to k_e experts over the e expert-parallel ranks,
the tokens an expert rank receives all-gathered over its t_e expert tensor-parallel ranks. With capacity factor C_f an
expert takes at most C_f times its even share (padded to it), and a dropless run with an imbalance of C_f receives as
many: each GPU computes R = C_f k_e T t_e token rows (megatron/core/transformer/moe/: router.py, token_dispatcher.py,
experts.py, moe_utils.py)."""
from __future__ import annotations

import sympy as sp

from ..config.switches import Switches
from ..config.symbols import B_a, C_f, E, b, c, f_e, f_s, h, k_e, s, t, t_e
from .base import FP32, Component


def local_tokens() -> sp.Expr:
    """T: the tokens of one micro batch on one GPU in the MoE layer, the sequence-parallel shard s b / (t c)."""
    return s * b / (t * c)


def expert_rows() -> sp.Expr:
    """R: the token rows one GPU's experts compute for one micro batch, C_f k_e T t_e (k_e copies of each token, an
    even share of C_f over the e ranks of the all-to-all, gathered over the t_e expert tensor-parallel ranks)."""
    return C_f * k_e * local_tokens() * t_e


def _rows(name: str, rows: sp.Expr, width: sp.Expr, nbytes: sp.Expr, doc: str) -> Component:
    return Component(name, nbytes * rows * width, doc)


def router_tensors() -> list[Component]:
    """The router's saved tensors: fp32 logits' softmax (or sigmoid) scores [T, E] for the score function's and the
    load-balancing loss's backward, and the fp32 probabilities of the k_e chosen experts [T, k_e]."""
    T = local_tokens()
    return [
        _rows("router_scores", T, E, FP32, "fp32 router scores [T, E] of the sequence-parallel shard, kept by the "
              "softmax's and the aux loss's backward (Megatron-Core TopKRouter, moe_router_dtype fp32)"),
        _rows("router_probs", T, k_e, FP32, "fp32 probabilities of the k_e chosen experts [T, k_e], kept to weigh the "
              "experts' outputs in the combine and for their gradient"),
    ]


def expert_tensors() -> list[Component]:
    """Routed experts, per GPU: the R token rows they receive, and each SwiGLU tensor of width f_e / t_e as the paper
    counts a dense SwiGLU (gate, up, SiLU(gate), the down projection's input), and the experts' output [k_e C_f T, h]
    kept to weigh it by the router probabilities in the unpermute."""
    R = expert_rows()
    width = f_e / t_e
    return [
        _rows("expert_input", R, h, B_a, "tokens the experts receive, permuted by expert, all-to-all'd over e and "
              "all-gathered over t_e: the grouped fc1's input, kept for its weight gradient"),
        _rows("expert_gate", R, width, B_a, "gate projection of each received token, input of SiLU"),
        _rows("expert_up", R, width, B_a, "up projection of each received token"),
        _rows("expert_swiglu", R, width, B_a, "SiLU(gate), the SwiGLU product's first factor"),
        _rows("expert_down_input", R, width, B_a, "SiLU(gate) * up, input of the grouped fc2"),
        _rows("expert_output", R / t_e, h, B_a, "the experts' outputs reduce-scattered over t_e and all-to-all'd back, "
              "kept by the unpermute that weighs them by the router probabilities (their gradient)"),
    ]


def shared_tensors(sw: Switches) -> list[Component]:
    """Shared experts (a SwiGLU of width f_s over t, as a dense MLP), their tensors as the paper counts a dense
    SwiGLU, and the shared gate's sigmoid [T, 1] (Qwen2-MoE)."""
    if not sw.shared:
        return []
    T = local_tokens()
    # column-parallel: the gathered s b / c tokens of width f_s / t; with SP the same as T t tokens of f_s / t
    parts = [_rows(f"shared_{name}", T * t, f_s / t, B_a, doc) for name, doc in (
        ("gate", "shared experts' gate projection"), ("up", "shared experts' up projection"),
        ("swiglu", "shared experts' SiLU(gate)"), ("down_input", "shared experts' SiLU(gate) * up, input of down"))]
    if sw.shared_gate:
        parts.append(_rows("shared_gate_sigmoid", T, 1, B_a, "sigmoid of the shared experts' gate [T, 1]"))
    return parts


def moe_tensors(sw: Switches) -> list[Component]:
    """An MoE layer's MLP block: the norm-2 input and the normed input (the router's and the dispatch's input, the
    shared experts' input), the router, the routed experts, the shared experts."""
    T = local_tokens()
    return [
        _rows("norm2_input", T, h, B_a, "input of the second RMSNorm (residual stream after attention)"),
        _rows("mlp_input", T, h, B_a, "normed input of the router, the token dispatcher and the shared experts"),
        *router_tensors(), *expert_tensors(), *shared_tensors(sw),
    ]


def dispatch_buffers(sw: Switches) -> list[Component]:
    """The working set of one MoE layer's dispatch (none without experts), one layer at a time: the permuted tokens
    [k_e C_f T, h] that the all-to-all sends, what it receives, and that all-gathered over t_e (the combine's
    reduce-scatter and return all-to-all hold the same sizes in reverse)."""
    if not sw.moe:
        return []
    R = expert_rows()
    return [Component("moe_dispatch", B_a * h * (2 * R / t_e + R),
                      "one MoE layer's dispatch in flight: the permuted tokens sent by the all-to-all over e, the "
                      "tokens received, and those all-gathered over t_e, B_a each (Megatron-Core "
                      "MoEAlltoAllTokenDispatcher)")]
