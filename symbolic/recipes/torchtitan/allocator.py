"""What torchtitan's reserved peak holds beyond its live tensors, read from the code that allocates (torch 2.6.0, the
release after the benchmark's torch 1963fc8 of 2024-12-23: FSDP2 fsdp/_fully_shard/_fsdp_collectives.py and
_fsdp_param_group.py, distributed/tensor/parallel/loss.py; c10/cuda/CUDACachingAllocator.cpp): memory the caching
allocator keeps reserved but cannot hand to the tensors live at the peak. Both count toward `reserved`, not
`allocated` (estimator POOL_SLACK)."""

from __future__ import annotations

import sympy as sp

from ...components.base import GROUPS, Component
from ...components.weights import mixer_params, mlp_params
from ...config.switches import Switches
from ...config.symbols import B_a, b, c, p, s, t, v
from .fsdp2 import block_backward, block_params, loss_backward


def freed_logits(sw: Switches, moe_layers: sp.Expr = 0) -> Component:
    """The bf16 logits' block, freed before the loss's backward and too small for what that backward allocates next.
    torchtitan's loss (9dec370 train.py loss_fn, `del pred` before backward) allocates the bf16 logits P, their fp32
    copy F and log_softmax's output (with loss_parallel at t > 1 also `shifted`) one after another, then frees all
    but the saved output: one free range of P + F (+ shifted). The backward's fp32 tensors (nll_loss_backward's
    grad_input, then log_softmax_backward's result; at t > 1 zeros_like, exp(x), their sum) are placed best-fit
    (get_free_block: the smallest cached block of the stream that fits, split) into that range until a remainder of
    P's bytes is left, and the last one is mapped anew: the pool's high-water exceeds the backward's live tensors by
    P where the loss is the stage's largest moment (less where a block's backward comes within P of it). Under the
    pipeline the stage keeps its logits (pipeline.output_chunks) and only F is freed: none."""
    logits = B_a * s * b * v / (t * c)
    loss, block = loss_backward(), block_backward(sw, True, moe_layers)
    return Component(
        "freed_logits",
        sp.Piecewise((sp.Max(0, sp.Min(logits, loss + logits - block)), p < 2), (0, True)),
        "the bf16 logits' freed block, which the loss's fp32 backward tensors cannot use (B_a*s*b*v/(t c), "
        "the caching allocator's best fit; reserved, not allocated; none under the pipeline)",
    )


def allgather_cache(sw: Switches, moe_layers: sp.Expr = 0) -> Component:
    """FSDP2's all-gather buffers, cached in the all-gather copy-in stream's own pool. foreach_all_gather allocates
    each group's flat all_gather_output (one block's unsharded weights, in the all-gather dtype: uint8 bytes under
    Float8 all-gather) under all_gather_copy_in_stream, and the caching allocator hands a freed block only to the
    stream that allocated it (blocks are keyed by stream; expandable segments are one per stream). In forward
    wait_for_unshard keeps the previous group's result (AllGatherState) until the next copy-out, so the stream holds
    two at once; the default stream's copy-out (all_gather_outputs) is counted in params_gathered, whose prefetched
    block is one of these two (p = 1, resharding after forward): one more here, two where the stage stays gathered."""
    per_block = B_a * block_params(sw, moe_layers) - (
        (B_a - 1) * (mixer_params(sw) + mlp_params(sw)) if sw.fp8_gather else 0
    )
    count = sp.Piecewise((2, p > 1), (1, True)) if sw.sharded_weights else 2
    sharded = sp.Piecewise((1, GROUPS.zero_group > 1), (0, True))
    return Component(
        "allgather_cache",
        sharded * count * per_block,
        "FSDP2's flat all-gather outputs cached in the copy-in stream's pool (two blocks' worth, one of them "
        "counted in params_gathered at p = 1); reserved, not allocated",
    )
