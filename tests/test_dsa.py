"""DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5): the config.json reader, the indexer's parameters on each TP rank,
what one layer keeps for backward, and what Megatron-Core 0.16.1 cannot run refused in one line.

Sources of truth: transformers 5.25.0's own modeling code (benchmarks/hf_count.py on the meta device, run
2026-12-04: the counts below; DeepseekV32Indexer / GlmMoeDsaIndexer, the score-correction bias a buffer there and a
parameter here, added); Megatron-Core 0.16.1's transformer/experimental_attention_variant/dsa.py for the saved
tensors, listed by hand in _per_token below from its forward (DSAIndexer.forward_with_scores, unfused_dsa_fn,
compute_dsa_indexer_loss). Exact: no tolerance."""

import dataclasses
from pathlib import Path

import pytest

from refusals import assert_profiles_refuse, assert_refused
from model_files import cli, cli_json, read, write
import sympy as sp

from symbolic.components.activations import layer_activation
from symbolic.components.attention import attention_tensors
from symbolic.components.weights import attention_params
from symbolic.config.errors import ConfigError
from symbolic.config.glossary import inputs_for
from symbolic.config.switches import Switches
from symbolic.config.symbols import BY_NAME
from symbolic.config.training import Training
from symbolic.plan.policies import policies

# small files whose every key transformers reads, counted by hf_count.py: mlp_layer_types in place of
# first_k_dense_replace (DeepSeek-V3.2), a tied head (GLM-5); (parameters, score-correction bias entries)
SMALL = {
    "deepseek_v32": (
        {
            "hidden_size": 512,
            "intermediate_size": 1024,
            "moe_intermediate_size": 256,
            "num_hidden_layers": 6,
            "num_attention_heads": 8,
            "num_key_value_heads": 8,
            "n_routed_experts": 8,
            "n_shared_experts": 1,
            "num_experts_per_tok": 2,
            "n_group": 1,
            "topk_group": 1,
            "kv_lora_rank": 96,
            "q_lora_rank": 160,
            "qk_rope_head_dim": 32,
            "qk_nope_head_dim": 48,
            "v_head_dim": 40,
            "vocab_size": 3000,
            "index_topk": 64,
            "index_head_dim": 80,
            "index_n_heads": 6,
            "first_k_dense_replace": 1,
            "mlp_layer_types": ["dense", "sparse", "dense", "sparse", "sparse", "sparse"],
        },
        (24_011_712, 32),
    ),
    "glm_moe_dsa": (
        {
            "hidden_size": 384,
            "intermediate_size": 768,
            "moe_intermediate_size": 192,
            "num_hidden_layers": 4,
            "num_attention_heads": 6,
            "num_key_value_heads": 6,
            "n_routed_experts": 4,
            "n_shared_experts": 1,
            "num_experts_per_tok": 2,
            "kv_lora_rank": 64,
            "q_lora_rank": 96,
            "qk_rope_head_dim": 16,
            "qk_nope_head_dim": 32,
            "v_head_dim": 48,
            "vocab_size": 2000,
            "index_topk": 32,
            "index_head_dim": 48,
            "index_n_heads": 4,
            "first_k_dense_replace": 1,
            "tie_word_embeddings": True,
        },
        (6_079_360, 12),
    ),
}


def _read(tmp_path: Path, model_type: str, **keys):
    return read(tmp_path, {"model_type": model_type, **SMALL[model_type][0], **keys})


def _value(expr, shape, training) -> int:
    return int(sp.sympify(expr).xreplace({BY_NAME[n]: v for n, v in inputs_for(shape, training).items()}))


def test_glm_files_whose_every_layer_runs_its_indexer_are_read(tmp_path):
    """GlmMoeDsaConfig's other spellings of an indexer in every layer: a pattern of F, a frequency of 1."""
    for keys in (
        {"index_topk_pattern": "FFFF"},
        {"index_topk_freq": 1, "index_skip_topk_offset": 3},
        {"indexer_types": ["full"] * 4},
    ):
        assert _read(tmp_path, "glm_moe_dsa", **keys).param_count == sum(SMALL["glm_moe_dsa"][1])


@pytest.mark.parametrize("model_type", sorted(SMALL))
def test_small_files_are_counted_as_transformers_counts_them(tmp_path, model_type):
    shape = _read(tmp_path, model_type)
    params, bias = SMALL[model_type][1]
    assert shape.param_count == params + bias and shape.dsa
    assert shape.index_heads == SMALL[model_type][0]["index_n_heads"]
    if model_type == "deepseek_v32":
        assert shape.dense_layers == (0, 2)  # mlp_layer_types, not first_k_dense_replace


