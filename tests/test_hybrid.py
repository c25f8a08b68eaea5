"""Gated DeltaNet hybrids (Qwen3-Next, Qwen3.5): read from config.json and counted to the parameter, their layers'
tensors as Megatron-Core 0.16.1 keeps them, each stage with the layer kinds it holds, and the limits refused in one
line.

Sources of truth: parameter counts from transformers 5.25.0's own modeling code on the meta device
(benchmarks/hf_count.py, torch 2.13.0, run 2026-12-04; the numbers below are its output); the tensors from
Megatron-Core 0.16.1 ssm/gated_delta_net.py and fla-core 0.6.0 (written out literally here, shape by shape); the
placement of layers on stages from Training.layer_ranges; plan's rows from estimate(), one configuration at a time.
Tolerances: counts and bytes exact (plan's rows to 1 byte, as the other plan tests)."""

import pytest

from refusals import assert_profiles_refuse, assert_refused
from model_files import HYBRID, read

from symbolic.config.errors import ConfigError
from symbolic.config.training import Training
from symbolic.estimator.estimate import estimate

# a small Qwen3-Next whose sizes all differ: 6 layers (3 Gated DeltaNet), two dense (mlp_only_layers), biased gated
# attention, n_gv = 2 n_gk (queries and keys repeated), a tied head
SMALL = {
    "model_type": "qwen3_next",
    **HYBRID,
    "num_hidden_layers": 6,
    "linear_num_key_heads": 4,
    "linear_num_value_heads": 8,
    "linear_key_head_dim": 24,
    "linear_value_head_dim": 40,
    "linear_conv_kernel_dim": 3,
    "num_experts": 8,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 96,
    "shared_expert_intermediate_size": 160,
    "mlp_only_layers": [0, 3],
    "layer_types": [
        "linear_attention",
        "full_attention",
        "linear_attention",
        "linear_attention",
        "full_attention",
        "full_attention",
    ],
    "attention_bias": True,
    "tie_word_embeddings": True,
}


def _read(tmp_path, config: dict, text_only: bool = False):
    return read(tmp_path, config, text_only=text_only)


def test_small_file_is_counted_as_transformers_counts_it(tmp_path):
    shape = _read(tmp_path, SMALL)
    assert shape.param_count == 5_768_936
    assert shape.linear_layers == (0, 2, 3) and shape.dense_layers == (0, 3) and shape.attn_gate
    assert (shape.lin_k_heads, shape.lin_v_heads, shape.lin_k_dim, shape.lin_v_dim, shape.conv_width) == (
        4,
        8,
        24,
        40,
        3,
    )


def test_layer_kinds_default_to_every_fourth_layer_softmax_attention(tmp_path):
    """Without layer_types, every full_attention_interval-th layer (default 4) is softmax attention
    (Qwen3NextConfig.__post_init__)."""
    config = {key: value for key, value in SMALL.items() if key != "layer_types"} | {"num_hidden_layers": 8}
    assert _read(tmp_path, config).linear_layers == (0, 1, 2, 4, 5, 6)
    assert _read(tmp_path, config | {"full_attention_interval": 2}).linear_layers == (0, 2, 4, 6)


def test_mtp_module_is_counted_as_a_gated_attention_layer(tmp_path):
    """mtp_num_hidden_layers 1 (the published files' mtp.* tensors, which transformers skips): enorm, hnorm, fc
    [2h, h], one softmax-attention layer with the last layer's MLP (an MoE here), its final norm."""
    plain, mtp = _read(tmp_path, SMALL), _read(tmp_path, SMALL | {"mtp_num_hidden_layers": 1})
    h, a, k, dh, E, f_e, f_s = 256, 8, 2, 32, 8, 96, 160
    attention = h * 2 * a * dh + 2 * h * k * dh + a * dh * h + (2 * a * dh + 2 * k * dh + h) + 2 * dh
    moe = h * E + E * 3 * h * f_e + 3 * h * f_s + h
    assert mtp.param_count - plain.param_count == 3 * h + 2 * h * h + attention + 2 * h + moe


