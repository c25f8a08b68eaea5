"""What torchtitan's pipeline parallelism adds to a stage's GPU beyond its in-flight micro batches (pytorch/torchtitan
9dec370 parallelisms/parallelize_llama.py apply_fsdp and pipeline_llama.py; torch.distributed.pipelining stage.py and
FSDP2 _fully_shard, read at torch 2.13; the benchmark ran torch 1963fc8 of 2024-12-23), and the symmetric-memory
workspace of its async tensor parallelism (torch.distributed._symmetric_memory, read at torch 2.13)."""

from __future__ import annotations

import sympy as sp

from ...components.base import Component
from ...config.symbols import B_a, B_g, b, c, h, m, p, s, t, v, vpp


def accumulated_gradients(unsharded: sp.Expr, per_micro: sp.Expr, micro: sp.Expr) -> Component:
    """The stage's unsharded gradients FSDP2 accumulates in fp32 across micro batches under the pipeline schedule:
    PipelineStage.backward_maybe_with_nosync sets set_requires_gradient_sync(False) and set_reshard_after_backward(
    False) on the stage's FSDPModule for every micro batch, so each group's post_backward skips the reduce-scatter and
    FSDPParam.to_accumulated_grad_if_needed upcasts the bf16 unsharded grad to reduce_dtype (fp32), later micro batches
    adding into it (accumulate_unsharded_grad_if_needed), until the step's last backward reduces them. They exist from
    the end of the first backward: with 1F1B and m <= p - r (all of rank r's micro batches in flight before it), one
    micro batch's activations are gone by then, so the peak is max(k A, (k - 1) A + G) = k A + max(G - A, 0); with
    m > p - r (or interleaved, counted as an upper bound) k A + G. `unsharded`: the stage's parameters one TP rank
    holds unsharded; `per_micro`: one micro batch's activations A; `micro`: k, the micro batches in flight."""
    grads = B_g * unsharded
    drained = sp.Piecewise((sp.Piecewise((per_micro, m <= micro), (0, True)), vpp < 2), (0, True))
    return Component(
        "accumulated_gradients",
        sp.Piecewise((sp.Max(grads - drained, 0), p > 1), (0, True)),
        "the stage's unsharded gradients in fp32 (reduce_dtype), accumulated across micro batches while "
        "FSDP2's gradient sync is off under the pipeline schedule (B_g per unsharded parameter, less one "
        "micro batch's activations where all m were in flight before the first backward)",
    )


def boundary() -> sp.Expr:
    """Bytes of one micro batch's tensor at a stage boundary: a block's output [b, s/(c t), h] in bf16, sequence-
    sharded over t (wo and w2 RowwiseParallel(output_layouts=Shard(1)) return the local shard)."""
    return B_a * b * s * h / (c * t)


def stage_buffers(stage: str, micro: sp.Expr) -> Component:
    """The pipeline stage's persistent receive buffers (torch.distributed.pipelining stage.py):
    _setup_forward_recv_info allocates one activation receive buffer per micro batch on every stage but the first,
    _setup_backward_recv_info one gradient receive buffer per micro batch on every stage but the last (each kept
    across steps). The k in-flight activation buffers are the first block's saved inputs (counted in `activations`):
    the other m - k are counted here."""
    first, last = stage in ("first", "only"), stage in ("last", "only")
    count = (0 if first else m - micro) + (0 if last else m)
    return Component(
        "pipeline_buffers",
        sp.Piecewise((count * boundary(), p > 1), (0, True)),
        "the pipeline's per-micro-batch receive buffers (activations on all but the first stage, "
        "gradients on all but the last), each a bf16 [b, s/(c t), h]",
    )


def output_chunks(stage: str) -> Component:
    """Every micro batch's stage output, kept to the step's end: forward_one_chunk appends each output to
    PipelineStage.output_chunks (for the schedule's merge_output_chunks) and only clear_runtime_states, at the next
    step, drops them (torch 2.6.0 pipelining/stage.py), so a stage holds m of them after their backward too: a bf16
    [b, s/(c t), h] on every stage but the last, the bf16 logits [b, s/c, v/t] on the last (its LM head's output;
    the loss upcasts a copy, so no freed_logits there)."""
    last = stage in ("last", "only")
    each = B_a * b * s * v / (t * c) if last else boundary()
    return Component(
        "output_chunks",
        sp.Piecewise((m * each, p > 1), (0, True)),
        "every micro batch's stage output, kept in PipelineStage.output_chunks to the step's end: m bf16 "
        + ("logits [b, s/c, v/t]" if last else "[b, s/(c t), h]"),
    )