@pytest.mark.parametrize(
    "model_type, key, value, needle",
    [
        ("glm_moe_dsa", "indexer_types", ["full", "shared", "full", "full"], "shared layers are not modelled"),
        ("glm_moe_dsa", "index_topk_pattern", "FSFS", "shared layers are not modelled"),
        ("glm_moe_dsa", "index_topk_freq", 4, "shared layers are not modelled"),
        ("glm_moe_dsa", "index_topk_pattern", "FFF", "must name each of the L=4 layers"),
        ("deepseek_v32", "layer_types", ["indexed_attention"] * 5 + ["full_attention"], "indexed_attention"),
        ("deepseek_v32", "mlp_layer_types", ["dense", "sparse"], "must name each of the L=6 layers"),
        ("deepseek_v32", "index_n_heads", 0, "must be a positive integer"),
    ],
)
def test_what_dsa_files_may_not_say_is_one_line(tmp_path, model_type, key, value, needle):
    with pytest.raises(ConfigError, match=needle) as err:
        _read(tmp_path, model_type, **{key: value})
    assert "\n" not in str(err.value) and repr(key) in str(err.value)


def test_indexer_keys_elsewhere_are_refused(tmp_path):
    keys = {k: v for k, v in SMALL["deepseek_v32"][0].items() if k != "mlp_layer_types"}
    with pytest.raises(ConfigError, match="3 keys mem4d does not know for model_type 'deepseek_v3'") as err:
        read(tmp_path, {"model_type": "deepseek_v3", **keys})
    assert all(repr(key) in str(err.value) for key in ("index_topk", "index_head_dim", "index_n_heads"))


@pytest.mark.parametrize("t", [1, 4])
def test_the_indexer_is_whole_on_every_tensor_rank(tmp_path, t):
    """wq_b [q_r, n_i d_i], wk [h, d_i], the key's LayerNorm [d_i] x 2 and weights_proj [h, n_i]: replicated over t
    (Megatron-Core's 'duplicated' TELinears), so the DSA layer's attention exceeds its MLA twin's by the same count
    at every t, and at t = 1 the config's own count."""
    shape = _read(tmp_path, "deepseek_v32")
    twin = dataclasses.replace(shape, index_heads=0, index_dim=0, index_topk=0)
    train = Training(t=t, s=256)
    extra = _value(attention_params(Switches.of(train, shape=shape)), shape, train) - _value(
        attention_params(Switches.of(train, shape=twin)), twin, train
    )
    assert extra == 160 * 6 * 80 + 512 * 80 + 2 * 80 + 512 * 6 == shape.indexer_count
    if t == 1:
        assert _value(attention_params(Switches.of(train, shape=shape)), shape, train) == shape.attention_count


def _per_token_layer(shape, s: int, t: int, sp_on: bool) -> int:
    """Bytes one DSA layer's attention block keeps per micro batch of b = 1 (bf16, recompute none), from
    Megatron-Core 0.16.1's forward: MLA's own (norm input, down-projections' input, latents before and after their
    norms, split over t with SP; the output a d_v / t) without its q, k, v; the indexer's gathered x and q latent
    (SP, t > 1), its key with LayerNorm stats, fp32 q and k, fp32 ReLU scores [s, n_i, s], head weights, int64
    top-k; the unfused attention's fp32 q and k, fp32 probabilities, their bf16 cast and the values; the KL loss's
    three fp32 [s, s]."""
    h, a, dh, d_r, d_v = shape.h, shape.a, shape.dh, shape.rope_dim, shape.v_dim
    q_r, kv_r, n_i, d_i, k_i = shape.q_lora, shape.kv_lora, shape.index_heads, shape.index_dim, shape.index_topk
    sp_t = t if sp_on else 1
    mla = 2 * s * (2 * h + 2 * q_r + 2 * kv_r) // sp_t + 2 * s * a * d_v // t
    gathered = 2 * s * (h + q_r) if sp_on and t > 1 else 0
    indexer = s * (2 * d_i + 8) + 4 * s * n_i * d_i + 4 * s * d_i + 4 * s * s * n_i + 2 * s * n_i + 8 * s * min(k_i, s)
    attention = 2 * 4 * s * a * (dh + d_r) // t + 4 * a * s * s // t + 2 * a * s * s // t + 2 * s * a * d_v // t
    return mla + gathered + indexer + attention + 3 * 4 * s * s