@pytest.mark.parametrize(
    "model_type, count, text_only",
    [
        ("qwen3_next", 79_674_391_296, False),  # Qwen3NextConfig's defaults: Qwen3-Next-80B-A3B's shape
        ("qwen3_5", 8_953_803_264, True),  # Qwen3_5TextConfig's defaults (--text-only)
        ("qwen3_5_moe", 34_660_610_688, True),  # Qwen3_5MoeTextConfig's defaults (--text-only)
    ],
)
def test_default_models_are_counted_as_transformers_counts_them(tmp_path, model_type, count, text_only):
    config = {"model_type": model_type} | ({"text_config": {}} if text_only else {})
    assert _read(tmp_path, config, text_only).param_count == count


@pytest.mark.parametrize(
    "change, needle",
    [
        ({"layer_types": ["linear_attention"] * 5 + ["mamba"]}, "key 'layer_types'"),
        ({"layer_types": ["linear_attention"] * 5}, "each of the 6 layers"),
        ({"mtp_use_dedicated_embeddings": True}, "key 'mtp_use_dedicated_embeddings'"),
        ({"attn_output_gate": False}, "key 'attn_output_gate'"),
        ({"linear_num_value_heads": 6}, "a multiple of key heads"),
        ({"linear_conv_kernel_dim": 0}, "key 'linear_conv_kernel_dim'"),
        (
            {"mtp_num_hidden_layers": 1, "layer_types": ["full_attention"] * 5 + ["linear_attention"]},
            "only a softmax-attention last layer",
        ),
    ],
)
def test_what_a_hybrid_file_may_not_say_is_one_line(tmp_path, change, needle):
    with pytest.raises(ConfigError) as err:
        _read(tmp_path, SMALL | change)
    assert "\n" not in str(err.value) and needle in str(err.value), str(err.value)


def test_linear_attention_layers_on_a_model_without_them_are_refused(tmp_path):
    """layer_types naming a Gated DeltaNet layer in a qwen3 file describes another model: refused, never read as
    full attention."""
    with pytest.raises(ConfigError, match="key 'layer_types'"):
        _read(
            tmp_path,
            {"model_type": "qwen3", "num_hidden_layers": 2, "layer_types": ["linear_attention", "full_attention"]},
        )


