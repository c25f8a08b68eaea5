"""The registry of recipes: the one place that lists them, and the one rule table their rows make (no sympy).

Nothing is registered as a side effect of an import: the list below names each recipe package, and the table is a
value computed from it (the shared rows of config.shared_rules, each recipe's rows in this order, then the groups' rows)."""

from __future__ import annotations

import numpy as np

from ..config import rules
from ..config.shared_rules import SHARED
from ..config.errors import ConfigError
from . import deepspeed, jax, megatron, torchtitan
from .base import Recipe

# adding a recipe: a folder symbolic/recipes/<name>/ (its __init__'s RECIPE, rules.py, profile.py) and a line here
REGISTRY: tuple[Recipe, ...] = (megatron.RECIPE, torchtitan.RECIPE, deepspeed.RECIPE, jax.RECIPE)

PROFILES: dict[str, Recipe] = {recipe.name: recipe for recipe in REGISTRY}  # --profile NAME -> its recipe
RECIPES: dict[str, str] = {recipe.flag: recipe.name for recipe in REGISTRY if recipe.flag}  # --recipe NAME -> profile
DEFAULT_PROFILE = megatron.RECIPE.name  # the profile when none is named: Megatron-LM as the paper models it
JAX_PROFILE = jax.RECIPE.name  # jaxcheck's compiled step: the profile its own checks and verify read

_LLAMA_ONLY = " and ".join(recipe.flag for recipe in REGISTRY if "recipes" in recipe.groups)
# the groups' rows: what the recipes that join "recipes" (every trainer but Megatron) or "no-fp8" do not model
GROUP_RULES: tuple[rules.Rule, ...] = (
    rules.Rule(
        "recipes: GQA attention",
        lambda x: np.logical_not(x.mla),
        lambda x: (
            f"{x.model} has multi-head latent attention: the {_LLAMA_ONLY} recipes model GQA attention "
            f"(use --recipe megatron)"
        ),
        scope="recipes",
        model=True,
    ),
    # the "no-fp8" group: the profiles that model no FP8 (DeepSpeed, jaxcheck)
    rules.Rule(
        "--fp8: Megatron and torchtitan only",
        lambda x: (x.fp8 == "none") & np.logical_not(x.fp8_param_gather),
        lambda x: (
            f"--fp8 {x.fp8} is Megatron-LM's Transformer Engine FP8 (--recipe megatron) or torchao's "
            f"Float8 (--recipe torchtitan); DeepSpeed's and jaxcheck's FP8 are not modelled"
        ),
        scope="no-fp8",
    ),
    # the "no-tp-overlap" group (DeepSpeed, jaxcheck): torchtitan reads --tp-comm-overlap as its async TP
    # (parallelism.enable_async_tensor_parallel: recipes/torchtitan/pipeline.py)
    rules.Rule(
        "--tp-comm-overlap: Megatron only",
        lambda x: np.logical_not(getattr(x, "tp_comm_overlap", False)),
        lambda x: (
            "--tp-comm-overlap is Megatron-LM's Transformer Engine userbuffers (--recipe megatron) or "
            "torchtitan's async TP (--recipe torchtitan)"
        ),
        scope="no-tp-overlap",
    ),
)


def _unique(table: tuple[rules.Rule, ...]) -> tuple[rules.Rule, ...]:
    """The table, its rule names checked unique (a row declared twice is a ValueError at import)."""
    names = [rule.name for rule in table]
    clash = [name for name in names if names.count(name) > 1]
    if clash:
        raise ValueError(f"rule {clash[0]!r} declared twice")
    return table


# the one table: the shared rows, then each recipe's in the registry's order, then the groups'
TABLE = _unique(SHARED + tuple(row for recipe in REGISTRY for row in recipe.rules) + GROUP_RULES)
_GROUPS: dict[str, tuple[str, ...]] = {recipe.name: recipe.groups for recipe in REGISTRY}  # a profile -> its groups


def select(scope: str = "all", model: bool | None = None, policy: bool | None = None) -> tuple[rules.Rule, ...]:
    """The rules that bind `scope` (those of every profile, plus the scope's own), in table order; `model` keeps only
    the rules that read (True) or do not read (False) the model, `policy` those that read only recompute and zero."""
    scopes = ("all", scope) + _GROUPS.get(scope, ())
    # "!name" binds each profile but name (not "all": what every profile checks when a Training is built)
    binds = lambda rule: rule.scope in scopes or rule.scope[:1] == "!" and scope not in ("all", rule.scope[1:])  # noqa: E731
    return tuple(
        rule for rule in TABLE if binds(rule) and model in (None, rule.model) and policy in (None, rule.policy)
    )


def get(name: str) -> Recipe:
    """The recipe of a profile name; an unknown name is a one-line ConfigError listing the known ones."""
    if name not in PROFILES:
        raise ConfigError(f"unknown profile {name!r} (choose from {', '.join(PROFILES)})")
    return PROFILES[name]


def widths(name: str) -> dict:
    """The precision choices (Training's config.precision fields) a profile models by default."""
    return dict(get(name).precision)
