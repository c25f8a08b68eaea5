"""The shared configs: presets against published parameter counts, divisibility rules, config.json loading."""

import pytest

from model_files import read, write

from symbolic.config.errors import ConfigError
from symbolic.config.hfconfig import from_hf_config, resolve_model
from symbolic.config.shapes import PRESETS
from symbolic.config.training import Training

# Source of truth: the parameter counts Meta publishes / HF safetensors metadata reports (exact).
PUBLISHED = {
    "llama2-7b": 6_738_415_616,
    "llama2-13b": 13_015_864_320,
    "llama2-70b": 68_976_648_192,
    "llama3-8b": 8_030_261_248,
    "llama3-70b": 70_553_706_496,
    "llama3.1-405b": 405_853_388_800,
}


@pytest.mark.parametrize("name", PUBLISHED)
def test_preset_param_count_matches_published(name):
    assert PRESETS[name].param_count == PUBLISHED[name]


def test_tiny_is_a_few_million_and_divisible_by_four():
    tiny = PRESETS["tiny"]
    assert 1e6 < tiny.param_count < 2e7
    assert tiny.a % 4 == tiny.k % 4 == tiny.L % 4 == 0
    assert len({tiny.h, tiny.f, tiny.a, tiny.k, tiny.L, tiny.v}) == 6


def test_hf_config_roundtrip(tmp_path):
    cfg = {
        "model_type": "llama",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "num_hidden_layers": 32,
        "vocab_size": 128256,
        "tie_word_embeddings": False,
    }
    shape = read(tmp_path, cfg)
    assert shape.param_count == PUBLISHED["llama3-8b"]
    assert resolve_model(str(tmp_path)).param_count == PUBLISHED["llama3-8b"]


def test_hf_config_kv_heads_default_to_heads(tmp_path):
    cfg = {
        "model_type": "llama",
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_attention_heads": 4,
        "num_hidden_layers": 2,
        "vocab_size": 100,
    }
    assert from_hf_config(write(tmp_path, cfg, "c.json")).k == 4


@pytest.mark.parametrize(
    "content, needle",
    [
        ("{not json", "malformed JSON"),
        ('{"model_type": "kimi_k2", "hidden_size": 64}', "missing key"),
        ('{"model_type": "llama", "hidden_size": -1}', "hidden_size"),
        ('{"hidden_size": 64}', "no 'model_type' key: mem4d reads a config by its architecture and does not guess"),
        ("[]", "object"),
    ],
)
def test_hf_config_errors_name_file_and_key(tmp_path, content, needle):
    path = tmp_path / "config.json"
    path.write_text(content)
    with pytest.raises(ConfigError, match=needle) as err:
        from_hf_config(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_unknown_preset_lists_presets():
    with pytest.raises(ConfigError, match="llama3-70b"):
        resolve_model("llama9")


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        (dict(t=3, s=3 * 4096), "attention heads"),
        (dict(p=3), "layers"),
        (dict(p=4, vpp=3), "layers"),
        (dict(d=3, gbs=16), "global batch"),
        (dict(c=3, s=4096), "context"),
        (dict(d=0), "--dp"),
    ],
)
def test_divisibility_rules(kwargs, needle):
    with pytest.raises(ConfigError, match=needle):
        Training(**kwargs).check(PRESETS["llama3-8b"])


def test_micro_batches():
    tr = Training(d=8, b=2, gbs=1024)
    assert tr.m == 64 and tr.global_batch == 1024


def test_glossary_symbols_carry_their_own_names():
    """symbols.py unpacks the glossary's letter groups in order: every symbol is named as the Python name it is bound
    to, and the estimator's input order (glossary.NAMES) is the symbols' order (exact)."""
    from symbolic.config import glossary, symbols

    for name in glossary.NAMES:
        assert getattr(symbols, name).name == name
    assert tuple(sym.name for sym in symbols.ALL) == glossary.NAMES
    assert set(glossary.MEANING) == set(glossary.NAMES) | set(glossary.STAGE) and len(glossary.NAMES) == 59
    assert set(glossary.STAGE_NAMES) < set(glossary.STAGE) and all(
        getattr(symbols, n).name == n for n in glossary.STAGE
    )


def test_training_fields_named_by_their_flags_map_onto_the_glossary_letters():
    """ep, etp, moe_capacity and ac_every keep their flags' names; glossary.TRAINING_FIELD makes them e, t_e, C_f and
    n_ac (t_e = t where etp is not given, n_ac = 1 where ac_every is not). Source of truth: Training's own docstring's
    mapping; exact."""
    from symbolic.config.glossary import inputs_for

    shape = PRESETS["tiny-moe"]
    given = inputs_for(shape, Training(t=2, ep=2, etp=1, moe_capacity=1.5, ac_every=3, s=256))
    assert (given["e"], given["t_e"], given["C_f"], given["n_ac"]) == (2, 1, 1.5, 3)
    default = inputs_for(shape, Training(t=2, s=256))
    assert (default["e"], default["t_e"], default["C_f"], default["n_ac"]) == (1, 2, 1.0, 1)
