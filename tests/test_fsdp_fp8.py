"""Megatron-FSDP with FP8 parameters (megatron-core 0.16.1 megatron_fsdp.py:538-544, keep_fp8_transpose_cache False):
the FP8 transposes held are those of the gathered weights, B_c bytes per gathered parameter (exact: the
params_gathered row over B_w = 1), not the stage's cache."""

from symbolic.config.shapes import PRESETS as MODELS
from symbolic.config.training import Training
from symbolic.estimator.estimate import estimate


def test_transposes_of_the_gathered_weights_alone():
    shape = MODELS["llama3-8b"]
    fsdp = estimate(shape, Training(d=8, zero=3, fp8="tensorwise", fp8_param_gather=True)).bytes
    assert fsdp["fp8_weight_cache"] == fsdp["params_gathered"]  # B_c = B_w = 1 byte (tensorwise, Hopper)
    dist = estimate(shape, Training(d=8, zero=1, fp8="tensorwise", fp8_param_gather=True)).bytes
    assert dist["fp8_weight_cache"] > 4 * fsdp["fp8_weight_cache"]  # the distributed optimizer keeps every layer's
