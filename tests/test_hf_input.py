"""Hostile and unusual config.json files: each is one line naming the problem (exit 2 from the CLI), never a
traceback, an unbounded read or a silent wrong number; keys left out take the family's library default.

Source of truth: the reader's contract (symbolic/config/hfconfig.py: bounded reads, every key modelled, harmless at
its checked values, or refused; all unknown keys named at once) and, for the defaults, transformers 5.25.0's
configuration classes (symbolic/config/families/defaults.py) with the exact counts of grids/models/published/SOURCES.md.
"""

import json
import os
from pathlib import Path

import pytest

from model_files import PUBLISHED

from symbolic.cli import main
from symbolic.config.errors import ConfigError
from symbolic.config.hfconfig import from_hf_config
from symbolic.config.hfjson import MAX_BYTES

LLAMA = json.loads((PUBLISHED / "llama3.1-8b.json").read_text())


def _refused(path: Path, *needles: str) -> str:
    with pytest.raises(ConfigError) as err:
        from_hf_config(path)
    text = str(err.value)
    assert "\n" not in text and str(path) in text and all(n in text for n in needles), text
    return text


@pytest.mark.parametrize(
    "text, needle",
    [
        ('{"model_type": ["llama"], "hidden_size": 64}', "must be a string"),
        ("[" * 100_000 + "]" * 100_000, "nested deeper"),  # the C decoder's recursion
        ('{"a": ' * 40 + "1" + "}" * 40, "nested deeper"),  # within the decoder's stack, beyond the reader's limit
        ('{"hidden_size": ' + "9" * 5000 + "}", "5000 digits"),
        ('{"model_type": "llama", "hidden_size": NaN}', "key 'hidden_size' = NaN: must be a positive integer"),
        ('{"hidden_size": 4096, "hidden_size": 8192}', "'hidden_size' appears twice"),
        ("\xff\xfe{}", "not UTF-8"),
    ],
)
def test_hostile_files_are_one_line(tmp_path, text, needle):
    path = tmp_path / "config.json"
    path.write_bytes(text.encode("latin-1"))
    _refused(path, needle)


def test_a_large_file_is_read_to_the_bound_only(tmp_path):
    """A file over MAX_BYTES: the reader stops at MAX_BYTES + 1 bytes and refuses it (no unbounded read)."""
    path = tmp_path / "config.json"
    path.write_bytes(b" " * (MAX_BYTES + 2))
    _refused(path, f"larger than {MAX_BYTES // 2**20} MiB")


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_file_that_is_not_regular_is_refused_at_once(tmp_path, kind):
    """A FIFO with no writer blocked open() until killed; /dev/zero never ends: neither is a config.json (opened
    without blocking, refused by its type before any read)."""
    path = Path("/dev/zero")
    if kind == "fifo":
        path = tmp_path / "config.json"
        os.mkfifo(path)
    _refused(path, "not a regular file (a pipe, device or socket)")


def test_duplicate_keys_inside_nested_objects_are_refused(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA)[:-1] + ', "rope_scaling": {"factor": 8.0, "factor": 16.0}}')
    _refused(path, "'factor' appears twice")


@pytest.mark.parametrize(
    "key, value",
    [
        ("layer_types", ["linear_attention"] * 32),  # a Qwen3-Next layer on a qwen3 config: not a harmless key then
        ("layer_types", "full_attention"),
        ("sliding_window", "4096"),
        ("use_cache", "yes"),
        ("rope_scaling", [8.0]),
        ("tie_word_embeddings", "false"),
    ],
)
def test_harmless_keys_are_harmless_at_checked_values_only(tmp_path, key, value):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA | {key: value}))
    _refused(path, f"key {key!r}", "not modelled")


def test_every_unknown_key_is_named_at_once(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA | {"future_a": 1, "future_b": True, "future_c": None}))
    _refused(path, "3 keys mem4d does not know", "'future_a', 'future_b', 'future_c'")
    path.write_text(json.dumps(LLAMA | {f"k{i}": i for i in range(20)}))
    assert len(_refused(path, "20 keys", "and 8 more")) < 400


def _without(name: str, *keys: str, **extra) -> dict:
    raw = json.loads((PUBLISHED / f"{name}.json").read_text())
    return {k: v for k, v in raw.items() if k not in keys} | extra


@pytest.mark.parametrize(
    "config, field, expected",
    [
        # Qwen3Config.head_dim = 128 (not h / a = 80): the published Qwen3-32B count, exact
        (_without("qwen3-32b", "head_dim"), "param_count", 32_762_123_264),
        # Qwen2MoeConfig.num_experts = 60: Qwen2-57B-A14B without it has 60 experts, not none
        (_without("qwen2-57b-a14b", "num_experts"), "E", 60),
        # LlamaConfig: num_key_value_heads None is a (multi-head), head_dim None is h / a
        (_without("llama3.1-8b", "num_key_value_heads", "head_dim"), "k", 32),
        # GPT2Config: attn/embd/resid_pdrop 0.1 each
        ({"model_type": "gpt2"}, "dropout", True),
        ({"model_type": "gpt2"}, "param_count", 124_439_808),  # GPT2Config's defaults are GPT-2 small
        # DeepseekV3Config's router is sigmoid-scored with a score-correction bias when the keys are left out
        (_without("deepseek-v3", "topk_method", "scoring_func"), "param_count", 682_636_487_424),
    ],
)
def test_keys_left_out_take_the_family_library_default(tmp_path, config, field, expected):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    assert getattr(from_hf_config(path), field) == expected


