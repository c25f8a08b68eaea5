"""Bytes a quantization of one GEMM operand moves per element, kernel by kernel (Transformer Engine v2.18 and
2.20.0.dev0 pytorch/csrc/quantizer.cpp, the quantizers' quantize; 2.20.2's csrc ships only in its sdist): each pass
reads the BF16 operand, the cast writes the row-wise usage (fprop / dgrad) and the column-wise usage (wgrad), each
its data and its share of the block scales."""

from __future__ import annotations

import sympy as sp

from ..components.base import Component
from ..config.precision import NVFP4
from ..config.symbols import L, h, p
from .choices import Choices
from .symbols import B_x, N_n, W_hbm

BF16 = 2  # bytes of the BF16 operand each pass reads


def block_cast(element: float, passes: int) -> float:
    """A block-scaled cast's bytes an element: `passes` reads of the BF16 operand, both usages written at `element`
    bytes (data and scale share) each; the one shared formula for the FP8 and the NVFP4 casts."""
    return BF16 * passes + 2 * element


# FP8 (TE v2.18 and 2.20.0.dev0 @d0067d0 pytorch/csrc/quantizer.cpp MXFP8Quantizer::quantize: one nvte_quantize_v2
# writes both usages, the block scales computed in the kernel): one pass, one byte an element (scales not counted)
FP8_PASSES = 1
# NVFP4 with the random Hadamard transform (TE 2.20.2 common/recipe NVFP4BlockScaling: RHT on inputs and gradients,
# the operands T_cast and T_mexp cast; TE v2.18 / 2.20.0.dev0 quantizer.cpp NVFP4Quantizer::quantize_impl with_rht):
# nvte_hadamard_transform_amax reads it for the two-level scaling's per-tensor amaxes (row-wise and post-RHT
# column-wise), then on Blackwell nvte_quantize_with_hadamard_transform writes the row-wise usage and the RHT'd,
# transposed, stochastically rounded column-wise usage in one read (is_eligible_for_rht_cast_fusion): two passes
NVFP4_RHT_PASSES = 2


def cast_bytes(precision: str) -> float:
    """B_x: bytes an element of an activation or gradient operand's cast moves: FP8 4, NVFP4 5.125 (two passes and
    E2M1 data with its E4M3 scale per 16, config.precision.NVFP4, in both usages); 0 in BF16."""
    if precision == "bf16":
        return 0.0
    return block_cast(NVFP4, NVFP4_RHT_PASSES) if precision == "fp4" else block_cast(1.0, FP8_PASSES)


def norm_casts(ch: Choices, tok: sp.Expr, full: sp.Expr, dense: sp.Expr) -> Component:
    """T_ncast: under NVFP4 the input and pre-MLP norms' outputs cast by a kernel of their own (TE v2.18 csrc/
    extensions/normalization.cpp rmsnorm_fwd: Impl::UNFUSED for an NVFP4 quantizer with RHT and post-RHT amax)."""
    layers = 0 if ch.mla else L / p  # the QKV projection's input; MLA's down projections are T_cast's already
    return Component(
        "T_ncast",
        N_n * tok * B_x / W_hbm * h * (layers + dense) * (1 + full),
        "under NVFP4, the norm writes its BF16 output and NVFP4Quantizer::quantize casts it (TE v2.18 and "
        "2.20.0.dev0 pytorch/csrc/extensions/normalization.cpp: only FP8 delayed scaling, cuDNN's MXFP8 and FP8 "
        "current scaling fuse the cast into the norm, NVFP4 with RHT takes Impl::UNFUSED): the QKV projection's "
        "[h] input every layer and fc1's [h] input in dense layers (the MoE layers' go to T_mexp), B_x bytes an "
        "element, rerun by full recompute",
    )
