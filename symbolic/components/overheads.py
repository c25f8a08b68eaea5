"""Buffers the paper calls often neglected, each a named component with its assumption in one line; the constants are
assumptions, not measurements (`--overhead NAME=SIZE` replaces one, `--no-overheads` drops them all)."""

from __future__ import annotations

import functools

import sympy as sp

from ..config.switches import Switches
from ..config.symbols import B_w, c, d, e, p, t
from .base import GROUPS, Component
from .experts import expert_data_parallel

BUCKET = sp.Integer(40_000_000)  # Megatron-LM DDP default bucket size, in parameters
COMMUNICATOR = sp.Integer(2**29)  # ~0.5 GB of NCCL buffers per process group (the authors' web estimator)
CUDA_CONTEXT = sp.Integer(400 * 2**20)  # CUDA context + kernels, ~0.3-0.5 GB per process
FRAGMENTATION = sp.Rational(5, 100)  # caching-allocator fragmentation, assumed 5 % of tensor bytes
CUBLAS_WORKSPACE = sp.Integer(32 * 2**20)  # one cuBLAS workspace on an H100: CUBLAS_WORKSPACE_CONFIG :4096:8 (sm90)
# PyTorch's own default where CUBLAS_WORKSPACE_CONFIG is unset (Megatron-LM's tests set :4096:8, the 32 MiB above, on
# every card): 32 MiB on compute capability 9.x, 10.x and 12.x, ":4096:2:16:8" before (aten/src/ATen/cuda/
# CublasHandlePool.cpp parseChosenWorkspaceSize); keyed by Switches.sm90 (no card of time.cards is 11.x or 13.x)
TORCH_WORKSPACE = {True: CUBLAS_WORKSPACE, False: sp.Integer(4096 * 1024 * 2 + 16 * 1024 * 8)}
# one Transformer Engine workspace, keyed by Switches.sm90: 32 MiB from compute capability 9.0, 4 MiB before
# (transformer-engine 2.9.0 pytorch/module/base.py:77-82 get_cublas_workspace_size_bytes; 2.9.0 adds 1 KiB from sm90,
# counted by userbuffers.py alone)
TE_WORKSPACE = {True: CUBLAS_WORKSPACE, False: sp.Integer(4 * 2**20)}
TE_COMPUTE_STREAMS = (
    4  # transformer-engine common/util/multi_stream.cpp get_num_compute_streams (tex's num_cublas_streams)
)


@functools.lru_cache(maxsize=None)
def _wider_than_one(x: sp.Expr) -> sp.Expr:
    """1 when a parallel size exceeds one, else 0 (a process group exists only then). Remembered: sympy decides
    `x > 1` of a product of positive symbols through its assumptions, 3 ms a call, a tenth of a derivation."""
    return sp.Piecewise((1, x > 1), (0, True))