def test_null_is_not_the_library_default(tmp_path):
    """DeepseekV2Config.q_lora_rank = 1536, but a file's null is a plain query projection (DeepSeek-V2-Lite)."""
    lite = json.loads((PUBLISHED / "deepseek-v2-lite.json").read_text())
    assert lite["q_lora_rank"] is None
    path = tmp_path / "config.json"
    path.write_text(json.dumps(lite))
    assert from_hf_config(path).q_lora == 0
    path.write_text(json.dumps({k: v for k, v in lite.items() if k != "q_lora_rank"}))
    assert from_hf_config(path).q_lora == 1536


@pytest.mark.parametrize(
    "name, extra, change",
    [
        ("qwen2-7b", {"use_mrope": False}, 0),  # Qwen2.5-3B/-7B carry it: multimodal RoPE off
        ("llama3.2-1b", {"is_llama_config": True, "rope_interleaved": False}, 0),  # SmolLM2's conversion keys
        ("llama3.2-1b", {"rope_interleaved": False, "partial_rotary_factor": 0.5}, None),  # unknown to llama: refused
        ("qwen3-30b-a3b", {"qkv_bias": False, "use_qk_norm": True, "shared_expert_intermediate_size": 0}, 0),
        (
            "qwen2-57b-a14b",
            {"qkv_bias": False},
            -28 * (28 + 2 * 4) * 128,
        ),  # Qwen2MoeConfig.qkv_bias off: no q,k,v biases
    ],
)
def test_keys_of_published_variants(tmp_path, name, extra, change):
    """Keys published Qwen2.5, SmolLM2, Qwen3-Coder and Qwen2-MoE configs carry: counted (the change they make, 0
    where they say what the family does anyway) or refused (None)."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_without(name) | extra))
    if change is None:
        _refused(path, "'partial_rotary_factor'")
    else:
        base = from_hf_config(PUBLISHED / f"{name}.json").param_count
        assert from_hf_config(path).param_count == base + change


@pytest.mark.parametrize("extra", [{"qkv_bias": True}, {"use_qk_norm": False}, {"shared_expert_intermediate_size": 8}])
def test_variant_keys_at_values_not_modelled_are_refused(tmp_path, extra):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_without("qwen3-30b-a3b") | extra))
    _refused(path, f"key {next(iter(extra))!r}", "not modelled")


def test_cli_one_line_exit_2(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text('{"hidden_size": 4096, "hidden_size": 8192}')
    assert main(["estimate", "--model", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("mem4d estimate: error:") and "twice" in err


def _python_json(config: dict, tmp_path: Path) -> Path:
    """config written as Python's json writes it (allow_nan: Infinity, -Infinity, NaN for float('inf'), ...)."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config, allow_nan=True))
    return path


@pytest.mark.parametrize("key", ["hidden_size", "num_hidden_layers", "vocab_size", "head_dim", "num_key_value_heads"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_python_json_constants_where_a_size_belongs_are_one_line(tmp_path, key, value):
    _refused(_python_json(LLAMA | {key: value}, tmp_path), f"key {key!r} = {json.dumps(value)}", "integer")


@pytest.mark.parametrize(
    "key, value", [("rope_theta", float("inf")), ("rms_norm_eps", float("nan")), ("initializer_range", float("-inf"))]
)
def test_python_json_constants_where_the_class_takes_a_float_are_read(tmp_path, key, value):
    """LlamaConfig's float attributes (rope_theta, rms_norm_eps, initializer_range) allocate nothing: Infinity or NaN
    there leaves Llama-3.1-8B's exact count (SOURCES.md) as it is."""
    assert from_hf_config(_python_json(LLAMA | {key: value}, tmp_path)).param_count == 8_030_261_248


def test_an_alias_is_read_as_the_attribute_it_names(tmp_path):
    """GPT2Config's attribute_map: max_position_embeddings is n_positions, the learned positions' length (2048 - 1024
    more rows of n_embd 768 than GPT-2 small's 124,439,808, SOURCES.md); given both, they must agree."""
    raw = json.loads((PUBLISHED / "gpt2.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(
        json.dumps({k: v for k, v in raw.items() if k != "n_positions"} | {"max_position_embeddings": 2048})
    )
    assert from_hf_config(path).param_count == 124_439_808 + 1024 * 768
    path.write_text(json.dumps(raw | {"max_position_embeddings": 2048}))
    _refused(path, "'max_position_embeddings' (transformers' alias of 'n_positions') disagrees")


@pytest.mark.parametrize(
    "name, key, value, needle",
    [
        ("deepseek-v3", "qk_head_dim", 128, "disagrees with qk_nope_head_dim + qk_rope_head_dim = 192"),
        ("deepseek-v2", "mlp_bias", True, "no MLP biases"),
        ("qwen3-30b-a3b", "num_local_experts", 64, "disagrees with num_experts = 128"),
    ],
)
def test_a_library_attribute_is_read_at_its_modelled_values_only(tmp_path, name, key, value, needle):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(json.loads((PUBLISHED / f"{name}.json").read_text()) | {key: value}))
    _refused(path, f"key {key!r}", needle)


def test_qwen3_moe_reads_its_class_attribute_num_local_experts(tmp_path):
    """Qwen3MoeConfig's attribute is num_local_experts (num_experts its alias): Qwen3-30B-A3B written with it alone
    is the same 30,532,122,624 parameters (SOURCES.md)."""
    raw = json.loads((PUBLISHED / "qwen3-30b-a3b.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps({k: v for k, v in raw.items() if k != "num_experts"} | {"num_local_experts": 128}))
    assert from_hf_config(path).param_count == 30_532_122_624
