"""The feature table (symbolic/config/features.py, architecture.py, switches.py): each declaration names only what
exists. Source of truth: the family readers' code (a config.json key a feature names is read there), the glossary
(a letter is one of its letters), ModelShape's attributes and Training's defaults. Exact, no tolerance."""

import pytest

from dataclasses import fields
from pathlib import Path

from symbolic.config.architecture import DERIVED, SWITCHES, Architecture
from symbolic.config.errors import ConfigError
from symbolic.config.features import CHOICES, FEATURES, LETTER, NAME
from symbolic.config.glossary import MEANING
from symbolic.config.shapes import PRESETS, ModelShape
from symbolic.config.switches import Switches
from symbolic.config.training import Training

CONFIG = Path(__file__).resolve().parents[1] / "symbolic" / "config"
READERS = "".join(path.read_text() for path in [*(CONFIG / "families").glob("*.py"), CONFIG / "hfconfig.py"])


def test_a_features_config_keys_are_read_by_a_family_reader():
    unread = [(f.name, key) for f in FEATURES for key in f.metadata["keys"] if f'"{key}"' not in READERS]
    assert not unread
    assert sum(bool(f.metadata["keys"]) for f in FEATURES) >= 40  # the table names them (49 features today)


def test_every_feature_has_a_doc_a_glossary_letter_or_none_and_a_rule_reading_of_one_kind():
    for f in FEATURES:
        assert f.metadata["doc"], f.name
        assert f.metadata["letter"] is None or f.metadata["letter"] in MEANING, f.name
        assert f.metadata["rule"] in (None, NAME, LETTER), f.name
        assert f.metadata["rule"] != LETTER or f.metadata["letter"], f.name


def test_a_switch_without_a_reading_names_a_modelshape_attribute():
    """Architecture.of reads such a switch by name: a switch added with neither fails here, not on the first model."""
    shape = PRESETS["tiny-moe"]
    for f in SWITCHES:
        assert f.metadata["read"] is not None or hasattr(shape, f.name), f.name
    assert set(fields(ModelShape)) == set(FEATURES)


def test_the_training_switches_default_to_the_reading_of_trainings_defaults():
    trained = [f for f in fields(Switches) if "training" in f.metadata]
    assert len(trained) == 31  # c47 added rc_layers, rc_block, fsdp_fp8; n47 bf16_layers; b47 grouped_gemm; h47 sm90
    of_default = Switches.of(Training())
    assert all(getattr(of_default, f.name) == f.default for f in trained)
    assert of_default == Switches()


def test_a_features_switch_is_the_architecture_field_of_its_name_read_unchanged():
    """features.py's `switch=` line is the switch's one declaration: a field of Architecture, read by name, its
    default the feature's (a named choice) or False (a flag, a count, the vision tower)."""
    by_name = {f.name: f for f in SWITCHES}
    declared = [f for f in FEATURES if f.metadata["switch"]]
    assert len(declared) == 23  # f49: the switches of the same name that were a second line of architecture.py
    for f in declared:
        assert f.name in by_name and f.name not in DERIVED, f.name
        assert by_name[f.name].default == (f.default if isinstance(f.default, str) else False), f.name
    for shape in (PRESETS["gpt2"], PRESETS["olmoe-1b-7b"]):
        arch, value = Architecture.of(shape), lambda x: x if isinstance(x, str) else bool(x)
        assert all(getattr(arch, f.name) == value(getattr(shape, f.name)) for f in declared)


@pytest.mark.parametrize("name", sorted(CHOICES))
def test_a_named_choice_is_refused_once_where_it_enters_a_modelshape(name):
    """ModelShape checks qk_norm, mlp and norm (its one message); Architecture takes them as checked."""
    assert set(CHOICES) == {"qk_norm", "mlp", "norm"}
    with pytest.raises(ConfigError, match=rf"^model 'x': {name} must be one of {', '.join(CHOICES[name])}, got 'no'$"):
        ModelShape("x", h=8, f=8, a=2, k=2, L=2, v=8, **{name: "no"})
    assert getattr(Architecture(**{name: "no"}), name) == "no"
