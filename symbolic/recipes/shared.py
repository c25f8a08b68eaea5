"""The Profile functions most recipes share: Megatron-LM's layer tensors, the 1F1B in-flight count, and one stage's
GPU at the contract's defaults."""

from __future__ import annotations

from typing import Callable

import sympy as sp

from ..components import RANK, Component
from ..components import in_flight as _in_flight
from ..components import layer_tensors as _layer_tensors
from ..components.weights import default_layers
from ..config.switches import Switches


def layer_tensors(sw: Switches) -> list:
    """The activation tensors one dense Llama layer keeps for one micro batch (Megatron-LM's layer)."""
    return _layer_tensors(sw)


def in_flight(rank: sp.Expr, sw=None) -> sp.Expr:
    """Micro batches of a whole stage that pipeline rank `rank` holds at its peak under 1F1B (min(m, p - r), or the
    interleaved schedule's count)."""
    return _in_flight(rank)


def stage_components(parts: Callable, sw: Switches, stage: str, layers=None, micro=None, moe_layers=None, head=None):
    """One GPU of a pipeline stage as a recipe's `parts(stage, sw, layers, moe_layers, micro, head)` lists it, at the
    defaults where none are given: L/p layers (L_e/p of them MoE), the 1F1B in-flight count of the stage's
    representative rank (RANK), the output layer and loss on the last (or only) stage."""
    default = default_layers(stage)
    return parts(
        stage,
        sw,
        default[0] if layers is None else layers,
        default[1] if moe_layers is None else moe_layers,
        _in_flight(RANK[stage]) if micro is None else micro,
        stage in ("last", "only") if head is None else head,
    )


def absent(name: str):
    """A part a stage does not hold (the embedding's input off the first stage, the head off the last)."""
    return Component(name, sp.Integer(0), "not on this stage")
