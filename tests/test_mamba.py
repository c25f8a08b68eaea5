"""Nemotron-H, a Mamba-2 hybrid of one-part blocks: read from config.json and counted to the parameter, each block's
tensors as Megatron-Core 0.16.1 keeps them, each stage with the blocks it holds, and the limits refused in one line.

Sources of truth: parameter counts from transformers 5.25.0's own modeling code on the meta device
(benchmarks/hf_count.py, torch 2.13.0, run 2026-12-04; the numbers below are its output); the Mamba-2 mixer's tensors
from Megatron-Core 0.16.1 ssm/mamba_mixer.py and mamba-ssm 2.3.2's MambaSplitConv1dScanCombinedFn (written out
literally here); plan's rows from estimate(), one configuration at a time. Tolerances: counts and bytes exact (plan's
rows to 1 byte)."""

import pytest

from refusals import assert_profiles_refuse, assert_refused
from model_files import NEMOTRON_H as SMALL  # blocks M - M * - M M - * with sizes that all differ
from model_files import read as _read

from symbolic.config.errors import ConfigError
from symbolic.config.families.defaults_2026 import DEFAULTS_2026
from symbolic.config.training import Training
from symbolic.estimator.estimate import estimate

# Nemotron-H-8B's shape (52 blocks: 24 Mamba-2, 4 attention, 24 MLP; NemotronHConfig's defaults are its sizes) with
# the keys its file carries
EIGHT_B = {
    **SMALL,
    **DEFAULTS_2026["nemotron_h"],
    "hybrid_override_pattern": "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-",
    "residual_in_fp32": False,
    "hidden_dropout": 0.0,
    "attention_dropout": 0.0,
    "chunk_size": 128,
    "expand": 2,
    "mamba_hidden_act": "silu",
}


@pytest.mark.parametrize("config, count", [(SMALL, 3_435_712), (EIGHT_B, 8_100_852_736)])
def test_files_are_counted_as_transformers_counts_them(tmp_path, config, count):
    shape = _read(tmp_path, config)
    assert shape.param_count == count
    assert estimate(shape, Training(s=256)).stages[0]["bytes"]["weights"] == 2 * count  # t = p = 1: every parameter


def test_blocks_are_read_from_the_pattern(tmp_path):
    shape = _read(tmp_path, SMALL)
    assert (shape.mamba_layers, shape.mixerless_layers, shape.mlpless_layers) == (
        (0, 2, 5, 6),
        (1, 4, 7),
        (0, 2, 3, 5, 6, 8),
    )
    assert shape.mlp == "relu2" and shape.L == 9
    listed = {key: value for key, value in SMALL.items() if key != "hybrid_override_pattern"}
    listed["layers_block_type"] = [
        "linear_attention",
        "mlp",
        "linear_attention",
        "full_attention",
        "mlp",
        "linear_attention",
        "linear_attention",
        "mlp",
        "full_attention",
    ]
    assert _read(tmp_path, listed).param_count == 3_435_712


@pytest.mark.parametrize(
    "change, needle",
    [
        ({"hybrid_override_pattern": "M-X*"}, "blocks M (Mamba-2), * (attention), - (MLP) and E (MoE)"),
        ({"hybrid_override_pattern": None}, "missing"),
        ({"num_hidden_layers": 10}, "disagrees with the 9 blocks"),
        ({"mlp_hidden_act": "gelu"}, "key 'mlp_hidden_act'"),
        ({"attention_bias": True}, "key 'attention_bias'"),
        ({"use_bias": True}, "key 'use_bias'"),
        ({"num_nextn_predict_layers": 1}, "a hybrid's attention and MoE, is modelled"),
        ({"hidden_dropout": 0.1}, "key 'hidden_dropout'"),
        ({"residual_in_fp32": True}, "key 'residual_in_fp32'"),
        ({"mamba_num_heads": 18}, "a multiple of its groups"),
        ({"mamba_n_groups": 2}, "disagrees with n_groups"),
    ],
)
def test_what_a_nemotron_h_file_may_not_say_is_one_line(tmp_path, change, needle):
    with pytest.raises(ConfigError) as err:
        _read(tmp_path, SMALL | change)
    assert "\n" not in str(err.value) and needle in str(err.value), str(err.value)