@pytest.mark.parametrize("t, sp_on, s", [(1, True, 128), (2, True, 128), (2, False, 64), (2, True, 32)])
def test_one_layer_keeps_what_megatron_core_saves(tmp_path, t, sp_on, s):
    """Recompute none: the hand list above (s = 32 < k_i = 64: min(k_i, s) indices); selective with layernorm and
    moe_act keeps the indexer's and the sparse attention's tensors all; full keeps the layer input alone."""
    shape = _read(tmp_path, "deepseek_v32")
    train = Training(t=t, s=s, sp=sp_on)
    sw = Switches.of(train, shape=shape)
    assert _value(sp.Add(*(x.expr for x in attention_tensors(sw))), shape, train) == _per_token_layer(
        shape, s, t, sp_on
    )
    selective = Switches.of(
        dataclasses.replace(train, recompute="selective", recompute_modules="layernorm,moe_act"), shape=shape
    )
    kept = {x.name for x in attention_tensors(sw)} - {"qkv_input"}
    from symbolic.components.activations import layer_tensors

    assert kept <= {x.name for x in layer_tensors(selective, moe=True)}
    full = Switches.of(dataclasses.replace(train, recompute="full"), shape=shape)
    assert _value(layer_activation(full), shape, train) == 2 * s * shape.h // (t if sp_on else 1)


def test_megatron_core_limits_are_one_line_and_plan_searches_around_them(tmp_path):
    """Context parallel, selective recompute of core_attn (its checkpointed attention passes no indexer inputs) or
    mla_up_proj, --no-flash-attn, jaxcheck and the recipes: refused in one line; plan's recompute choices for a DSA
    model are those Megatron-Core can run."""
    shape = _read(tmp_path, "deepseek_v32")
    assert_refused(
        shape,
        [
            (Training(c=2, s=256), "context parallel"),
            (Training(s=256, recompute="selective"), "checkpointed core attention"),
            (Training(s=256, recompute="selective", recompute_modules="layernorm,mla_up_proj"), "mla_up_proj"),
            (Training(s=256, flash_attn=False), "--no-flash-attn does not apply"),
        ],
    )
    assert_profiles_refuse(shape, {"jax": "jaxcheck", "torchtitan": "recipe megatron", "deepspeed": "recipe megatron"})
    labels = {policy.label for policy in policies("paper", shape)}
    assert "none" in labels and "full" in labels and "selective layernorm,moe_act" in labels
    assert not any("core_attn" in label or "mla_up_proj" in label or label == "selective" for label in labels)


def test_cli_estimates_the_default_deepseek_v32(tmp_path):
    """transformers' DeepseekV32Config defaults (DeepSeek-V3.2's shape): estimate runs with full recompute and
    refuses the default selective set in one line, exit 2."""
    path = write(tmp_path, {"model_type": "deepseek_v32"})
    base = ("estimate", "--model", str(path), "--dp", "8", "--ep", "8", "--seq", "4096", "--gbs", "64")
    assert cli_json(*base, "--recompute", "full")["param_count"] == 671_877_929_216 + 14_848
    refused = cli(*base, "--recompute", "selective")
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr


def test_the_report_lists_the_indexer_letters_with_their_values(tmp_path):
    """The report's symbol table has n_i, d_i, k_i with the file's values for a DSA model (and not for DeepSeek-V3:
    tests/test_mla.py)."""
    from symbolic.render.formulas_tex import glossary

    shape = _read(tmp_path, "deepseek_v32")
    table = "\n".join(glossary(inputs_for(shape, Training(s=256)), moe=True))
    assert "$n_{i}$" in table and "$d_{i}$" in table and "$k_{i}$" in table and "& 80 \\\\" in table


def test_plan_rows_of_a_dsa_model_match_estimate(tmp_path):
    """Every row plan evaluates for the small DeepSeek-V3.2 file on 8 GPUs equals estimate() of its configuration
    (bytes to 1, peak and where it is), none with cp > 1, none recomputing core attention (source of truth: estimate,
    one configuration at a time)."""
    import numpy as np

    from symbolic.estimator.estimate import estimate
    from symbolic.plan.enumerate import Cluster
    from symbolic.plan.search import search

    shape = _read(tmp_path, "deepseek_v32")
    plan = search(Cluster(shape, gpus=8, s=256, gbs=16), limit=2**31, zero=(1,))
    assert plan.evaluated and not np.any(plan.rows["c"] > 1)
    for i in range(plan.evaluated):
        training = plan.training(i)
        assert not (training.recompute == "selective" and "core_attn" in training.recompute_modules)
        one, got = estimate(shape, training), plan.config(i)
        assert max(abs(one.bytes[name] - got["bytes"][name]) for name in got["bytes"]) <= 1
        assert (got["peak_bytes"], got["peak_from"]) == (one.peak, one.peak_from)
