"""The Profile functions most recipes share: Megatron-LM's layer tensors and the 1F1B in-flight count."""

from __future__ import annotations

import sympy as sp

from ..components import in_flight as _in_flight
from ..components import layer_tensors as _layer_tensors
from ..config.switches import Switches


def layer_tensors(sw: Switches) -> list:
    """The activation tensors one dense Llama layer keeps for one micro batch (Megatron-LM's layer)."""
    return _layer_tensors(sw)


def in_flight(rank: sp.Expr, sw=None) -> sp.Expr:
    """Micro batches of a whole stage that pipeline rank `rank` holds at its peak under 1F1B (min(m, p - r), or the
    interleaved schedule's count)."""
    return _in_flight(rank)