def _gdn_layer(s: int, t: int, h=256, n_k=4, n_v=8, d_k=24, d_v=40) -> int:
    """One Gated DeltaNet mixer's saved bytes (b = 1, bf16, SP), written out from GatedDeltaNet.forward."""
    bf16, fp32 = 2, 4
    residual = 2 * bf16 * s * h // t  # the fused norm's input and output (in_proj's input), sequence-parallel
    heads = [
        bf16 * (2 * n_k * d_k + n_v * d_v),  # causal_conv1d_fn's input
        bf16 * 2 * n_k * d_k,
        fp32 * 2 * n_k,  # l2norm: q and k normed, their 1/norms
        bf16 * 2 * n_v * d_k,  # q and k repeated to n_v heads, kept by chunk_gated_delta_rule
        bf16 * n_v * d_v,
        bf16 * n_v * d_v,
        bf16 * n_v,  # v, the gate z, beta
        fp32 * 3 * n_v,  # softplus input and output, the cumulative g
        bf16 * n_v * 64,  # A [b, s, n_v, 64]
        bf16 * n_v * d_v,
        fp32 * n_v,
        bf16 * n_v * d_v,  # o, the gated RMSNorm's 1/rms and output
        bf16 * n_v * d_v,
    ]  # out_proj's input
    return residual + sum(x * s // t for x in heads)


def _attention_layer(s: int, t: int, h=256, a=8, k=2, dh=32) -> int:
    """One gated softmax attention's saved bytes (flash, q/k norms per head, SP): norm and QKV inputs, q/k norm
    inputs, q, k, v, the output, the gate and the gated output."""
    return 2 * 2 * s * h // t + 2 * s * (a * dh + k * dh + a * dh + 2 * k * dh + 3 * a * dh) // t


def _dense_mlp(s: int, t: int, h=256, f=688) -> int:
    return 2 * 2 * s * h // t + 4 * 2 * s * f // t


def test_one_stage_keeps_each_layer_kinds_tensors(tmp_path):
    """The dense Qwen3.5 shape of SMALL (no experts) at p = 1, t = 2, s = 512, no recompute: 3 Gated DeltaNet and 3
    attention layers, each with its dense MLP, one micro batch in flight."""
    shape = _read(
        tmp_path,
        {
            key: value
            for key, value in SMALL.items()
            if key
            not in (
                "num_experts",
                "num_experts_per_tok",
                "moe_intermediate_size",
                "shared_expert_intermediate_size",
                "mlp_only_layers",
            )
        }
        | {"model_type": "qwen3_5_text"},
    )
    s, t = 512, 2
    got = estimate(shape, Training(t=t, s=s, b=1, recompute="none")).stages[0]["bytes"]["activations"]
    assert got == 3 * _gdn_layer(s, t) + 3 * _attention_layer(s, t) + 6 * _dense_mlp(s, t)
    full = estimate(shape, Training(t=t, s=s, b=1, recompute="full")).stages[0]["bytes"]
    assert full["activations"] == 6 * 2 * s * 256 // t  # one layer input each
    assert full["recompute_working_set"] == max(_gdn_layer(s, t), _attention_layer(s, t)) + _dense_mlp(s, t)


def test_each_stage_holds_its_own_layer_kinds(tmp_path):
    """p = 3 over SMALL's 6 layers: ranks hold layers (0, 1), (2, 3), (4, 5), so 1, 2, 0 Gated DeltaNet layers and
    1, 1, 2 MoE layers; the stages' parameters differ by exactly a Gated DeltaNet mixer against a gated attention."""
    shape = _read(tmp_path, SMALL)
    est = estimate(shape, Training(d=2, p=3, s=256, gbs=12, recompute="full"))
    assert [(st["linear_layers"], st["moe_layers"]) for st in est.stages] == [(1, 1), (2, 1), (0, 2)]
    h, a, k, dh, n_k, n_v, d_k, d_v, K = 256, 8, 2, 32, 4, 8, 24, 40, 3
    gdn = (
        h * (2 * n_k * d_k + 2 * n_v * d_v + 2 * n_v) + (2 * n_k * d_k + n_v * d_v) * K + 2 * n_v + d_v + n_v * d_v * h
    )
    attention = h * 2 * a * dh + 2 * h * k * dh + a * dh * h + (2 * a * dh + 2 * k * dh + h) + 2 * dh
    assert shape.gdn_count == gdn and shape.attention_count == attention
    plain = estimate(shape, Training(d=2, p=3, s=256, gbs=12, recompute="full", stage_layers=(2, 2, 2)))
    assert [st["bytes"]["weights"] for st in est.stages] == [st["bytes"]["weights"] for st in plain.stages]


def test_megatron_core_limits_are_one_line_and_plan_searches_around_them(tmp_path):
    """Context parallel (Megatron-Core 0.16.1's GatedDeltaNet has none), key heads not divisible by t, jaxcheck and
    the other recipes: one line each; plan proposes no cp > 1 and no t that splits a head."""
    shape = _read(tmp_path, SMALL)
    wide = _read(tmp_path, SMALL | {"num_key_value_heads": 8})  # t = 8 splits its KV heads, not its 4 key heads
    assert_refused(shape, [(Training(c=2, s=256), "context parallel")])
    assert_refused(wide, [(Training(t=8, s=256), "Gated DeltaNet key heads")])
    assert_profiles_refuse(shape, dict.fromkeys(("jax", "torchtitan", "deepspeed"), "Gated DeltaNet"))


def test_plan_rows_of_a_hybrid_match_estimate(tmp_path):
    """Every row plan evaluates for SMALL on 6 GPUs (even and uneven splits of 6 layers of mixed kinds) equals
    estimate() of its configuration: bytes to 1, the peak and where it is."""
    import numpy as np

    from symbolic.plan.enumerate import Cluster
    from symbolic.plan.search import search

    shape = _read(tmp_path, SMALL)
    plan = search(Cluster(shape, gpus=6, s=256, gbs=12), limit=2**31, zero=(1,))
    assert plan.evaluated and not np.any(plan.rows["c"] > 1) and np.any(plan.rows["p"] == 3)
    for i in range(plan.evaluated):
        training = plan.training(i)
        one, got = estimate(shape, training), plan.config(i)
        assert max(abs(one.bytes[name] - got["bytes"][name]) for name in got["bytes"]) <= 1
        assert (got["peak_bytes"], got["peak_from"]) == (one.peak, one.peak_from)
