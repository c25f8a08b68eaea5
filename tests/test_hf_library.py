"""Each supported family's table is checked against transformers' own configuration class: every attribute of the
class (and every alias of its attribute_map) is modelled, harmless with its one-line reason, read at checked values
(refused by name at any other), or an alias read as the attribute it names. A transformers version that adds an
attribute fails here, not in a user's run.

Source of truth: transformers' configuration classes, the version pinned in pyproject.toml's test extra (5.25.0,
the one symbolic/config/families/defaults.py cites); each class is instantiated with its defaults (no torch needed).
"""
import json
from pathlib import Path

import pytest

from symbolic.config.errors import ConfigError
from symbolic.config.families import FAMILIES
from symbolic.config.families.aliases import ALIASES
from symbolic.config.families.defaults import DEFAULTS
from symbolic.config.hfkeys import HARMLESS_VALUES, ONLY, WHY_HARMLESS

# families read from remote code (the checkpoint's own modeling files): transformers has no class for them
REMOTE = {"mimo": "XiaomiMiMo's MiMo (remote code)", "deepseek": "DeepSeekMoE (remote code)",
          "kimi_k2": "Kimi K2 (remote code; transformers reads its text model as deepseek_v3)"}
WITH_CLASS = [kind for kind in FAMILIES if kind not in REMOTE]


@pytest.fixture(scope="module")
def transformers():
    """transformers, imported when a test here runs (not when pytest-xdist's other worker only collects the file)."""
    return pytest.importorskip("transformers", reason="transformers (the test extra) is not installed")


@pytest.fixture(scope="module")
def classes(transformers) -> dict:
    """model_type -> transformers' configuration class."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    return CONFIG_MAPPING


def _unclassified(kind: str, classes) -> list[str]:
    family = FAMILIES[kind]
    classes = set(classes[kind]().to_dict()) | set(classes[kind].attribute_map)
    return sorted(key for key in classes if key not in family.keys and key not in WHY_HARMLESS and key not in ONLY
                  and key not in (family.values or {}) and key not in ALIASES.get(kind, {}))


def test_the_pinned_transformers_is_the_one_the_tables_cite(transformers):
    assert transformers.__version__ == "5.25.0", "defaults.py, aliases.py and storage.py cite transformers 5.25.0"


@pytest.mark.parametrize("kind", WITH_CLASS)
def test_every_attribute_of_the_library_class_is_classified(kind, classes):
    assert _unclassified(kind, classes) == []


@pytest.mark.parametrize("kind", WITH_CLASS)
def test_the_aliases_are_the_library_classes(kind, classes):
    assert ALIASES.get(kind, {}) == dict(classes[kind].attribute_map)


# defaults.py's entries that stand for what the class's model does rather than an attribute (its comments say why):
# DeepSeek-V3's, V3.2's and GLM-5's routers always score with a sigmoid and hold the score-correction bias; a nested
# text model's head is tied by the outer class (families/multimodal.py)
STAND_INS = {(kind, key) for kind in ("deepseek_v3", "deepseek_v32", "glm_moe_dsa") for key in ("scoring_func",
                                                                                                 "topk_method")} | {
    ("qwen3_vl_text", "tie_word_embeddings")}


@pytest.mark.parametrize("kind", sorted(DEFAULTS))
def test_the_defaults_are_the_library_classes(kind, classes):
    """defaults.py's table is each class's attribute default (transformers' own value for a key a file leaves out;
    an alias read through the class's attribute_map)."""
    config = classes[kind]()
    saved = config.to_dict()  # Gemma 4's per-layer attributes (head_dim) are read from it: getattr refuses them
    table = {key: value for key, value in DEFAULTS[kind].items() if (kind, key) not in STAND_INS}
    assert {key: saved[key] if key in saved else getattr(config, key, None) for key in table} == table


def test_the_remote_code_families_have_no_library_class(classes):
    assert [kind for kind in REMOTE if kind in classes] == []


def test_every_harmless_key_has_its_reason():
    assert all(isinstance(why, str) and why and "\n" not in why for why in WHY_HARMLESS.values())
    assert set(HARMLESS_VALUES) <= set(WHY_HARMLESS)


# a multimodal wrapper's keys the reader refuses by name (hfconfig._tower): the outer class's encoder-decoder flag
WRAPPER_REFUSED = {"is_encoder_decoder"}
SCOUT = Path(__file__).resolve().parent.parent / "grids" / "models" / "published" / "llama4-scout-17b-16e-text-config.json"


def test_every_attribute_of_llama4s_vision_config_is_classified(classes):
    """Llama4VisionConfig's attributes (and attribute_map): modelled (a size, the pixel shuffle), harmless with its
    reason, or read at the one value transformers builds (refused at any other)."""
    from symbolic.config import vision_llama4 as tower

    config = classes["llama4"].sub_configs["vision_config"]
    keys = set(config().to_dict()) | set(config.attribute_map)
    known = {*tower.SIZES, "pixel_shuffle_ratio", *tower.HARMLESS, *tower.AT, *WHY_HARMLESS}
    assert sorted(keys - known) == [] and all(why and "\n" not in why for why in tower.HARMLESS.values())
    assert {key: getattr(config(), key) for key in tower.SIZES} == tower.SIZES  # the class's defaults
    assert (config().pixel_shuffle_ratio, classes["llama4"].sub_configs["text_config"]().hidden_size) == (
        tower.RATIO, tower.TEXT_WIDTH)


def test_every_attribute_of_the_llama4_wrapper_is_classified(classes, tmp_path):
    """Llama4Config's own attributes: the wrapper's keys, harmless, or refused by name (read in one line)."""
    from symbolic.config.hfconfig import WRAPPER_KEYS, read

    config = classes["llama4"]
    keys = set(config().to_dict()) | set(config.attribute_map)
    assert sorted(keys - {*WRAPPER_KEYS, *WHY_HARMLESS, *WRAPPER_REFUSED}) == []
    for key in WRAPPER_REFUSED:
        (tmp_path / "config.json").write_text(json.dumps(json.loads(SCOUT.read_text()) | {key: False}))
        with pytest.raises(ConfigError, match=f"key '{key}'"):
            read(tmp_path / "config.json")
