"""time/quant.py: the bytes a GEMM operand's cast moves, pass by pass (Transformer Engine v2.18 quantizer.cpp)."""

import pytest

from symbolic.time.quant import block_cast, cast_bytes


def test_nvfp4_cast_reads_the_operand_twice():
    """NVFP4 with RHT: the amax pass and the fused row-wise + RHT column-wise cast read 2 bytes each; both usages write E2M1 (0.5)
    and an E4M3 scale per 16 (1/16): 4 + 1.125 (exact arithmetic, 1e-12)."""
    assert cast_bytes("fp4") == pytest.approx(4 + 2 * (0.5 + 1 / 16), rel=1e-12)


def test_fp8_cast_is_one_pass_and_bf16_has_none():
    """FP8: one pass reading BF16 (2) writing one byte per usage (2): 4, as before the split; BF16: no cast."""
    assert cast_bytes("fp8") == 4.0
    assert cast_bytes("bf16") == 0.0
    assert block_cast(1.0, 1) == cast_bytes("fp8")