def overheads(
    params: sp.Expr, tensors: sp.Expr, sw: Switches, workspaces: int = 3, megatron: bool = True
) -> list[Component]:
    """The overhead components of one GPU holding `params` parameters and `tensors` bytes of model state + activations;
    `workspaces`: the cuBLAS workspaces the trainer's GEMMs keep (3 with Transformer Engine, 2 with PyTorch's alone);
    `megatron`: with Megatron-LM FSDP's all-gather bucket at ZeRO-2."""
    data_parallel = _wider_than_one(GROUPS.zero_group)
    parts = []
    # Megatron-Core DDP (ZeRO 0 and 1) allocates no bucket of its own: each bucket's grad_data and param_data are
    # views into the contiguous grad and param buffers (the gradients and weights counted already), reduce-scattered
    # (or all-reduced) and all-gathered in place (megatron-core 0.16.1 distributed/param_and_grad_buffer.py:
    # _ParamAndGradBuffer._get, start_grad_sync's reduce_scatter_tensor(local_data_view, bucket.grad_data),
    # start_param_sync's all_gather_into_tensor(bucket.param_data, local_data_view)). Megatron-LM FSDP at ZeRO-2 keeps
    # the all-gather bucket assumed here (its buffers are not read yet).
    if megatron and sw.dist_opt and sw.sharded_grads and not sw.sharded_weights:
        parts.append(
            Component(
                "dist_opt_allgather",
                data_parallel * B_w * sp.Min(params, BUCKET, evaluate=False),
                "one bf16 parameter all-gather bucket (40M params, B_w bytes each) of Megatron-LM FSDP "
                "optim_grads (ZeRO-2; assumed)",
            )
        )
    sizes = (d, t, p, c) + ((e, expert_data_parallel()) if sw.moe else ())
    groups = sum((_wider_than_one(x) for x in sizes), sp.Integer(0))
    parts += [
        Component(
            "communicators",
            COMMUNICATOR * groups,
            "NCCL buffers, ~0.5 GiB per process group of size > 1 among DP, TP, PP, CP"
            + (", EP and the expert data-parallel group" if sw.moe else "")
            + " (authors' web estimator)",
        ),
        Component(
            "cuda_context", CUDA_CONTEXT, "CUDA context and loaded kernels, ~0.3-0.5 GB per process (assumed 400 MiB)"
        ),
        _cublas_workspaces(sw, workspaces == 3, megatron),
        *_grouped_workspaces(sw, megatron),
        Component(
            "fragmentation",
            FRAGMENTATION * tensors,
            "caching-allocator fragmentation, assumed 5 % of weights, gradients, optimizer states and activations",
        ),
    ]
    return parts


def _grouped_workspaces(sw: Switches, megatron: bool) -> list[Component]:
    """Transformer Engine's multi-stream cuBLAS workspaces, kept by the experts' GroupedLinear GEMMs (none without
    --moe-grouped-gemm, without experts, or with the local implementation)."""
    if not (megatron and sw.moe and sw.grouped_gemm and not sw.local):
        return []
    return [
        Component(
            "grouped_gemm_workspaces",
            TE_COMPUTE_STREAMS * TE_WORKSPACE[sw.sm90],
            f"{TE_COMPUTE_STREAMS} cuBLAS workspaces of "
            + ("32 MiB (+1 KiB; 4 MiB below sm90)" if sw.sm90 else "4 MiB (below sm90)")
            + " in PyTorch's pool, one per "
            "compute stream, for the experts' grouped GEMMs (transformer-engine 2.9.0 pytorch/module/grouped_linear.py"
            ":176 get_multi_stream_cublas_workspace, module/base.py:95-103; common/util/multi_stream.cpp)",
        )
    ]


def _cublas_workspaces(sw: Switches, te: bool, megatron: bool) -> Component:
    """PyTorch's two cuBLAS workspaces (one per handle and stream, on the forward and the autograd thread; Megatron-LM's
    under :4096:8) and, with Transformer Engine (`te`), its own, each sized by the card (Switches.sm90)."""
    torch = CUBLAS_WORKSPACE if megatron else TORCH_WORKSPACE[sw.sm90]
    mine = [TE_WORKSPACE[sw.sm90]] if te else []
    where = "PyTorch's one per (handle, stream), on the forward and the autograd thread (CublasHandlePool.cpp; "
    if sw.sm90:  # compute capability 9.0 or later: every workspace 32 MiB
        doc = f"{2 + te} cuBLAS workspaces of 32 MiB in PyTorch's pool: {where}:4096:8 on an H100)"
        doc += ", and Transformer Engine's (cpp_extensions/gemm.py)" if te else ""
    else:
        setting = ":4096:8, Megatron-LM's tests" if megatron else "its default below sm90"
        doc = f"2 cuBLAS workspaces of {_mib(torch)} in PyTorch's pool: {where}{setting})"
        doc += f", and Transformer Engine's of {_mib(mine[0])} below sm90 (cpp_extensions/gemm.py)" if te else ""
    return Component("cublas_workspaces", sp.Add(torch, torch, *mine), doc)


def _mib(size: sp.Integer) -> str:
    """A workspace's size as a doc says it: 32 MiB, 4 MiB, 8.125 MiB."""
    return f"{float(size) / 2**20:g} MiB"
