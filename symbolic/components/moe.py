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
from ..config.symbols import B_a, C_f, E, d_l, f_e, f_s, h, k_e, t, t_e
from .base import FP32, INT64, Component
from .moe_allgather import dispatch_working_set, permute_tensors
from .moe_allgather import routing_state as gathered_routing_state
from .moe_rows import expert_rows, local_tokens


def _rows(name: str, rows: sp.Expr, width: sp.Expr, nbytes: sp.Expr, doc: str) -> Component:
    return Component(name, nbytes * rows * width, doc)


def token_width(sw: Switches) -> sp.Expr:
    """The width of the tokens the dispatcher moves and the experts read and write: h, or a latent MoE's d_l
    (megatron-core 0.16.1 moe_layer.py: fc1_latent_proj before the dispatch, fc2_latent_proj after the combine)."""
    return d_l if sw.latent else h


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
    sigmoid = [
        _rows("router_sigmoid", T, E, FP32, "fp32 sigmoid scores over all E experts [T, E] of the routing, kept by "
              "the sigmoid's backward (the aux loss computes its own, router_scores)"),
        _rows("router_denominators", T, 2, FP32, "fp32 [T, 1] sums of the top-k scores and of the aux loss's "
              "scores, kept by their divisions"),
    ] if sw.sigmoid else []
    return sigmoid + [
        _rows("router_topk_probs", T, k_e, FP32, "fp32 softmax of the k_e chosen experts' scores [T, k_e], kept by "
              "the softmax's backward (moe_utils.py topk_routing_with_score_function)"),
        _rows("router_topk_indices", T, k_e, INT64, "int64 indices of the chosen experts [T, k_e], kept by the topk "
              "and the scatter into the routing map"),
        _rows("router_scores", T, E, FP32, "fp32 softmax scores over all E experts [T, E], kept by the "
              "load-balancing loss's backward (router.py aux loss; MoE runs set --moe-aux-loss-coeff > 0)"),
    ] + (permute_tensors() if sw.dispatcher == "allgather" else [
        _rows("permute_indices", T, E + k_e, INT64, "int64 argsort of the [E, T] routing map, kept whole because a "
              "slice of it indexes the probabilities, and the [T k_e] sorted token indices the unpermute reuses "
              "(moe_utils.py permute, unfused: moe_permute_fusion off, the default)"),
    ])


def expert_tensors(sw: Switches) -> list[Component]:
    """Routed experts, per GPU (TEGroupedMLP with the fused weighted SwiGLU, experts.py, fused_bias_swiglu.py): the
    R token rows they receive, fc1's output [R, 2 f_e / t_e] (gate and up), the router probability of each row, and
    the SwiGLU output [R, f_e / t_e] (fc2's input); the unpermute keeps only indices (the probabilities are applied
    in the activation). GeLU or squared-ReLU experts (no --swiglu) in their place: unary_expert_tensors."""
    if sw.mlp != "swiglu":
        return unary_expert_tensors(sw)
    R = expert_rows()
    return [
        _rows("expert_input", R, token_width(sw), B_a, "tokens the experts receive, permuted by expert, all-to-all'd over e and "
              "all-gathered over t_e: the grouped fc1's input, kept for its weight gradient"),
        _rows("expert_fc1_output", R, 2 * f_e / t_e, B_a, "fc1's output, gate and up of each received token [R, 2 "
              "f_e / t_e], kept by the weighted SwiGLU's backward"),
        _rows("expert_probs", R, 1, B_a, "the router probability of each received row [R, 1] in the router dtype "
              "(bf16 unless --moe-router-dtype fp32), kept by the weighted SwiGLU"),
        _rows("expert_fc2_input", R, f_e / t_e, B_a, "the weighted SwiGLU output [R, f_e / t_e], the grouped fc2's "
              "input, kept for its weight gradient"),
    ] + clamped_glu_tensors(sw)


def clamped_glu_tensors(sw: Switches) -> list[Component]:
    """gpt-oss's clamped GLU (its swiglu_limit; moe_bias marks the family): Megatron-Bridge 0.3.1's GPT-OSS provider
    sets activation_func_clamp_value 7.0 with quick_gelu, and megatron-core 0.16.1 fusions/fused_bias_geglu.py
    weighted_bias_quick_geglu_impl clamps gate and up in plain PyTorch (clamp keeps its input: fc1's output,
    expert_fc1_output) and torch.cat's the two for WeightedBiasQuickGeGLUFunction, which keeps that copy
    (records/expert-saved-gptoss-cpu.jsonl: two [R, 2 f_e] bf16 storages clamped, one without)."""
    if not sw.moe_bias:
        return []
    return [_rows("expert_fc1_clamped", expert_rows(), 2 * f_e / t_e, B_a, "the clamped gate and up concatenated [R, "
                  "2 f_e / t_e], kept by the fused weighted quick-GeGLU (fc1's output stays with the clamps)")]


