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
from ..config.symbols import B_a, C_f, E, d_l, f_s, h, k_e, t
from .base import FP32, INT64, Component
from .moe_allgather import dispatch_working_set, permute_tensors
from .moe_allgather import routing_state as gathered_routing_state
from .moe_experts import expert_tensors
from .moe_flex import deepep_dispatch_buffers, deepep_routing_state, deepep_saved
from .moe_rows import expert_rows, local_tokens, rows, token_width


def router_tensors(sw: Switches = Switches()) -> list[Component]:
    """The router's and the token permutation's saved tensors for T tokens (Megatron-Core TopKRouter, moe_utils.py
    topk_routing_with_score_function and the unfused permute, NVIDIA/Megatron-LM d98e8a6): the fp32 softmax over
    the top-k scores [T, k_e] and the int64 top-k indices [T, k_e]; the fp32 scores over all E [T, E] of the
    load-balancing loss; the int64 argsort of the [E, T] routing map (kept whole: a slice of it indexes the probs)
    and the int64 sorted indices [T k_e]. That argsort is the Megatron-LM of the measured runs (moe_utils.py permute:
    routing_map.reshape(-1).argsort, its [:num_out_tokens] view indexing probs.T; also at 00611e6); megatron-core
    0.16.1's wheel still masked_selects instead (int64 [T k_e] indices, and probs.T with its bool [E, T] mask kept by
    masked_select), which is not what these runs executed. Sigmoid scores (DeepSeek-V3; moe_utils.py topk_routing_with_score_function
    and compute_routing_scores_for_aux_loss) keep the routing's sigmoid [T, E] beside the aux loss's own and the
    top-k normalisation's two fp32 [T, 1] denominators."""
    T = local_tokens()
    sigmoid = (
        [
            rows(
                "router_sigmoid",
                T,
                E,
                FP32,
                "fp32 sigmoid scores over all E experts [T, E] of the routing, kept by "
                "the sigmoid's backward (the aux loss computes its own, router_scores)",
            ),
            rows(
                "router_denominators",
                T,
                2,
                FP32,
                "fp32 [T, 1] sums of the top-k scores and of the aux loss's scores, kept by their divisions",
            ),
        ]
        if sw.sigmoid
        else []
    )
    return (
        sigmoid
        + [
            rows(
                "router_topk_probs",
                T,
                k_e,
                FP32,
                "fp32 softmax of the k_e chosen experts' scores [T, k_e], kept by "
                "the softmax's backward (moe_utils.py topk_routing_with_score_function)",
            ),
            rows(
                "router_topk_indices",
                T,
                k_e,
                INT64,
                "int64 indices of the chosen experts [T, k_e], kept by the topk and the scatter into the routing map",
            ),
            rows(
                "router_scores",
                T,
                E,
                FP32,
                "fp32 softmax scores over all E experts [T, E], kept by the "
                "load-balancing loss's backward (router.py aux loss; MoE runs set --moe-aux-loss-coeff > 0)",
            ),
        ]
        + (
            permute_tensors()
            if sw.dispatcher == "allgather"
            else deepep_saved()
            if sw.dispatcher == "deepep"
            else [
                rows(
                    "permute_indices",
                    T,
                    E + k_e,
                    INT64,
                    "int64 argsort of the [E, T] routing map, kept whole because a "
                    "slice of it indexes the probabilities, and the [T k_e] sorted token indices the unpermute reuses "
                    "(moe_utils.py permute, unfused: moe_permute_fusion off, the default)",
                )
            ]
        )
    )


def shared_tensors(sw: Switches) -> list[Component]:
    """Shared experts (Megatron-Core SharedExpertMLP: a SwiGLU of width f_s on the attention's tensor-parallel
    group, its input the MoE input gathered over t): fc1's output [s b / c, 2 f_s / t] and fc2's input
    [s b / c, f_s / t] (GeLU: fc1's output and fc2's input; squared ReLU: relu's output and fc2's input,
    [s b / c, f_s / t] each), and the shared gate's sigmoid [T, 1] (Qwen2-MoE)."""
    if not sw.shared:
        return []
    gathered = local_tokens() * t  # the s b / c tokens of the column-parallel fc1, f_s split over t
    if sw.mlp == "swiglu":
        parts = [
            rows("shared_fc1_output", gathered, 2 * f_s / t, B_a, "shared experts' gate and up [s b / c, 2 f_s / t]"),
            rows("shared_fc2_input", gathered, f_s / t, B_a, "shared experts' SwiGLU output, fc2's input"),
        ]
    elif sw.mlp == "gelu":  # MLP.forward without bias_activation_fusion (no bias: --disable-bias-linear): F.gelu
        parts = [
            rows(
                "shared_fc1_output",
                gathered,
                f_s / t,
                B_a,
                "shared fc1's output [s b / c, f_s / t], kept by "
                "F.gelu's backward (megatron-core 0.16.1 transformer/mlp.py MLP.forward, unfused)",
            ),
            rows("shared_fc2_input", gathered, f_s / t, B_a, "gelu(shared fc1 output), fc2's input"),
        ]
    else:  # Megatron-Core's MLP with squared_relu, unfused: relu keeps its output
        parts = [
            rows(
                "shared_relu_output",
                gathered,
                f_s / t,
                B_a,
                "relu(shared fc1 output) [s b / c, f_s / t], kept by relu's and the square's backward",
            ),
            rows("shared_fc2_input", gathered, f_s / t, B_a, "shared experts' relu(x)^2, fc2's input"),
        ]
    if sw.shared_gate:
        parts.append(rows("shared_gate_sigmoid", local_tokens(), 1, B_a, "sigmoid of the shared experts' gate [T, 1]"))
    return parts


