"""Memory profiles: named sets of component expressions. Importing this package is cheap (no sympy)."""
from __future__ import annotations

import importlib
from types import ModuleType

from ..config.dtypes import WIDTHS
from ..config.errors import ConfigError

# profile name -> module implementing it
PROFILES: dict[str, str] = {
    "paper": "symbolic.profiles.paper",
    "jax": "symbolic.profiles.jax",
}
# what each profile's "total" is the memory of (a table's column)
TOTAL_COLUMN: dict[str, str] = {"paper": "most loaded GPU", "jax": "each device (SPMD)"}


def widths(name: str) -> dict[str, int]:
    """The byte widths (Training.weight_bytes, grad_bytes, opt_bytes, act_bytes) a profile models."""
    if name not in PROFILES:
        raise ConfigError(f"unknown profile {name!r} (choose from {', '.join(PROFILES)})")
    return dict(WIDTHS[name])


def load(name: str) -> ModuleType:
    """The module of a profile; an unknown name is a one-line ConfigError listing the known ones.

    A profile module provides TITLE, DESCRIPTION (one paragraph), `components(sw)` (the breakdown of the most loaded
    GPU whose sum is "total"), `stage_components(sw, stage)` for each of STAGES, and `layer_tensors(sw)`."""
    if name not in PROFILES:
        raise ConfigError(f"unknown profile {name!r} (choose from {', '.join(PROFILES)})")
    return importlib.import_module(PROFILES[name])
