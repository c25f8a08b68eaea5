"""MiMo-V2-Flash (model_type mimo_v2_flash) on a tiny config: value heads narrower than the query/key heads and
sliding-window layers with their own KV heads and sinks, counted as transformers 5.25.0's MiMoV2FlashAttention builds
them (q [h, a dh], k [h, k_w dh], v [h, k_w d_v], o [a d_v, h], sinks [a] in the sliding-window layers, k_w = 2 k);
what the class does not build is refused in one line, and every recipe but megatron's refuses the shape by name (exit
2; the megatron recipe's figures: test_mimo_megatron.py).

Source of truth: transformers 5.25.0 models/mimo_v2_flash/modeling_mimo_v2_flash.py (tolerance: none)."""

import json

import pytest

from model_files import write

from symbolic.cli import main
from symbolic.config.errors import ConfigError
from symbolic.config.hfconfig import from_hf_config

h, f, a, k, L, v, dh, dv, E, f_e = 64, 96, 4, 1, 4, 128, 32, 16, 4, 24
TINY = {
    "model_type": "mimo_v2_flash",
    "hidden_size": h,
    "intermediate_size": f,
    "num_attention_heads": a,
    "num_key_value_heads": k,
    "num_hidden_layers": L,
    "vocab_size": v,
    "head_dim": dh,
    "v_head_dim": dv,
    "hybrid_layer_pattern": [0, 1, 1, 0],
    "moe_layer_freq": [0, 1, 1, 1],
    "n_routed_experts": E,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": f_e,
    "swa_num_key_value_heads": 2 * k,
    "add_swa_attention_sink_bias": True,
    "add_full_attention_sink_bias": False,
    "tie_word_embeddings": False,
}


def _attention(kv: int) -> int:
    return h * a * dh + h * kv * dh + h * kv * dv + a * dv * h


def test_counted_by_layer_kind(tmp_path):
    shape = from_hf_config(write(tmp_path, TINY))
    moe = h * E + E * 3 * h * f_e + E  # router, experts, score-correction bias
    expected = 2 * v * h + h + L * 2 * h + 2 * _attention(k) + 2 * (_attention(2 * k) + a) + 3 * h * f + 3 * moe
    assert (shape.swa_layers, shape.swa_k, shape.v_dim, shape.dense_layers) == ((1, 2), 2, dv, (0,))
    assert shape.param_count == expected


def test_the_class_lists_are_read_as_the_hub_ones(tmp_path):
    """layer_types and mlp_layer_types (the class's attributes) say what the hub file's 0/1 lists say."""
    classes = {key: value for key, value in TINY.items() if key not in ("hybrid_layer_pattern", "moe_layer_freq")} | {
        "layer_types": ["full_attention", "sliding_attention", "sliding_attention", "full_attention"],
        "mlp_layer_types": ["dense", "sparse", "sparse", "sparse"],
    }
    assert from_hf_config(write(tmp_path, classes)) == from_hf_config(write(tmp_path, TINY))


@pytest.mark.parametrize(
    "key, value",
    [
        ("swa_num_key_value_heads", 3),
        ("add_full_attention_sink_bias", True),
        ("swa_v_head_dim", 32),
        ("layer_types", ["full_attention"] * 4),
        ("moe_layer_freq", [0, 1]),
    ],
)
def test_what_the_class_does_not_build_is_refused_in_one_line(tmp_path, key, value):
    with pytest.raises(ConfigError) as err:
        from_hf_config(write(tmp_path, TINY | {key: value}))
    assert "\n" not in str(err.value) and (
        "key 'hybrid_layer_pattern'" if key == "layer_types" else f"key {key!r}"
    ) in str(err.value)


@pytest.mark.parametrize(
    "args",
    [
        ["estimate", "--recipe", "torchtitan"],
        ["estimate", "--recipe", "deepspeed"],
        ["plan", "--profile", "jax", "--gpus", "8", "--seq", "256", "--gbs", "8"],
    ],
)
def test_every_other_recipe_refuses_it_by_name(tmp_path, capsys, args):
    assert main(args + ["--model", str(write(tmp_path, TINY))]) == 2
    err = capsys.readouterr().err
    assert "value heads are narrower than its query/key heads" in err and len(err.strip().splitlines()[-1]) < 400


def test_the_megatron_recipe_counts_it(tmp_path, capsys):
    """The tiny model's weights on one GPU under --recipe megatron: its parameters at 2 bytes each, but the three MoE
    layers' score-correction biases [E] (fp32 buffers, router_expert_bias)."""
    assert (
        main(["estimate", "--recipe", "megatron", "--seq", "128", "--json", "--model", str(write(tmp_path, TINY))]) == 0
    )
    out = capsys.readouterr().out
    parts = json.loads(out[out.index("{") :])["stages"][0]["bytes"]
    count = from_hf_config(write(tmp_path, TINY)).param_count
    assert parts["weights"] + parts["expert_weights"] == 2 * (count - 3 * E)
