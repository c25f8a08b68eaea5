"""The recipes: one package per trainer's accounting (docs/adding-a-recipe.md). The list of them and the one rule
table are in registry.py; this module adds `load`, which imports a profile's sympy module on first use."""

from __future__ import annotations

import importlib
from types import ModuleType

from .base import Profile, Recipe
from .registry import DEFAULT_PROFILE, GROUP_RULES, JAX_PROFILE, PROFILES, RECIPES, REGISTRY, TABLE, get, select, widths


def load(name: str) -> ModuleType:
    """The profile module (a base.Profile) of a profile name."""
    return importlib.import_module(get(name).module)


__all__ = [
    "REGISTRY",
    "PROFILES",
    "RECIPES",
    "GROUP_RULES",
    "TABLE",
    "DEFAULT_PROFILE",
    "JAX_PROFILE",
    "Profile",
    "Recipe",
    "get",
    "load",
    "select",
    "widths",
]
