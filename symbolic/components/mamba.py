"""A Mamba-2 layer's mixer (Nemotron-H) as Megatron-Core 0.16.1 trains it (megatron/core/ssm/mamba_mixer.py,
MambaMixer._ssm_training; its spec in models/mamba/mamba_layer_specs.py fuses the layer's norm into in_proj, a
TELayerNormColumnParallelLinear): its parameters on one TP rank and the tensors it keeps for backward per micro batch.
Heads and groups split over t (and, with context parallelism, over c: mamba_context_parallel.py's all-to-all hands
each CP rank whole heads of the whole sequence, the same bytes as s/c of every head; groups replicated over CP ranks
are refused). The scan is mamba-ssm 2.3.2's mamba_split_conv1d_scan_combined (ops/triton/ssd_combined.py,
MambaSplitConv1dScanCombinedFn): it keeps its input zxbcdt and the scan's output out_x and recomputes the
convolution, the chunk states and the gate in backward; Megatron-Core then applies the grouped RMSNorm
(mamba-ssm's RMSNormGated, keeping its input and fp32 1/rms per group)."""

from __future__ import annotations

import sympy as sp

from ..config.switches import Switches
from ..config.symbols import B_a, K_c, b, c, d_m, d_s, g_m, h, n_m, s, t
from .base import FP32, Component, fused_norm_tensors


def mamba_params(sw: Switches = Switches()) -> sp.Expr:
    """One Mamba-2 mixer on one TP rank, everything split over t: in_proj [h, 2 n_m d_m + 2 g_m d_s + n_m]
    column-parallel (z, x, B, C, dt), the depthwise conv1d [(n_m d_m + 2 g_m d_s) / t, 1, K_c] with its bias
    (use_conv_bias), dt_bias, A_log and D [n_m / t], the grouped RMSNorm's weight [n_m d_m / t], out_proj
    [n_m d_m, h] row-parallel; its input norm is the layer's norm (norm_params)."""
    inner, conv = n_m * d_m, n_m * d_m + 2 * g_m * d_s
    return (h * (inner + conv + n_m) + conv * (K_c + (1 if sw.ssm_conv_bias else 0)) + 3 * n_m + inner + inner * h) / t


def _heads(name: str, width: sp.Expr, nbytes: sp.Expr, doc: str) -> Component:
    """A [b, s, width] tensor of the mixer's heads: width split over t, its tokens over c."""
    return Component(name, nbytes * s * b * width / (t * c), doc)


def mamba_tensors(sw: Switches) -> list[Component]:
    """What one Mamba-2 mixer keeps for one micro batch, in place of softmax attention's tensors."""
    inner = n_m * d_m
    return [
        *fused_norm_tensors(sw, "norm"),
        _heads(
            "ssm_zxbcdt",
            2 * inner + 2 * g_m * d_s + n_m,
            B_a,
            "in_proj's output z, x, B, C, dt [b, s, 2 n_m d_m "
            "+ 2 g_m d_s + n_m] made contiguous, kept by the combined conv and scan",
        ),
        _heads(
            "ssm_out_x",
            inner,
            B_a,
            "the scan's output before the gate [b, s, n_m, d_m], kept by the combined conv and scan",
        ),
        _heads(
            "ssm_norm_input", inner, B_a, "the gated output y silu(z) [s, b, n_m d_m], input of the grouped RMSNorm"
        ),
        _heads("ssm_norm_rstd", g_m, FP32, "the grouped RMSNorm's fp32 1/rms per token and group"),
        _heads("out_proj_input", inner, B_a, "the normed output [s, b, n_m d_m], input of the row-parallel out_proj"),
    ]
