"""Each supported family's table is checked against transformers' own configuration class: every attribute of the
class (and every alias of its attribute_map) is modelled, harmless with its one-line reason, read at checked values
(refused by name at any other), or an alias read as the attribute it names. A transformers version that adds an
attribute fails here, not in a user's run.

Source of truth: transformers' configuration classes, the version pinned in pyproject.toml's test extra (5.25.0,
the one symbolic/config/families/defaults.py cites); each class is instantiated with its defaults (no torch needed).
"""
import pytest

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
    table = {key: value for key, value in DEFAULTS[kind].items() if (kind, key) not in STAND_INS}
    assert {key: getattr(config, key, None) for key in table} == table


def test_the_remote_code_families_have_no_library_class(classes):
    assert [kind for kind in REMOTE if kind in classes] == []


def test_every_harmless_key_has_its_reason():
    assert all(isinstance(why, str) and why and "\n" not in why for why in WHY_HARMLESS.values())
    assert set(HARMLESS_VALUES) <= set(WHY_HARMLESS)
