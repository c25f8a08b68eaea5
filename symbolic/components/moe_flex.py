"""Megatron-Core's flex token dispatcher with the DeepEP backend (--moe-dispatcher deepep: Megatron-LM's
--moe-token-dispatcher-type flex with --moe-enable-deepep or --moe-flex-dispatcher-backend deepep), per GPU, as
megatron-core 0.16.1 runs it (transformer/moe/token_dispatcher.py MoEFlexTokenDispatcher and _DeepepManager;
fused_a2a.py FusedDispatch, FusedCombine; DeepEP's deep_ep/buffer.py intranode_dispatch): the router's top k_e t_e
per token over the t_e e ranks of the expert tensor x expert parallel group, DeepEP's fused all-to-all, which sends a
token once to each rank that holds any of its experts, then Megatron-Core's permute of the N received tokens into the
R rows of the E / e local experts. N is taken at its bound R (a token's experts on distinct ranks).

DeepEP's own communication buffers (its NVLink buffer by cudaMalloc and CUDA IPC, its RDMA buffer by NVSHMEM,
csrc/deep_ep.cpp Buffer) lie outside PyTorch's caching allocator: not in the allocated figure, and not a term here;
the tensors below are allocated by PyTorch (DeepEP's outputs are torch tensors)."""

from __future__ import annotations

import sympy as sp

from ..config.switches import Switches
from ..config.symbols import B_a, E, e, k_e, t_e
from .base import FP32, INT64, Component
from .moe_rows import expert_rows, local_tokens, token_width

INT32, BOOL = 4, 1


def received_tokens() -> sp.Expr:
    """N: the tokens one GPU receives from DeepEP's dispatch, each once however many of its local experts it chose;
    taken at its bound R (k_e t_e copies of each token spread over distinct ranks)."""
    return expert_rows()


def deepep_saved() -> list[Component]:
    """What one MoE layer keeps for backward per micro batch in DeepEP's place of the all-to-all's permute indices:
    the permute of the N received tokens by their [N, E / e] local routing map (moe_utils.py permute, unfused as the
    all-to-all's is read: the int64 argsort of the map and the [R] sorted indices the unpermute reuses), and the
    dispatch handle FusedDispatch and FusedCombine keep for their backward (deep_ep/buffer.py: the bool
    is_token_in_rank and int32 send_head [T, t_e e], the int32 source index [N] of each received token)."""
    N, T = received_tokens(), local_tokens()
    return [
        Component(
            "deepep_permute_indices",
            INT64 * (N * E / e + expert_rows()),
            "int64 argsort of the received tokens' local routing map [E / e, N] and the [R] sorted indices "
            "(megatron-core 0.16.1 _DeepepManager.get_permuted_hidden_states_by_experts, moe_utils.py permute)",
        ),
        Component(
            "deepep_handle",
            (BOOL + INT32) * T * t_e * e + INT32 * N,
            "DeepEP's dispatch handle kept for the combine and both backwards: bool is_token_in_rank and int32 "
            "send_head [T, t_e e], int32 recv_src_idx [N] (deep_ep/buffer.py intranode_dispatch)",
        ),
    ]


def deepep_dispatch_buffers(sw: Switches) -> list[Component]:
    """One MoE layer's dispatch in flight: DeepEP's received tokens [N, h] beside their permuted rows [R, h] (the
    dispatch's output is dropped once permuted; the combine holds the same sizes in reverse)."""
    return [
        Component(
            "moe_dispatch",
            B_a * token_width(sw) * (received_tokens() + expert_rows()),
            "one MoE layer's dispatch in flight: DeepEP's received tokens [N, h] and their permutation by local "
            "expert [R, h], B_a each (megatron-core 0.16.1 MoEFlexTokenDispatcher, _DeepepManager)",
        )
    ]


def deepep_routing_state(moe_layers: sp.Expr) -> list[Component]:
    """What each MoE layer's _DeepepManager keeps from its last micro batch until its next forward, once per layer:
    the fp32 top-k probabilities and int64 indices [T, k_e t_e] (setup_metadata), the received int64 indices
    [N, k_e t_e], the fp32 multihot probabilities and bool routing map [N, E / e] (get_permuted_hidden_states_by_
    experts) and the permute's int64 [R] mapping for the combine (reversed_mapping_for_combine)."""
    T, N, R = local_tokens(), received_tokens(), expert_rows()
    per_layer = (FP32 + INT64) * T * k_e * t_e + INT64 * N * k_e * t_e + (FP32 + BOOL) * N * E / e + INT64 * R
    return [
        Component(
            "moe_routing_state",
            moe_layers * per_layer,
            "each MoE layer's DeepEP manager keeps its last micro batch's fp32 top-k probabilities and int64 indices "
            "[T, k_e t_e], the received indices [N, k_e t_e], fp32 multihot probabilities and bool map [N, E / e] "
            "and the int64 [R] combine mapping until its next forward (megatron-core 0.16.1 _DeepepManager)",
        )
    ]
