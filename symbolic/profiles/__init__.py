"""Memory profiles: named sets of component expressions. Importing this package is cheap (no sympy)."""
from __future__ import annotations

import importlib
from types import ModuleType

from ..config.dtypes import WIDTHS
from ..config.errors import ConfigError

# profile name -> module implementing it
PROFILES: dict[str, str] = {
    "paper": "symbolic.profiles.paper",
    "torchtitan": "symbolic.profiles.torchtitan",
    "deepspeed": "symbolic.profiles.deepspeed",
    "jax": "symbolic.profiles.jax",
}
# what each profile's "total" is the memory of (a table's column)
TOTAL_COLUMN: dict[str, str] = {"paper": "most loaded GPU", "torchtitan": "most loaded GPU",
                                "deepspeed": "most loaded GPU", "jax": "each device (SPMD)"}
# --recipe NAME: the trainer whose accounting a profile is (megatron: the paper's, Fujii et al. 2024)
RECIPES: dict[str, str] = {"megatron": "paper", "torchtitan": "torchtitan", "deepspeed": "deepspeed"}
# the recipes' default precision: torchtitan config_manager.py (mixed_precision_param bf16, mixed_precision_reduce
# fp32: FSDP2 keeps fp32 shards, no separate master) and AdamW; DeepSpeed's bf16 (bf16_master_weights_and_grads off:
# fp32 master, grad_accum_dtype None: bf16 gradients) and Adam; the others in config.dtypes.WIDTHS
_RECIPE_PRECISION = {
    "torchtitan": {"weight_dtype": "fp32", "grad_dtype": "fp32", "master_weights": False, "optimizer": "adamw",
                   "moment_dtype": "fp32", "act_dtype": "bf16", "logits": "fp32"},
    "deepspeed": {"weight_dtype": "bf16", "grad_dtype": "bf16", "master_weights": True, "optimizer": "adamw",
                  "moment_dtype": "fp32", "act_dtype": "bf16", "logits": "fp32"},
}


def widths(name: str) -> dict:
    """The precision choices (Training's config.precision fields) a profile models by default."""
    if name not in PROFILES:
        raise ConfigError(f"unknown profile {name!r} (choose from {', '.join(PROFILES)})")
    return dict(WIDTHS[name] if name in WIDTHS else _RECIPE_PRECISION[name])


def load(name: str) -> ModuleType:
    """The module of a profile; an unknown name is a one-line ConfigError listing the known ones.

    A profile module provides TITLE, DESCRIPTION (one paragraph), `components(sw)` (the breakdown of the most loaded
    GPU whose sum is "total"), `stage_components(sw, stage)` for each of STAGES, and `layer_tensors(sw)`."""
    if name not in PROFILES:
        raise ConfigError(f"unknown profile {name!r} (choose from {', '.join(PROFILES)})")
    return importlib.import_module(PROFILES[name])
