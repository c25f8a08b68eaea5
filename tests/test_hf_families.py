"""The families added for the 2026 models (Phi-3, Llama 4's language model, gpt-oss, MiMo, OLMo 2), counted to the
parameter; every family's library defaults counted as transformers counts them (multimodal checkpoints read with
--text-only: tests/test_hf_text_only.py).

Source of truth: transformers 5.25.0's own modeling code, instantiated on the meta device from the same file
(benchmarks/hf_count.py, torch 2.13.0, run 2026-12-03; its output is the table below). A file holding only
model_type is the library's default model (the configuration class's defaults, families/defaults.py), so these rows
also check the defaults table. DeepSeek-V3's score-correction bias is a buffer there and a parameter here (added).
"""

import json

import pytest

from model_files import PUBLISHED
from model_files import write

from symbolic.config.errors import ConfigError
from symbolic.config.hfconfig import from_hf_config


# model_type -> transformers' count of its default model (hf_count.py on {"model_type": ...})
DEFAULT_MODELS = {
    "llama": 6_738_415_616,
    "granite": 6_738_415_616,
    "mistral": 7_241_732_096,
    "qwen2": 12_049_846_272,
    "qwen3": 12_049_461_248,
    "mixtral": 46_702_792_704,
    "qwen2_moe": 14_315_784_192,
    "qwen3_moe": 15_350_731_776,
    "olmoe": 13_361_612_800,
    "olmo2": 6_888_624_128,
    "deepseek_v3": 671_026_404_352 + 14_848,
    "gpt2": 124_439_808,
    "phi3": 3_821_079_552,
    "llama4_text": 107_769_861_120,
    "qwen3_vl_moe_text": 13_173_956_608,
    "gemma2": 2_614_341_888,
    "gemma3_text": 2_628_658_432,  # Gemma2Config's defaults are gemma-2-2b's
    "gemma4_text": 5_077_177_856,  # Gemma4TextConfig: per-layer inputs [262144, 30 x 256], 5 full layers of 512-wide heads
    "gpt_oss": 116_829_156_672,  # GptOssConfig's defaults are gpt-oss-120b's shape
    "phimoe": 41_872_793_600,  # PhimoeConfig's defaults: Phi-3.5-MoE's shape without its attention and head biases
    "minimax_m2": 228_689_748_992 + 15_872,  # MiniMax-M2's shape; its score-correction bias a buffer there
    "deepseek_v32": 671_877_929_216 + 14_848,
    "glm_moe_dsa": 743_911_199_232 + 19_200,  # the score bias too
}


@pytest.mark.parametrize("model_type", sorted(DEFAULT_MODELS))
def test_default_model_of_each_family_is_counted_as_transformers_counts_it(tmp_path, model_type):
    assert from_hf_config(write(tmp_path, {"model_type": model_type})).param_count == DEFAULT_MODELS[model_type]


@pytest.mark.parametrize("flash", [True, False])
def test_each_gemma_feature_adds_exactly_its_tensors(tmp_path, flash):
    """Gemma 2 against the same shape without its features, under no recompute at s = 4096 (b = 1, t = c = 1, bf16
    activations): the sandwich norms' two extra inputs per layer [s, h] and weights 2h per layer; the tanh output of
    the soft-capped logits [s, v]; with unfused attention the tanh of the capped scores [a, s, s] per layer (flash
    kernels cap inside their tiles: nothing). Source of truth: the tensors written out here from Gemma2DecoderLayer."""
    import dataclasses

    from symbolic.config.training import Training
    from symbolic.estimator.estimate import estimate

    gemma = from_hf_config(write(tmp_path, {"model_type": "gemma2"}))
    plain = dataclasses.replace(gemma, sandwich=False, logit_softcap=False, attn_softcap=False)
    training = Training(s=4096, recompute="none", flash_attn=flash)
    got, base = estimate(gemma, training, "paper").bytes, estimate(plain, training, "paper").bytes
    s, h, L, v, a = 4096, 2304, 26, 256_000, 8
    assert got["weights"] - base["weights"] == 2 * h * L * 2
    assert got["activations"] - base["activations"] == 2 * s * h * 2 * L + (0 if flash else a * s * s * 2 * L)
    assert got["output_layer"] - base["output_layer"] == s * v * 2


