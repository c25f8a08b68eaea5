"""Transformer Engine's userbuffers for the tensor-parallel communication overlap (Megatron-LM --tp-comm-overlap):
Megatron-LM initialize.py _initialize_tp_communicators calls transformer-engine 2.9.0 pytorch/module/base.py
initialize_ub(shape=[s b / c, h], tp_size=t, use_fp8=--fp8 given), which registers one communication buffer for each
of the 12 overlapped GEMMs (4 ring-exchange all-gathers: qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad; 2 pipelined
reduce-scatters: proj_fprop, fc2_fprop; 4 bulk: qkv_dgrad, qkv_wgrad, fc1_dgrad, fc1_wgrad; 2 external: proj_wgrad,
fc2_wgrad), each of the whole [s b / c, h] shape (common/comm_gemm_overlap: CommOverlapBase and CommOverlapP2PBase;
a ring-exchange reduce-scatter would hold 2t - 1 chunks, none is one by default), in uint8 under FP8 for the 8 that
all-gather (layers_all_gather_overlap: fp8_buf) and bf16 for the rest; registered by userbuffers outside PyTorch's
caching allocator. initialize_ub also triples TE's cuBLAS workspace (_NUM_MAX_UB_STREAMS = 3)."""

from __future__ import annotations

import sympy as sp

from ..config.dtypes import DTYPES
from ..config.switches import Switches
from ..config.symbols import b, c, h, s, t
from .base import Component
from .overheads import TE_WORKSPACE

GATHERS, SCATTERS = 8, 4  # of the 12 buffers: those in layers_all_gather_overlap (fp8_buf), the reduce-scatters'
UB_STREAMS = 3  # base.py _NUM_MAX_UB_STREAMS: the cuBLAS workspace repeated once per stream
SM90_EXTRA = 1024  # base.py get_cublas_workspace_size_bytes from sm90: 32 MiB + 1 KiB (TE_WORKSPACE leaves it out)


def tp_comm_buffers(sw: Switches) -> list[Component]:
    """The userbuffers and the widened cuBLAS workspace, where t > 1 (none without --tp-comm-overlap)."""
    if not sw.tp_comm_overlap:
        return []
    gathered = sp.Integer(DTYPES["uint8"] if sw.fp8 else DTYPES["bf16"])
    buffers = (GATHERS * gathered + SCATTERS * DTYPES["bf16"]) * s * b / c * h
    held, own = t > 1, TE_WORKSPACE[sw.sm90]  # TE's workspace by the card, as cublas_workspaces counts it
    return [
        Component(
            "tp_comm_buffers",
            sp.Piecewise((buffers, held), (0, True)),
            "Transformer Engine's 12 userbuffers of [s b / c, h] for the TP-comm overlap, "
            f"{'8 in FP8 (uint8) and 4' if sw.fp8 else 'all 12'} in bf16, registered outside PyTorch's pool "
            "(transformer-engine 2.9.0 module/base.py initialize_ub)",
        ),
        Component(
            "tp_comm_workspace",
            sp.Piecewise((UB_STREAMS * (own + SM90_EXTRA * sw.sm90) - own, held), (0, True)),
            "Transformer Engine's cuBLAS workspace repeated for its 3 overlap streams (initialize_ub), beyond "
            "the one cublas_workspaces counts",
        ),
    ]
