"""The registry of recipes: the one place that lists them. Importing it is cheap (no sympy) and registers each
recipe's rows into the one rule table (config.rules)."""
from __future__ import annotations

import importlib
from types import ModuleType

import numpy as np

from ..config import rules
from ..config.errors import ConfigError
from . import deepspeed, jax, megatron, torchtitan
from .base import Profile, Recipe

# adding a recipe: a folder symbolic/recipes/<name>/ (its __init__'s RECIPE, rules.py, profile.py) and a line here
REGISTRY: tuple[Recipe, ...] = (megatron.RECIPE, torchtitan.RECIPE, deepspeed.RECIPE, jax.RECIPE)

PROFILES: dict[str, Recipe] = {recipe.name: recipe for recipe in REGISTRY}  # --profile NAME -> its recipe
RECIPES: dict[str, str] = {recipe.flag: recipe.name for recipe in REGISTRY if recipe.flag}  # --recipe NAME -> profile

_LLAMA_ONLY = " and ".join(recipe.flag for recipe in REGISTRY if "recipes" in recipe.groups)
# the groups' rows: what the recipes that join "recipes" (every trainer but Megatron) or "no-fp8" do not model
GROUP_RULES: tuple[rules.Rule, ...] = (
    rules.Rule("recipes: GQA attention", lambda x: np.logical_not(x.mla),
               lambda x: (f"{x.model} has multi-head latent attention: the {_LLAMA_ONLY} recipes model GQA attention "
                          f"(use --recipe megatron)"), scope="recipes", model=True),
    # the "no-fp8" group: the profiles that model no FP8 (DeepSpeed, jaxcheck)
    rules.Rule("--fp8: Megatron and torchtitan only", lambda x: (x.fp8 == "none") & np.logical_not(x.fp8_param_gather),
               lambda x: (f"--fp8 {x.fp8} is Megatron-LM's Transformer Engine FP8 (--recipe megatron) or torchao's "
                          f"Float8 (--recipe torchtitan); DeepSpeed's and jaxcheck's FP8 are not modelled"),
               scope="no-fp8"),
)
for _recipe in REGISTRY:
    rules.register(_recipe.name, _recipe.rules, _recipe.groups)
rules.register("recipes", GROUP_RULES)


def get(name: str) -> Recipe:
    """The recipe of a profile name; an unknown name is a one-line ConfigError listing the known ones."""
    if name not in PROFILES:
        raise ConfigError(f"unknown profile {name!r} (choose from {', '.join(PROFILES)})")
    return PROFILES[name]


def load(name: str) -> ModuleType:
    """The profile module (a base.Profile) of a profile name."""
    return importlib.import_module(get(name).module)


def widths(name: str) -> dict:
    """The precision choices (Training's config.precision fields) a profile models by default."""
    return dict(get(name).precision)


__all__ = ["REGISTRY", "PROFILES", "RECIPES", "GROUP_RULES", "Profile", "Recipe", "get", "load", "widths"]
