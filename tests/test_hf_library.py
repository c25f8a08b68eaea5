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

from symbolic.config import vision
from symbolic.config.errors import ConfigError
from symbolic.config.families import FAMILIES
from symbolic.config.families.aliases import ALIASES
from symbolic.config.families.defaults import DEFAULTS
from symbolic.config.hfkeys import HARMLESS_VALUES, ONLY, WHY_HARMLESS

# families read from remote code (the checkpoint's own modeling files): transformers has no class for them
REMOTE = {
    "mimo": "XiaomiMiMo's MiMo (remote code)",
    "deepseek": "DeepSeekMoE (remote code)",
    "kimi_k2": "Kimi K2 (remote code; transformers reads its text model as deepseek_v3)",
    "nemotron-nas": "Llama-Nemotron NAS (DeciLM remote code)",
}
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
    return sorted(
        key
        for key in classes
        if key not in family.keys
        and key not in WHY_HARMLESS
        and key not in ONLY
        and key not in (family.values or {})
        and key not in ALIASES.get(kind, {})
    )


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
STAND_INS = {
    (kind, key) for kind in ("deepseek_v3", "deepseek_v32", "glm_moe_dsa") for key in ("scoring_func", "topk_method")
} | {("qwen3_vl_text", "tie_word_embeddings")}


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
ROOT = Path(__file__).resolve().parent.parent
SCOUT = ROOT / "grids" / "models" / "published" / "llama4-scout-17b-16e-text-config.json"
SHARED = ROOT.parent / "shared" / "data" / "configs"


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
        tower.RATIO,
        tower.TEXT_WIDTH,
    )


@pytest.mark.parametrize("wrapper", list(vision.DEEPSTACK))
def test_every_attribute_of_a_qwen_vision_config_is_classified(wrapper, classes):
    """Qwen3VLVisionConfig, Qwen3VLMoeVisionConfig, Qwen3_5VisionConfig, Qwen3_5MoeVisionConfig: each attribute a size
    (the class's defaults are config.vision's), the GeLU, the deepstack indexes (Qwen3-VL's), an alias of a size,
    harmless, or read at the one value transformers builds."""
    config = classes[wrapper].sub_configs["vision_config"]
    keys = set(config().to_dict()) | set(config.attribute_map)
    deepstack = {"deepstack_visual_indexes"} if vision.DEEPSTACK[wrapper] else set()
    known = {*vision.DEFAULTS, "hidden_act", *deepstack, *vision.ALIASES, *vision.HARMLESS, *vision.AT, *WHY_HARMLESS}
    assert sorted(keys - known) == [] and dict(config.attribute_map) == vision.ALIASES
    assert {key: getattr(config(), key) for key in vision.DEFAULTS} == vision.DEFAULTS
    assert list(getattr(config(), "deepstack_visual_indexes", [])) == (vision.DEEPSTACK_INDEXES if deepstack else [])
    assert config().hidden_act in vision.ACTS and all(
        getattr(config(), key) == value for key, value in vision.AT.items()
    )


def _classified_tower(classes, wrapper: str, tower, acts) -> type:
    """The wrapper's vision_config class, of the model_type mem4d reads, each of whose keys the tower module lists (a
    size, the activation, harmless or read at one value), its sizes' defaults the module's and its activation one of
    acts."""
    assert classes[wrapper].sub_configs_defaults["vision_config"].model_type == vision.KIND[wrapper]
    config = classes[vision.KIND[wrapper]]
    keys = set(config().to_dict()) | set(config.attribute_map)
    known = {*tower.SIZES, "hidden_act", *tower.HARMLESS, *tower.AT, *WHY_HARMLESS}
    assert sorted(keys - known) == [] and all(why and "\n" not in why for why in tower.HARMLESS.values())
    assert {key: getattr(config(), key) for key in tower.SIZES} == tower.SIZES and config().hidden_act in acts
    return config


def test_every_attribute_of_gemma3s_vision_config_is_classified(classes):
    """SiglipVisionConfig (Gemma3Config's vision_config, an AutoConfig of model_type siglip_vision_model): a size (the
    class's defaults are config.vision_gemma3's), the GeLU, harmless, or read at the one value modelled (refused at
    any other; vision_use_head's class default, true, is refused too)."""
    from symbolic.config import vision_gemma3 as tower

    config = _classified_tower(classes, "gemma3", tower, vision.ACTS)
    assert {key: getattr(config(), key) for key in tower.AT} == {**tower.AT, "vision_use_head": tower.HEAD}
    wrapper = classes["gemma3"]()
    assert (wrapper.mm_tokens_per_image, wrapper.text_config.hidden_size) == (tower.TOKENS, tower.TEXT_WIDTH)


def test_every_attribute_of_mistral3s_vision_config_is_classified(classes):
    """PixtralVisionConfig (Mistral3Config's vision_config, an AutoConfig of model_type pixtral): a size (the class's
    defaults are config.vision_pixtral's), the gated MLP's activation, harmless, or read at the one value modelled;
    the wrapper's projector defaults are the reader's."""
    from symbolic.config import vision_pixtral as tower

    config = _classified_tower(classes, "mistral3", tower, tower.ACTS)
    assert {key: getattr(config(), key) for key in tower.AT} == tower.AT
    wrapper = classes["mistral3"]()
    assert (
        wrapper.spatial_merge_size,
        wrapper.multimodal_projector_bias,
        wrapper.projector_hidden_act,
        wrapper.vision_feature_layer,
    ) == (tower.MERGE, False, tower.PROJECTOR_ACTS[0], -1)
    assert classes["mistral"]().hidden_size == tower.TEXT_WIDTH


@pytest.mark.parametrize("wrapper", vision.TOWERS)
def test_every_attribute_of_a_wrapper_is_classified(wrapper, classes):
    """Qwen3VLConfig, Qwen3VLMoeConfig, Qwen3_5Config, Qwen3_5MoeConfig, Llama4Config, ...: the wrapper's own
    attributes are its two configs, the head's tie and the special tokens' ids (hfconfig.WRAPPER_KEYS), a key its
    tower reads (vision.OWN), harmless, or refused by name."""
    from symbolic.config.hfconfig import WRAPPER_KEYS

    config = classes[wrapper]
    keys = set(config().to_dict()) | set(config.attribute_map)
    assert sorted(keys - {*WRAPPER_KEYS, *vision.OWN.get(wrapper, ()), *WHY_HARMLESS, *WRAPPER_REFUSED}) == []


QWEN_VL = SHARED / "qwen3-vl-32b-instruct.json"


@pytest.mark.parametrize("path", [SCOUT, QWEN_VL], ids=["llama4", "qwen3_vl"])
@pytest.mark.parametrize("key", sorted(WRAPPER_REFUSED))
def test_a_wrapper_key_mem4d_does_not_model_is_refused_by_name(path, key, tmp_path):
    from symbolic.config.hfconfig import read

    if not path.is_file():
        pytest.skip(f"{path} (reference data) is absent")
    (tmp_path / "config.json").write_text(json.dumps(json.loads(path.read_text()) | {key: False}))
    with pytest.raises(ConfigError, match=f"key '{key}'"):
        read(tmp_path / "config.json")
