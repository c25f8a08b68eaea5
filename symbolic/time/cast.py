"""Bytes a quantization of one GEMM operand moves per element, kernel by kernel (Transformer Engine v2.18 and
2.20.0.dev0 pytorch/csrc/quantizer.cpp, the quantizers' quantize; 2.20.2's csrc ships only in its sdist): each pass
reads the BF16 operand, the cast writes the row-wise usage (fprop / dgrad) and the column-wise usage (wgrad), each
its data and its share of the block scales. Numbers only, no sympy: a warm plan imports it."""

from __future__ import annotations

from ..config.precision import NVFP4

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
