"""time/cast.py: the bytes a GEMM operand's cast moves, pass by pass (Transformer Engine v2.18 quantizer.cpp), and NVFP4's step."""

import pytest

from symbolic.config.errors import ConfigError
from symbolic.config.shapes import PRESETS as MODELS
from symbolic.config.training import Training
from symbolic.time.cast import block_cast, cast_bytes
from symbolic.time.evaluate import step_time
from symbolic.time.systems import SYSTEMS


def test_nvfp4_cast_reads_the_operand_twice():
    """NVFP4 with RHT: the amax pass and the fused row-wise + RHT column-wise cast read 2 bytes each; both usages write E2M1 (0.5)
    and an E4M3 scale per 16 (1/16): 4 + 1.125 (exact arithmetic, 1e-12)."""
    assert cast_bytes("fp4") == pytest.approx(4 + 2 * (0.5 + 1 / 16), rel=1e-12)


def test_fp8_cast_is_one_pass_and_bf16_has_none():
    """FP8: one pass reading BF16 (2) writing one byte per usage (2): 4, as before the split; BF16: no cast."""
    assert cast_bytes("fp8") == 4.0
    assert cast_bytes("bf16") == 0.0
    assert block_cast(1.0, 1) == cast_bytes("fp8")


def test_nvfp4_casts_the_norm_outputs_separately():
    """T_ncast (TE v2.18 normalization.cpp Impl::UNFUSED for NVFP4): Llama 3 70B, no recompute, on GB200: the QKV and
    fc1 inputs, 2 h a layer, over T_cast's a dv + (a + 2 k) dh + 2 h + 3 f elements (1e-9); 0 under MXFP8."""
    from symbolic.config.shapes import PRESETS
    from symbolic.config.training import Training
    from symbolic.time.evaluate import step_time
    from symbolic.time.systems import SYSTEMS

    m = PRESETS["llama3-70b"]
    job = dict(d=8, t=2, p=4, vpp=5, s=8192, b=1, gbs=256)
    fp4 = step_time(m, Training(**job, fp8="nvfp4"), SYSTEMS["gb200-nvl72"])["breakdown"]
    fp8 = step_time(m, Training(**job, fp8="mxfp8"), SYSTEMS["gb200-nvl72"])["breakdown"]
    cast = m.a * m.dh + (m.a + 2 * m.k) * m.dh + 2 * m.h + 3 * m.f
    assert fp4["T_ncast"] / fp4["T_cast"] == pytest.approx(2 * m.h / cast, rel=1e-9)
    assert fp8["T_ncast"] == 0


def test_nvfp4_runs_the_linear_gemms_at_the_fp4_rate():
    """NVFP4 (TE 2.20.2: fprop, dgrad, wgrad in FP4) on GB200: T_lin over MXFP8's is the FP8 over the FP4 rate (3615.6 /
    7627.6, GEMM.md 1-2) times the shape curves' shares; casts 5.125 bytes, not 4 (cast.py: two reads; 1e-9); H100: one line."""
    from symbolic.time import gemm

    shape = MODELS["llama3-70b"]
    job = dict(d=8, t=2, p=4, vpp=5, s=8192, b=1, gbs=256)
    fp4 = step_time(shape, Training(**job, fp8="nvfp4"), SYSTEMS["gb200-nvl72"])["breakdown"]
    fp8 = step_time(shape, Training(**job, fp8="mxfp8"), SYSTEMS["gb200-nvl72"])["breakdown"]
    m, n = 8192, shape.f / 2
    ratio = (
        3615.6 * gemm.share("gb200-186gb", m, n, shape.h) / (7627.6 * gemm.share("gb200-186gb", m, n, shape.h, "fp4"))
    )
    assert fp4["T_lin"] / fp8["T_lin"] == pytest.approx(ratio, rel=1e-9)
    assert fp4["T_cast"] / fp8["T_cast"] == pytest.approx(5.125 / 4, rel=1e-9)
    with pytest.raises(ConfigError, match="has no FP4 tensor cores"):
        step_time(shape, Training(**job, fp8="nvfp4"), SYSTEMS["dgx-h100"])
