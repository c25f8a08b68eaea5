"""What Megatron-Core's all-gather token dispatcher (MoEAllGatherTokenDispatcher, Megatron-LM's default
--moe-token-dispatcher-type; megatron-core 0.16.1 transformer/moe/token_dispatcher.py, moe_utils.py permute and
unpermute, tensor_parallel/mappings.py, utils.py GlobalMemoryBuffer) holds in place of the all-to-all one's: every
rank all-gathers the T routed tokens of each of the t_e e ranks of its expert tensor x expert parallel group (tp_ep)
into N = T t_e e rows (in Megatron-Core's persistent global buffer: components.mpu), picks the rows of its E / e local experts from the gathered routing map (R of them, as the
all-to-all's) and reduce-scatters the unpermuted output back to T rows. The router, the experts and the shared experts
are the same as under the all-to-all dispatcher (moe.py)."""

from __future__ import annotations

import sympy as sp

from ..config.symbols import B_a, E, e, h, t_e
from .base import INT64, Component
from .moe_rows import expert_rows, local_tokens


def gathered_tokens() -> sp.Expr:
    """N: the rows one rank's all-gather over its t_e e expert tensor x expert parallel ranks collects, T t_e e."""
    return local_tokens() * t_e * e


def permute_tensors() -> list[Component]:
    """The dispatch's saved tensors for one micro batch: the unfused permute's int64 sorted token indices [R] (kept by
    its index_select; moe_utils.py permute with no probs) and the local probabilities' masked_select, which keeps its
    input, the transposed [E / e, N] probabilities in the router dtype, and its bool mask of the same shape
    (token_dispatcher.py dispatch_postprocess: local_probs.T.contiguous().masked_select(local_map.T.contiguous()))."""
    N = gathered_tokens()
    return [
        Component(
            "permute_indices",
            INT64 * expert_rows(),
            "int64 sorted indices [R] of the tokens routed to this "
            "rank's experts, kept by the permute's index_select (all-gather dispatcher, unfused permute)",
        ),
        Component(
            "local_probs_select",
            (B_a + 1) * N * E / e,
            "the transposed gathered probabilities of the local "
            "experts [E / e, N] (router dtype) and their bool mask, kept by masked_select's backward "
            "(MoEAllGatherTokenDispatcher.dispatch_postprocess)",
        ),
    ]


def dispatch_working_set() -> Component:
    """One MoE layer's combine in flight: the experts' output rows [R, h] and their unpermuted scatter into the N
    gathered positions [N, h] before the reduce-scatter (token_dispatcher.py combine_preprocess, token_combine); the
    backward's gradient of the gathered tokens has the same [N, h]."""
    return Component(
        "moe_dispatch",
        B_a * h * (expert_rows() + gathered_tokens()),
        "one MoE layer's combine in flight: the experts' output rows [R, h] and their unpermute into "
        "the gathered [T t_e e, h] before the reduce-scatter, B_a each (MoEAllGatherTokenDispatcher)",
    )


def routing_state(moe_layers: sp.Expr) -> Component:
    """What each MoE layer's all-gather dispatcher keeps from one forward to its next: the bool local routing map
    [N, E / e] (self.local_map), the local probabilities [R] in the router dtype (self.local_probs) and the int64
    permutation indices [R] (self.reversed_local_input_permutation_mapping)."""
    return Component(
        "moe_routing_state",
        moe_layers * (gathered_tokens() * E / e + (B_a + INT64) * expert_rows()),
        "each MoE layer's all-gather dispatcher keeps its last micro batch's bool local routing map "
        "[T t_e e, E / e], local probabilities [R] and int64 permutation [R] until its next forward",
    )
