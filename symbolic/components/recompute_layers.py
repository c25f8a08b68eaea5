"""Megatron-Core's full recompute of some layers (--recompute-granularity full --recompute-method uniform|block
--recompute-num-layers N; megatron-core 0.16.1 transformer/transformer_block.py _checkpointed_forward): uniform
checkpoints chunks of N consecutive layers, each keeping its input alone and recomputing its N layers together in
backward; block checkpoints the first N layers of the stage one at a time and runs the rest as usual, keeping all
their tensors. N = 1 uniform is mem4d's plain full recompute (Switches.rc_layers 0)."""

from __future__ import annotations

from dataclasses import replace

import sympy as sp

from ..config.switches import Switches


def held_layers(sw: Switches, layers: sp.Expr, layer_activation) -> sp.Expr:
    """Bytes one micro batch's `layers` keep under --recompute-num-layers N: uniform, ceil(layers / N) chunk inputs;
    block, N layer inputs and every tensor of the other layers (`layer_activation(sw)`: a layer's bytes)."""
    n = sw.rc_layers
    kept = layer_activation(sw)  # under full recompute: the layer input alone
    if not sw.rc_block:
        return sp.ceiling(layers / n) * kept
    every = layer_activation(replace(sw, recompute="none", rc_layers=0, rc_block=False))
    checkpointed = sp.Min(n, layers)
    return checkpointed * kept + (layers - checkpointed) * every


def working_layers(sw: Switches, layers: sp.Expr) -> sp.Expr:
    """Layers whose tensors a recompute holds at once beside what the micro batches keep: uniform, a chunk of N
    (fewer if the stage has fewer); block, one where every layer is checkpointed, else none (by the backward of a
    checkpointed layer its micro batch has freed the other layers, which held more)."""
    n = sw.rc_layers
    if not sw.rc_block:
        return sp.Min(n, layers)
    return sp.Piecewise((0, layers > n), (1, True))