def test_torchtitan_and_jax_refuse_what_their_layers_lack(tmp_path):
    """torchtitan's listing is Llama's block: Gemma (and Qwen3's q/k norms) are refused in one line rather than
    under-counted; jaxcheck builds Gemma 2 and 3, Gemma 2's capped scores inside its flash attention only."""
    from symbolic.cli.entry import _run

    (tmp_path / "gemma3").mkdir()
    assert (
        _run(
            ["estimate", "--profile", "jax", "--model", str(write(tmp_path / "gemma3", {"model_type": "gemma3_text"}))]
        )
        == 0
    )
    path = str(write(tmp_path, {"model_type": "gemma2"}))
    assert _run(["estimate", "--profile", "jax", "--model", path]) == 0
    for argv, needle in (
        (["estimate", "--recipe", "torchtitan"], "Llama's TransformerBlock"),
        (["estimate", "--profile", "jax", "--no-flash-attn"], "soft-caps its attention scores"),
    ):
        with pytest.raises(ConfigError, match=needle):
            from symbolic.cli.entry import _run

            _run([*argv, "--model", path])
    with pytest.raises(ConfigError, match="Llama's TransformerBlock"):
        from symbolic.cli.entry import _run

        _run(["estimate", "--recipe", "torchtitan", "--model", str(PUBLISHED / "qwen3-8b.json")])


GPT_OSS_20B = {
    "model_type": "gpt_oss",
    "num_hidden_layers": 24,
    "num_local_experts": 32,
    "experts_per_token": 4,
    "layer_types": ["sliding_attention", "full_attention"] * 12,
    "swiglu_limit": 7.0,
    "quantization_config": {
        "quant_method": "mxfp4",
        "modules_to_not_convert": [
            "model.layers.*.self_attn",
            "model.layers.*.mlp.router",
            "model.embed_tokens",
            "lm_head",
        ],
    },
}


def test_gpt_oss_20b_shape_with_its_mxfp4_storage(tmp_path):
    """gpt-oss-20b's shape (24 layers, 32 experts): 20,914,757,184, transformers' count of the same file without its
    quantization_config (the MXFP4 experts are read as the bf16 weights training holds)."""
    assert from_hf_config(write(tmp_path, GPT_OSS_20B)).param_count == 20_914_757_184


def test_gpt_oss_weights_shard_as_megatron_shards_them(tmp_path):
    """Stage weights + expert weights per GPU at d8 t2 ep4 (bf16): attention (with its biases split with their
    heads, o's bias replicated, sinks split over t), router and its bias (replicated), E/e experts with gate-up
    biases split over t_e and down biases replicated, norms, the embedding and head split over t. At t = e = 1 the
    same sum is 2 bytes x the parameter count. Source of truth: that layout written out here."""
    from symbolic.config.training import Training
    from symbolic.estimator.estimate import estimate

    shape = from_hf_config(write(tmp_path, GPT_OSS_20B))
    h, f, E, a, k, dh, L, v = 2880, 2880, 32, 64, 8, 64, 24, 201_088
    attention = (2 * h * a * dh + 2 * h * k * dh + a * dh + 2 * k * dh) / 2 + h + a / 2
    layer = attention + h * E + E + E / 4 * (3 * h * f / 2 + 2 * f / 2 + h) + 2 * h
    for training, expected in (
        (Training(s=4096, zero=0), 2 * shape.param_count),
        (Training(d=8, t=2, ep=4, s=4096, zero=0), 2 * (L * layer + v * h + h)),
    ):
        stage = estimate(shape, training, "paper", overheads=False).stages[0]["bytes"]
        assert stage["weights"] + stage["expert_weights"] == expected


def test_phi4_mini_shape_and_its_inert_keys(tmp_path):
    """Phi-4-mini's shape (24 heads, 8 KV heads, 200,064 tokens, tied, RoPE over 0.75 of each head) with the keys its
    file carries at values that change nothing: 3,836,021,760, transformers' count of the same file; a bias there
    is refused (Phi3Attention has none)."""
    config = {
        "model_type": "phi3",
        "attention_bias": False,
        "mlp_bias": False,
        "lm_head_bias": False,
        "full_attn_mod": 1,
        "interpolate_factor": 1,
        "partial_rotary_factor": 0.75,
        "num_key_value_heads": 8,
        "num_attention_heads": 24,
        "vocab_size": 200_064,
        "tie_word_embeddings": True,
    }
    assert from_hf_config(write(tmp_path, config)).param_count == 3_836_021_760
    with pytest.raises(ConfigError, match="key 'attention_bias'"):
        from_hf_config(write(tmp_path, config | {"attention_bias": True}))