def _mamba(s: int, t: int, h=256, n=16, p=24, g=4, d_s=40) -> int:
    """One Mamba-2 block's saved bytes (b = 1, bf16, SP): the fused norm's input and output, zxbcdt, out_x, the
    grouped norm's input and fp32 1/rms, out_proj's input."""
    return 2 * 2 * s * h // t + (2 * (2 * n * p + 2 * g * d_s + n) + 2 * n * p + 2 * n * p + 4 * g + 2 * n * p) * s // t


def _attention(s: int, t: int, h=256, a=8, k=2, dh=32) -> int:
    """One attention block (flash, SP): norm and QKV inputs, q, k, v, the output."""
    return 2 * 2 * s * h // t + 2 * s * (a * dh + 2 * k * dh + a * dh) // t


def _mlp(s: int, t: int, h=256, f=688) -> int:
    """One squared-ReLU MLP block: norm and fc1 inputs, relu's output, fc2's input."""
    return 2 * 2 * s * h // t + 2 * 2 * s * f // t


def test_one_stage_keeps_each_blocks_tensors(tmp_path):
    """SMALL at p = 1, t = 2, s = 512, no recompute: 4 Mamba-2, 2 attention and 3 MLP blocks, one micro batch; under
    full recompute one block input each and the largest block's tensors as the working set."""
    shape = _read(tmp_path, SMALL)
    s, t = 512, 2
    got = estimate(shape, Training(t=t, s=s, b=1, recompute="none")).stages[0]["bytes"]["activations"]
    assert got == 4 * _mamba(s, t) + 2 * _attention(s, t) + 3 * _mlp(s, t)
    full = estimate(shape, Training(t=t, s=s, b=1, recompute="full")).stages[0]["bytes"]
    assert full["activations"] == 9 * 2 * s * 256 // t
    assert full["recompute_working_set"] == max(_mamba(s, t), _attention(s, t), _mlp(s, t))


def test_each_stage_holds_its_own_blocks(tmp_path):
    """p = 3 over M - M | * - M | M - *: Mamba-2 blocks 2, 1, 1, MLP blocks 1 each."""
    est = estimate(_read(tmp_path, SMALL), Training(d=2, p=3, s=256, gbs=12))
    assert [(st["mamba_layers"], st["mixerless_layers"], st["mlpless_layers"]) for st in est.stages] == [
        (2, 1, 2),
        (1, 1, 2),
        (1, 1, 2),
    ]


def test_limits_are_one_line_and_plan_rows_match_estimate(tmp_path):
    """t c not dividing the Mamba-2 groups, jaxcheck and the other recipes: one line each; every row plan evaluates
    for SMALL on 6 GPUs equals estimate() of its configuration (bytes to 1, the peak and where it is)."""
    import numpy as np

    from symbolic.plan.enumerate import Cluster
    from symbolic.plan.search import search

    shape = _read(tmp_path, SMALL)
    assert_refused(shape, [(train, "Mamba-2 heads and") for train in (Training(c=8, s=256), Training(t=2, c=4, s=256))])
    assert_profiles_refuse(shape, dict.fromkeys(("jax", "torchtitan", "deepspeed"), "Mamba-2"))
    plan = search(Cluster(shape, gpus=6, s=256, gbs=12), limit=2**31, zero=(1,))
    assert plan.evaluated and np.any(plan.rows["p"] == 3)
    for i in range(plan.evaluated):
        training = plan.training(i)
        one, got = estimate(shape, training), plan.config(i)
        assert max(abs(one.bytes[name] - got["bytes"][name]) for name in got["bytes"]) <= 1
        assert (got["peak_bytes"], got["peak_from"]) == (one.peak, one.peak_from)


def test_a_time_step_limit_of_infinity_is_read_as_python_writes_it(tmp_path):
    """Nemotron 3's published file says "time_step_limit": [0.0, Infinity] (NemotronHConfig's tuple of floats, as
    Python's json writes float('inf')): read, the count unchanged; Infinity where NemotronHConfig takes an int
    (chunk_size) or a size (mamba_num_heads) is refused in one line naming the key."""
    limit = {"time_step_limit": [0.0, float("inf")], "time_step_floor": float("nan")}
    assert _read(tmp_path, SMALL | limit).param_count == 3_435_712
    for key in ("chunk_size", "mamba_num_heads"):
        with pytest.raises(ConfigError, match=f"key '{key}' = Infinity"):
            _read(tmp_path, SMALL | {key: float("inf")})
