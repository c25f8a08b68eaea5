"""Gemma 4 (gemma4_text, and a gemma4 checkpoint's language model with --text-only) is read and counted to the
parameter, each of its mechanisms as transformers 5.25.0 builds it, and refused by name by every recipe's memory.

Sources of truth: transformers 5.25.0's own counts on the meta device (benchmarks/hf_count.py; the two published-shaped
files' rows in records/hf-count-published.jsonl, the others below as run by hand), the model card's 25.2B total and
3.8B active parameters of gemma-4-26B-A4B (rounded to 0.1B); tolerance none for the counts.
"""

import json
from pathlib import Path

import pytest

from model_files import PUBLISHED
from model_files import write

from symbolic.cli import main
from symbolic.config.errors import ConfigError
from symbolic.config.hfconfig import from_hf_config

MOE, E2B = PUBLISHED / "gemma-4-26b-a4b-it.json", PUBLISHED / "gemma-4-e2b-it.json"
DENSE = PUBLISHED / "gemma-4-31b-it.json"


def _text(path: Path) -> dict:
    return json.loads(path.read_text())["text_config"]


def test_the_moe_checkpoint_is_read_as_transformers_builds_it():
    shape = from_hf_config(MOE, text_only=True)
    assert (shape.g_layers, shape.g_dh, shape.g_k, shape.k_eq_v, shape.kv_shared, shape.ple) == (
        (5, 11, 17, 23, 29),
        512,
        2,
        True,
        0,
        0,
    )
    assert (shape.E, shape.k_e, shape.f_e, shape.moe_beside, shape.logit_softcap) == (128, 8, 704, True, True)
    assert shape.param_count == 25_233_141_760  # transformers' Gemma4ForCausalLM
    assert (round(shape.param_count / 1e9, 1), round(shape.active_count / 1e9, 1)) == (25.2, 3.8)  # the model card


def test_the_e2b_checkpoint_is_read_as_transformers_builds_it():
    shape = from_hf_config(E2B, text_only=True)
    assert (shape.g_layers, shape.g_dh, shape.g_k, shape.k_eq_v) == (tuple(range(4, 35, 5)), 512, 1, False)
    assert (shape.kv_shared, shape.wide_shared, shape.ple, shape.ple_v, shape.E) == (20, True, 256, 262_144, 0)
    assert shape.param_count == shape.active_count == 4_628_569_344  # transformers' Gemma4ForCausalLM


def test_the_dense_checkpoint_is_read_as_transformers_builds_it():
    shape = from_hf_config(DENSE, text_only=True)
    assert (shape.g_layers, shape.g_dh, shape.g_k, shape.k_eq_v, shape.kv_shared, shape.ple, shape.E) == (
        tuple(range(5, 60, 6)),
        512,
        4,
        True,
        0,
        0,
        0,
    )
    assert shape.param_count == 30_697_345_280  # transformers' Gemma4ForCausalLM


def test_each_mechanism_changes_the_count_by_its_tensors(tmp_path):
    """From E2B's language model, one mechanism off at a time: the difference is that mechanism's parameters."""
    text = _text(E2B) | {"tie_word_embeddings": True}
    h, f, L, dh = 1536, 6144, 35, 256
    base = from_hf_config(write(tmp_path, text)).param_count
    no_ple = from_hf_config(write(tmp_path, text | {"hidden_size_per_layer_input": 0})).param_count
    assert base - no_ple == 262_144 * L * 256 + h * L * 256 + 256 + L * (2 * h * 256 + h)
    narrow = from_hf_config(write(tmp_path, text | {"use_double_wide_mlp": False})).param_count
    assert base - narrow == 20 * 3 * h * f  # the 20 layers reusing K/V
    unshared = from_hf_config(write(tmp_path, text | {"num_kv_shared_layers": 0})).param_count
    # the 20 shared layers (15..34) get k, v [h, 1 x dh_i] and k_norm [dh_i] back (16 sliding, 4 full: 19, 24, 29,
    # 34), and lose their double width
    assert unshared - base == 16 * (2 * h * dh + dh) + 4 * (2 * h * 512 + 512) - 20 * 3 * h * f
    keys = from_hf_config(write(tmp_path, text | {"attention_k_eq_v": True, "num_global_key_value_heads": 1}))
    assert base - keys.param_count == 3 * h * 512  # the 3 full layers computing K/V (4, 9, 14) drop V