def unary_expert_tensors(sw: Switches) -> list[Component]:
    """GeLU or squared-ReLU routed experts (TEGroupedMLP bias_act_func without --swiglu, megatron-core 0.16.1
    transformer/moe/experts.py: activation_func(fc1_output) * permuted_probs, unfused): the R received rows, the
    tensor the activation keeps (F.gelu its input, fc1's output; squared_relu = pow(relu(x), 2) relu's output, which
    the pow reads too), the activation's output kept by the multiplication by the probabilities (for their
    gradient), the probabilities [R, 1], and the product, fc2's input. The fused weighted squared ReLU in their
    place: fused_srelu_expert_tensors."""
    if sw.srelu_fusion and sw.mlp == "relu2":
        return fused_srelu_expert_tensors(sw)
    R = expert_rows()
    kept = ("expert_fc1_output", "fc1's output [R, f_e / t_e], kept by F.gelu's backward") if sw.mlp == "gelu" else \
        ("expert_relu_output", "relu(fc1 output) [R, f_e / t_e], kept by relu's and the square's backward")
    return [
        _rows("expert_input", R, token_width(sw), B_a, "tokens the experts receive, permuted by expert: the grouped "
              "fc1's input, kept for its weight gradient"),
        _rows(kept[0], R, f_e / t_e, B_a, kept[1]),
        _rows("expert_act_output", R, f_e / t_e, B_a, f"the {sw.mlp}'s output [R, f_e / t_e], kept by its product with "
              "the probabilities for their gradient"),
        _rows("expert_probs", R, 1, B_a, "the router probability of each received row [R, 1], kept by the product"),
        _rows("expert_fc2_input", R, f_e / t_e, B_a, f"{sw.mlp}(fc1) x probs [R, f_e / t_e], the grouped fc2's input, "
              "kept for its weight gradient"),
    ]


def fused_srelu_expert_tensors(sw: Switches) -> list[Component]:
    """Squared-ReLU routed experts with --use-fused-weighted-squared-relu (megatron-core 0.16.1 and Megatron-LM
    d98e8a64 fusions/fused_weighted_squared_relu.py WeightedSquaredReLUFunction: save_for_backward(input, weights),
    relu(x)^2 x probs recomputed in its backward; experts.py bias_act_func): the R received rows, fc1's output and
    the probabilities the fused function keeps, and its output, fc2's input; no relu output or square of their own."""
    R = expert_rows()
    return [
        _rows("expert_input", R, token_width(sw), B_a, "tokens the experts receive, permuted by expert: the grouped "
              "fc1's input, kept for its weight gradient"),
        _rows("expert_fc1_output", R, f_e / t_e, B_a, "fc1's output [R, f_e / t_e], kept by the fused weighted "
              "squared ReLU (WeightedSquaredReLUFunction.save_for_backward)"),
        _rows("expert_probs", R, 1, B_a, "the router probability of each received row [R, 1], kept by the fused "
              "weighted squared ReLU for the probabilities' gradient"),
        _rows("expert_fc2_input", R, f_e / t_e, B_a, "relu(fc1)^2 x probs [R, f_e / t_e], the fused function's "
              "output and the grouped fc2's input, kept for its weight gradient"),
    ]


def shared_tensors(sw: Switches) -> list[Component]:
    """Shared experts (Megatron-Core SharedExpertMLP: a SwiGLU of width f_s on the attention's tensor-parallel
    group, its input the MoE input gathered over t): fc1's output [s b / c, 2 f_s / t] and fc2's input
    [s b / c, f_s / t] (GeLU: fc1's output and fc2's input; squared ReLU: relu's output and fc2's input,
    [s b / c, f_s / t] each), and the shared gate's sigmoid [T, 1] (Qwen2-MoE)."""
    if not sw.shared:
        return []
    gathered = local_tokens() * t  # the s b / c tokens of the column-parallel fc1, f_s split over t
    if sw.mlp == "swiglu":
        parts = [_rows("shared_fc1_output", gathered, 2 * f_s / t, B_a, "shared experts' gate and up [s b / c, 2 f_s / "
                       "t]"),
                 _rows("shared_fc2_input", gathered, f_s / t, B_a, "shared experts' SwiGLU output, fc2's input")]
    elif sw.mlp == "gelu":  # MLP.forward without bias_activation_fusion (no bias: --disable-bias-linear): F.gelu
        parts = [_rows("shared_fc1_output", gathered, f_s / t, B_a, "shared fc1's output [s b / c, f_s / t], kept by "
                       "F.gelu's backward (megatron-core 0.16.1 transformer/mlp.py MLP.forward, unfused)"),
                 _rows("shared_fc2_input", gathered, f_s / t, B_a, "gelu(shared fc1 output), fc2's input")]
    else:  # Megatron-Core's MLP with squared_relu, unfused: relu keeps its output
        parts = [_rows("shared_relu_output", gathered, f_s / t, B_a, "relu(shared fc1 output) [s b / c, f_s / t], "
                       "kept by relu's and the square's backward"),
                 _rows("shared_fc2_input", gathered, f_s / t, B_a, "shared experts' relu(x)^2, fc2's input")]
    if sw.shared_gate:
        parts.append(_rows("shared_gate_sigmoid", local_tokens(), 1, B_a, "sigmoid of the shared experts' gate [T, 1]"))
    return parts