def input_gradients(stage: str, micro: sp.Expr) -> Component:
    """Each micro batch's gradient of the stage input, kept to the next step: stage_backward (torch 2.6.0
    pipelining/_backward.py) runs torch.autograd.backward, which accumulates it into the receive buffer's .grad (a
    leaf: _prepare_forward_infra sets requires_grad_(True)); get_bwd_send_ops pops bwd_cache, but .grad stays until
    clear_runtime_states, at the next step, sets it to None. At the peak of a rank with k < m in flight the m - k
    micro batches whose backward came first hold one each, a bf16 [b, s/(c t), h]; none on the first stage (token
    ids) or where all m were in flight (the peak comes before any backward ends). Interleaved (vpp > 1), k is the
    rank's in-flight count in micro batches, as `activations` counts it: an approximation of its stages' own."""
    count = 0 if stage in ("first", "only") else sp.Max(m - micro, 0)
    return Component(
        "input_gradients",
        sp.Piecewise((count * boundary(), p > 1), (0, True)),
        "the stage input's gradient of each micro batch whose backward ended before the peak (max(m - k, 0)), "
        "kept in its receive buffer's .grad to the next step: a bf16 [b, s/(c t), h] each (none on the first stage)",
    )


def step_end(stage: str, freed: sp.Expr, grads: sp.Expr) -> Component:
    """The pipeline step's end, beyond its in-training peak. torchtitan (9dec370 train.py) calls optimizers.zero_grad()
    (grads set to None) before pp_schedule.step, and the last backward's post_backward reduce-scatters the accumulated
    gradients into the sharded `grads` (torch 2.6.0 pipelining/stage.py backward_maybe_with_nosync); then the last
    stage returns _merge_outputs(output_chunks), merge_chunks' torch.cat of its m bf16 logits [b, s/c, v/t]
    (schedules.py, microbatch.py) while the chunks are still held. By then the activations, the accumulated gradients,
    the gathered weights (resharded with them) and the transient tensors, `freed`, are gone: the excess over them."""
    merged = m * B_a * b * s * v / (t * c) if stage in ("last", "only") else 0
    return Component(
        "step_end",
        sp.Piecewise((sp.Max(merged + grads - freed, 0), p > 1), (0, True)),
        "the step's end beyond the peak: the sharded gradients (absent at the peak: zero_grad, then the last "
        "backward's reduce-scatter) and on the last stage the m bf16 logits torch.cat merges (merge_chunks), less "
        "what is freed by then (activations, accumulated gradients, gathered weights, transient tensors)",
    )


def symmetric_workspace() -> Component:
    """Async TP's symmetric-memory workspace, one per TP group, outside PyTorch's caching allocator: torchtitan
    (9dec370 apply_tp) sets inductor's _micro_pipeline_tp and enable_symm_mem_for_group(tp group), and inductor's
    micro_pipeline_tp pass rewrites the blocks' all-gather + matmul and matmul + reduce-scatter into
    fused_all_gather_matmul and fused_matmul_reduce_scatter; these ask get_symm_mem_workspace for the shard's bytes
    ([b, s/(c t), h], _pipelined_multi_all_gather_and_consume) and twice an output chunk's (2 [b, s/(c t), h] in bf16,
    _pipelined_produce_and_all2all), allocated by _SymmetricMemory.empty_strided_p2p and kept, grown to the largest
    request. The gathered inputs, outputs and stacked partials the fused ops allocate in the pool have the shapes
    the synchronous plan's all-gather and matmul outputs have (counted already)."""
    return Component(
        "tp_comm_buffers",
        sp.Piecewise((2 * boundary(), t > 1), (0, True)),
        "async TP's symmetric-memory workspace, 2 bf16 [b, s/(c t), h] (fused_matmul_reduce_scatter's "
        "request), outside PyTorch's pool (torch.distributed._symmetric_memory get_symm_mem_workspace)",
    )