def test_a_saved_per_layer_config_reads_as_the_global_keys(tmp_path):
    """transformers 5.25.0 saves global_head_dim and num_global_key_value_heads as per_layer_config (the full layers'
    overrides by index): both spellings are one model."""
    text = _text(MOE)
    saved = {key: value for key, value in text.items() if key not in ("global_head_dim", "num_global_key_value_heads")}
    saved["per_layer_config"] = {f"{i:02d}": {"head_dim": 512, "num_key_value_heads": 2} for i in (5, 11, 17, 23, 29)}
    assert from_hf_config(write(tmp_path, saved)).param_count == from_hf_config(write(tmp_path, text)).param_count
    saved["per_layer_config"]["00"] = {"head_dim": 128}
    with pytest.raises(ConfigError, match="key 'per_layer_config'.*full-attention layers alone"):
        from_hf_config(write(tmp_path, saved))


@pytest.mark.parametrize(
    "change, key",
    [
        ({"use_bidirectional_attention": "all"}, "use_bidirectional_attention"),
        ({"num_kv_shared_layers": 30}, "num_kv_shared_layers"),
        ({"num_kv_shared_layers": 29}, "num_kv_shared_layers"),  # only layer 0 computes K/V: no full layer does
        ({"attention_bias": True}, "attention_bias"),
        ({"layer_types": ["full_attention"]}, "layer_types"),
    ],
)
def test_what_is_not_modelled_is_refused_naming_the_key(tmp_path, change, key):
    with pytest.raises(ConfigError) as err:
        from_hf_config(write(tmp_path, _text(MOE) | change))
    assert f"key {key!r}" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("recipe", [[], ["--recipe", "torchtitan"], ["--recipe", "deepspeed"], ["--profile", "jax"]])
def test_every_recipe_refuses_its_memory_by_name(recipe, capsys):
    assert main(["estimate", "--model", str(MOE), "--text-only", "--dp", "8", "--ep", "8", *recipe]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.count("\n") == 1 and "Gemma 4's layers" in out.err and "128 experts" in out.err


def test_plan_refuses_it_by_name(capsys):
    assert main(["plan", "--model", str(E2B), "--text-only", "--gpus", "8", "--seq", "4096", "--gbs", "64"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "per-layer input embeddings [262144, L x 256]" in err


def test_layers_reusing_k_v_keep_no_k_v_of_their_own():
    """What autograd keeps of transformers' tiny Gemma 4 (records/gemma4-saved-cpu.jsonl, benchmarks/gemma4_saved.py,
    torch 2.13.0 and transformers 5.25.0, fp32 CPU, sdpa): a layer computing K/V keeps its K and V heads [b, s, k_i,
    dh_i] (sliding layers 2 x 16 wide, full ones g_k x 24: 1 with k_eq_v, 2 without); the two layers reusing them
    (dense: num_kv_shared_layers 2) keep none, only their queries' [b, s, a, dh_i]; per-layer inputs [b, s, d_pl]
    are kept in every layer that has them. Exact shapes."""
    rows = {
        row["variant"]: row
        for row in map(
            json.loads, (PUBLISHED.parent.parent.parent / "records" / "gemma4-saved-cpu.jsonl").read_text().splitlines()
        )
    }

    def shapes(variant: str, layer: int) -> set:
        return {tuple(t["shape"]) for t in rows[variant]["saved"] if t["owner"] == f"layer {layer}"}

    b, s = rows["dense"]["b"], rows["dense"]["s"]
    heads = {"dense": [(b, s, 2, 16), (b, s, 1, 24), None, None], "moe": [(b, s, 2, 16), (b, s, 2, 24)] * 2}
    for variant, kv in heads.items():
        for i, own in enumerate(kv):
            queries = (b, s, 4, 16 if i % 2 == 0 else 24)
            assert queries in shapes(variant, i)
            assert (
                (own in shapes(variant, i))
                if own
                else not any(len(x) == 4 and x[:2] == (b, s) and x[2] < 4 for x in shapes(variant, i))
            )
            assert ((b, s, 8) in shapes(variant, i)) == (variant == "dense")


def test_the_refusal_comes_before_any_divisor(capsys):
    """E2B's single KV head does not split over tp 2 either: the model's refusal is named first (the rule is the first
    on the model), so fixing the divisor never leads to a second refusal."""
    assert main(["estimate", "--model", str(E2B), "--text-only", "--tp", "2"]) == 2
    assert "Gemma 4's layers" in capsys.readouterr().err