def moe_tensors(sw: Switches) -> list[Component]:
    """An MoE layer's MLP block: the norm-2 input and the normed input (the router's and the dispatch's input, the
    shared experts' input), the router, the routed experts, the shared experts."""
    T = local_tokens()
    return [
        rows("norm2_input", T, h, B_a, "input of the second RMSNorm (residual stream after attention)"),
        rows("mlp_input", T, h, B_a, "normed input of the router, the token dispatcher and the shared experts"),
        *router_tensors(sw),
        *expert_tensors(sw),
        *shared_tensors(sw),
        *latent_tensors(sw),
    ]


def latent_tensors(sw: Switches) -> list[Component]:
    """A latent MoE's projections (megatron-core 0.16.1 moe_layer.py, TELinear "duplicated"): fc1_latent_proj keeps
    its input, the normed MoE input already kept (mlp_input), and its output [T, d_l] goes to the dispatch, which
    keeps indices; fc2_latent_proj keeps its input, the combined expert output [T, d_l]."""
    if not sw.latent:
        return []
    return [
        rows(
            "latent_fc2_input",
            local_tokens(),
            d_l,
            B_a,
            "the combined routed output [T, d_l], fc2_latent_proj's input, kept for its weight gradient",
        )
    ]


def dispatch_buffers(sw: Switches) -> list[Component]:
    """The working set of one MoE layer's dispatch (none without experts), one layer at a time: the all-to-all's
    buffer of the permuted tokens [C_f k_e T, h], and the received rows gathered over t_e and sorted by local expert
    ([R, h] each: Megatron-Core MoEAlltoAllTokenDispatcher dispatch_postprocess; the combine holds the same sizes in
    reverse)."""
    if not sw.moe:
        return []
    if sw.dispatcher == "allgather":
        return [dispatch_working_set()]  # its gathered tokens: components.mpu.mpu_buffer
    if sw.dispatcher == "deepep":
        return deepep_dispatch_buffers(sw)
    return [
        Component(
            "moe_dispatch",
            B_a * token_width(sw) * (C_f * k_e * local_tokens() + 2 * expert_rows()),
            "one MoE layer's dispatch in flight: the all-to-all's permuted tokens [C_f k_e T, h] and the "
            "received rows all-gathered over t_e and sorted by expert (2 x [R, h]"
            + ("; d_l wide: a latent MoE" if sw.latent else "")
            + "), B_a each (Megatron-Core MoEAlltoAllTokenDispatcher)",
        )
    ]


def routing_state(moe_layers: sp.Expr, sw: Switches) -> list[Component]:
    """What the token dispatcher of every MoE layer holds between its forward and its next one, once per layer (not
    per micro batch): the probabilities [T, E] in the router dtype and the bool routing map [T, E]
    (token_dispatcher.py: self.probs, self.routing_map)."""
    if not sw.moe:
        return []
    if sw.dispatcher == "allgather":
        return [gathered_routing_state(moe_layers)]
    if sw.dispatcher == "deepep":
        return deepep_routing_state(moe_layers)
    return [
        Component(
            "moe_routing_state",
            moe_layers * (B_a + 1) * local_tokens() * E,
            "each MoE layer's dispatcher keeps its last micro batch's probabilities [T, E] (router dtype) "
            "and bool routing map [T, E] until its next forward (Megatron-Core MoEAlltoAllTokenDispatcher)",
        )
    ]


def expert_bias_buffers(moe_layers: sp.Expr, sw: Switches) -> list[Component]:
    """With a score-correction bias (DeepSeek-V3's noaux_tc routing: Megatron-Core --moe-router-enable-expert-bias),
    each MoE layer's router keeps two fp32 [E] buffers, the bias and the tokens per expert it is updated from
    (router.py: expert_bias, local_tokens_per_expert); buffers, not parameters: no gradient, no optimizer state."""
    if not sw.expert_bias:
        return []
    return [
        Component(
            "router_expert_bias",
            moe_layers * 2 * FP32 * E,
            "each MoE layer's fp32 score-correction bias "
            "[E] and its fp32 token counts [E] (Megatron-Core TopKRouter buffers)",
        )
    ]