def test_llama4_interleaved_dense_layers(tmp_path):
    """interleave_moe_layer_step 2 (Maverick's layout): odd layers MoE, even ones dense MLPs of
    intermediate_size_mlp; each dense layer trades the router, 16 experts and the shared expert for 3 h f_mlp."""
    h, E, f_e, f_mlp = 5120, 16, 8192, 16384
    shape = from_hf_config(write(tmp_path, {"model_type": "llama4_text", "interleave_moe_layer_step": 2}))
    assert shape.dense_layers == tuple(range(0, 48, 2)) and shape.f == f_mlp
    assert shape.param_count == 107_769_861_120 + 24 * (3 * h * f_mlp - (h * E + E * 3 * h * f_e + 3 * h * f_e))


def test_mimo_is_qwen2_with_its_multi_token_prediction_modules(tmp_path):
    """MiMo (remote code, no transformers class): the same keys read as model_type qwen2 are 7,622,619,136
    parameters by transformers (hf_count.py, the Qwen2 model MiMo subclasses); each of num_nextn_predict_layers
    modules adds token_layernorm, hidden_layernorm, final_layernorm [h], input_proj [2h, h] and one Qwen2 layer
    (Q, K, V biases), as sglang 0.5.23's MiMoMultiTokenPredictorLayer builds it, sharing embedding and head."""
    h, f, a, k, L, v = 4096, 11008, 32, 8, 36, 151680
    config = {
        "model_type": "mimo",
        "hidden_size": h,
        "intermediate_size": f,
        "num_hidden_layers": L,
        "num_attention_heads": a,
        "num_key_value_heads": k,
        "vocab_size": v,
        "num_nextn_predict_layers": 1,
        "tie_word_embeddings": False,
        "use_sliding_window": False,
        "sliding_window": 32768,
        "max_window_layers": L,
        "attention_dropout": 0.0,
    }
    shape = from_hf_config(write(tmp_path, config))
    dh = h // a
    layer = 2 * h * a * dh + 2 * h * k * dh + (a * dh + 2 * k * dh) + 3 * h * f + 2 * h
    assert shape.mtp == 1 and shape.param_count == 7_622_619_136 + 3 * h + 2 * h * h + layer
    assert from_hf_config(write(tmp_path, config | {"num_nextn_predict_layers": 0})).param_count == 7_622_619_136


def test_group_limited_routing_is_read_where_the_routers_use_it(tmp_path):
    """n_group and topk_group become the shape's groups and group_topk where transformers' DeepseekV2/V3 routers
    limit the choice (topk_method group_limited_greedy or noaux_tc, n_group > 1, topk_group < n_group): DeepSeek-V3
    as published 8 and 4, DeepSeek-V2 8 and 3; greedy (DeepSeek-V2-Lite) and one group (Kimi K2) limit nothing. A
    limit the experts cannot meet is one line. Source of truth: the published files' keys."""
    shapes = {
        name: from_hf_config(PUBLISHED / f"{name}.json")
        for name in ("deepseek-v3", "deepseek-v2", "deepseek-v2-lite", "kimi-k2-instruct")
    }
    assert {name: (s.groups, s.group_topk) for name, s in shapes.items()} == {
        "deepseek-v3": (8, 4),
        "deepseek-v2": (8, 3),
        "deepseek-v2-lite": (0, 0),
        "kimi-k2-instruct": (0, 0),
    }
    config = json.loads((PUBLISHED / "deepseek-v3.json").read_text())
    for bad, needle in (({"n_group": 7}, "groups=7"), ({"num_experts_per_tok": 2}, "k_e=2, groups=8, group_topk=4")):
        with pytest.raises(ConfigError, match=needle) as err:
            from_hf_config(write(tmp_path, config | bad))
        assert "\n" not in str(err.value)


def test_olmo2_post_norm_layer_keeps_a_pre_norm_layers_bytes():
    """OLMo 2's norms after attention and the MLP: what autograd keeps of transformers 5.25.0's Olmo2DecoderLayer
    equals what the same modules keep called pre-norm (records/olmo2-saved-cpu.jsonl, benchmarks/olmo2_saved.py;
    tolerance: none), so the olmo2 family's tensors are a pre-norm layer's with OLMoE's whole-projection q/k norms."""
    rows = [
        json.loads(line)
        for line in (PUBLISHED.parent.parent.parent / "records" / "olmo2-saved-cpu.jsonl").read_text().splitlines()
    ]
    assert [row["layout"] for row in rows] == ["post-norm", "pre-norm"] and rows[0]["transformers"] == "5.25.0"
    assert rows[0]["saved_bytes"] == rows[1]["saved_bytes"] > 0
