"""The contract of a recipe: what a trainer's (or jaxcheck's) accounting declares, and the profile it computes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from ..config.rules import Rule


class Profile(Protocol):
    """What a recipe's `profile` module provides (sympy expressions of a Switches; symbolic/recipes/shared.py has the
    defaults most recipes take)."""

    TITLE: str  # one line: whose accounting this is
    DESCRIPTION: str  # one paragraph: what it holds and where each assumption comes from

    def components(self, sw) -> list:
        """The most loaded GPU's breakdown (Components) whose sum is its "total"."""

    def stage_components(self, sw, stage: str, layers=None, micro=None, moe_layers=None) -> list:
        """One GPU of a pipeline stage (config.stages.STAGES) holding `layers` layers (L/p by default), `micro`
        in-flight micro batches and `moe_layers` MoE layers."""

    def layer_tensors(self, sw) -> list:
        """The activation tensors one layer keeps for one micro batch."""

    def in_flight(self, rank, sw=None):
        """Micro batches pipeline rank `rank` holds at its peak."""


@dataclass(frozen=True)
class Recipe:
    """One trainer's accounting (or jaxcheck's step): its names, precision, CLI defaults and what it refuses.

    Cheap to import (no sympy): the expressions are in the package's `profile` module, loaded on first use."""

    name: str  # the profile's name (--profile; the estimator's and the cache's key)
    package: str  # its folder under symbolic/recipes/
    flag: str | None = None  # --recipe NAME for a trainer; None: a profile only (jax)
    total_column: str = "most loaded GPU"  # what its "total" is the memory of (a table's column)
    precision: dict = field(default_factory=dict)  # the precision choices it models by default (Training's fields)
    defaults: dict = field(default_factory=dict)  # --zero / --recompute where its trainer's defaults differ
    rules: tuple[Rule, ...] = ()  # what it refuses: its rows of the one rule table (config.rules)
    groups: tuple[
        str, ...
    ] = ()  # rule groups it joins ("recipes": the registry's GROUP_RULES bind it too; "no-fp8"; "gdn": the Gated DeltaNet rows)

    @property
    def module(self) -> str:
        """The dotted name of its profile module (a Profile)."""
        return f"symbolic.recipes.{self.package}.profile"
