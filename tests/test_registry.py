"""The recipe registry: the one list of recipes, each meeting the Recipe and Profile contract (symbolic/recipes/base.py),
and the one table of rule rows made from it (nothing registered by an import).

Source of truth: the contract as base.py states it; exact."""

import importlib

import pytest

from symbolic.config import rules
from symbolic.config.shared_rules import SHARED
from symbolic.config.training import Training
from symbolic.recipes import GROUP_RULES, PROFILES, RECIPES, REGISTRY, TABLE, get, load, registry
from symbolic.recipes.registry import _unique

NAMES = [recipe.name for recipe in REGISTRY]


def test_names_and_flags_are_unique_and_derived_from_the_registry():
    assert len(set(NAMES)) == len(NAMES) == len(PROFILES)
    flags = [recipe.flag for recipe in REGISTRY if recipe.flag]
    assert len(set(flags)) == len(flags) and RECIPES == {recipe.flag: recipe.name for recipe in REGISTRY if recipe.flag}
    assert RECIPES["megatron"] == "paper" and get("jax").flag is None


@pytest.mark.parametrize("name", NAMES)
def test_each_profile_module_meets_the_contract(name):
    module = load(name)
    assert isinstance(module.TITLE, str) and module.TITLE and "\n" not in module.TITLE
    assert isinstance(module.DESCRIPTION, str) and module.DESCRIPTION
    for function in ("components", "stage_components", "layer_tensors", "in_flight"):
        assert callable(getattr(module, function)), f"{name}: no {function}"
    assert get(name).module == module.__name__ == f"symbolic.recipes.{get(name).package}.profile"


@pytest.mark.parametrize("name", NAMES)
def test_each_recipe_declares_a_valid_precision_defaults_and_rows_of_its_own(name):
    recipe = get(name)
    Training(**recipe.precision)  # the precision it models is a Training's (raises a one-line error otherwise)
    assert set(recipe.defaults) <= {"zero", "recompute"}
    Training(**recipe.defaults)
    for rule in recipe.rules:
        assert rule.scope in (name, "!" + name, *recipe.groups) or rule.scope == "recipes", (name, rule.name)


def test_the_one_table_holds_every_row_once_in_registry_order():
    rows = SHARED + tuple(row for recipe in REGISTRY for row in recipe.rules) + GROUP_RULES
    assert [rule.name for rule in TABLE] == [rule.name for rule in rows]
    assert len({rule.name for rule in rows}) == len(rows)
    with pytest.raises(ValueError, match="declared twice"):
        _unique(TABLE + REGISTRY[0].rules[:1])  # a row declared twice is refused


def test_importing_a_recipe_registers_nothing():
    """The table is a value of the registry, not filled by imports: importing every recipe package and profile again
    leaves it as it was, and the shared rows as config.shared_rules declares them."""
    before = TABLE
    for name in NAMES:
        importlib.reload(importlib.import_module(f"symbolic.recipes.{get(name).package}"))
    assert registry.TABLE is before and SHARED == before[: len(SHARED)]
    assert not hasattr(rules, "register") and not hasattr(rules, "select")


def test_an_unknown_profile_is_one_line():
    from symbolic.config.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown profile 'nope'"):
        get("nope")