def moe_tensors(sw: Switches) -> list[Component]:
    """An MoE layer's MLP block: the norm-2 input and the normed input (the router's and the dispatch's input, the
    shared experts' input), the router, the routed experts, the shared experts."""
    T = local_tokens()
    return [
        _rows("norm2_input", T, h, B_a, "input of the second RMSNorm (residual stream after attention)"),
        _rows("mlp_input", T, h, B_a, "normed input of the router, the token dispatcher and the shared experts"),
        *router_tensors(sw), *expert_tensors(sw), *shared_tensors(sw), *latent_tensors(sw),
    ]


def latent_tensors(sw: Switches) -> list[Component]:
    """A latent MoE's projections (megatron-core 0.16.1 moe_layer.py, TELinear "duplicated"): fc1_latent_proj keeps
    its input, the normed MoE input already kept (mlp_input), and its output [T, d_l] goes to the dispatch, which
    keeps indices; fc2_latent_proj keeps its input, the combined expert output [T, d_l]."""
    if not sw.latent:
        return []
    return [_rows("latent_fc2_input", local_tokens(), d_l, B_a, "the combined routed output [T, d_l], fc2_latent_proj's "
                  "input, kept for its weight gradient")]


def dispatch_buffers(sw: Switches) -> list[Component]:
    """The working set of one MoE layer's dispatch (none without experts), one layer at a time: the all-to-all's
    buffer of the permuted tokens [C_f k_e T, h], and the received rows gathered over t_e and sorted by local expert
    ([R, h] each: Megatron-Core MoEAlltoAllTokenDispatcher dispatch_postprocess; the combine holds the same sizes in
    reverse)."""
    if not sw.moe:
        return []
    if sw.dispatcher == "allgather":
        return [dispatch_working_set()]  # its gathered tokens: components.mpu.mpu_buffer
    return [Component("moe_dispatch", B_a * token_width(sw) * (C_f * k_e * local_tokens() + 2 * expert_rows()),
                      "one MoE layer's dispatch in flight: the all-to-all's permuted tokens [C_f k_e T, h] and the "
                      "received rows all-gathered over t_e and sorted by expert (2 x [R, h]"
                      + ("; d_l wide: a latent MoE" if sw.latent else "")
                      + "), B_a each (Megatron-Core MoEAlltoAllTokenDispatcher)")]


def routing_state(moe_layers: sp.Expr, sw: Switches) -> list[Component]:
    """What the token dispatcher of every MoE layer holds between its forward and its next one, once per layer (not
    per micro batch): the probabilities [T, E] in the router dtype and the bool routing map [T, E]
    (token_dispatcher.py: self.probs, self.routing_map)."""
    if not sw.moe:
        return []
    if sw.dispatcher == "allgather":
        return [gathered_routing_state(moe_layers)]
    return [Component("moe_routing_state", moe_layers * (B_a + 1) * local_tokens() * E,
                      "each MoE layer's dispatcher keeps its last micro batch's probabilities [T, E] (router dtype) "
                      "and bool routing map [T, E] until its next forward (Megatron-Core MoEAlltoAllTokenDispatcher)")]


def expert_bias_buffers(moe_layers: sp.Expr, sw: Switches) -> list[Component]:
    """With a score-correction bias (DeepSeek-V3's noaux_tc routing: Megatron-Core --moe-router-enable-expert-bias),
    each MoE layer's router keeps two fp32 [E] buffers, the bias and the tokens per expert it is updated from
    (router.py: expert_bias, local_tokens_per_expert); buffers, not parameters: no gradient, no optimizer state."""
    if not sw.expert_bias:
        return []
    return [Component("router_expert_bias", moe_layers * 2 * FP32 * E, "each MoE layer's fp32 score-correction bias "
                      "[E] and its fp32 token counts [E] (Megatron-Core TopKRouter buffers)")]
