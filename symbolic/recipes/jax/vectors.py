"""Per-layer vectors whose only axis is split over t (pure sympy): what ZeRO cannot split over d*c in jaxcheck's
layout (jaxcheck.model.rules). ZeRO-1 adds d*c to the first dimension that has no mesh axis yet and that d*c divides
(zero1_spec): for a stacked vector [p, L/p, width] that is the layer axis, so such vectors stay whole on every rank of
the group unless d*c divides the stack's L/p; an unstacked one (a multi-token-prediction module's) has no such axis.
ZeRO-2/3 split a layer's major dimension from the third on by its per-device size (layer_zero_spec): the vector's
width over t, which d*c must divide. Found where the profile's 1/(d*c) share missed XLA's argument bytes: A_log and
dt_bias in grids/derive-hybrid.toml's ZeRO-1 cases (192 bytes), GPT's fc1 bias in grids/holdout-cpu-3.toml's
gpt2-small d2 p2 c2 ZeRO-1 (110,592 bytes, L/p = 6). Not counted: the routed experts' biases (gpt-oss), in their
expert data-parallel group, whole where their f_e is split over t_e = t (no grid has that group above one rank)."""

from __future__ import annotations

import sympy as sp

from ...components.base import GROUPS
from ...config.switches import Switches
from ...config.symbols import a, dh, f, k, n_gv, n_mtp, t
from .params import linear_layers, stack_layers


def _layer_vectors(sw: Switches, moe: bool, gdn: bool) -> list[sp.Expr]:
    """Widths on one device of one layer's vectors along a tensor-split axis only: a dense MLP's biases on gate and up
    (fc1's for GPT), sinks [a], OLMoE's q/k norm scales [a dh], [k dh] (attention layers), A_log and dt_bias [n_gv]
    (Gated DeltaNet layers)."""
    widths = []
    if sw.mlp_bias and not moe:
        widths += [f / t] * (1 if sw.mlp == "gelu" else 2)
    if gdn:
        return widths + [n_gv / t] * 2
    if sw.sinks:
        widths.append(a / t)
    if sw.qk_norm == "full" and not sw.mla:
        widths += [a * dh / t, k * dh / t]
    return widths


def _whole(widths: list[sp.Expr], layers: sp.Expr, zero2: bool, stacked: bool = True) -> sp.Expr:
    """Elements of `layers` layers' vectors of these widths that ZeRO leaves whole on a device."""
    dc = GROUPS.zero_group
    if zero2:
        return sp.Add(*(layers * sp.Piecewise((0, sp.Eq(sp.Mod(w, dc), 0)), (w, True)) for w in widths))
    if not stacked:
        return layers * sp.Add(*widths)
    return sp.Piecewise((0, sp.Eq(sp.Mod(layers, dc), 0)), (layers * sp.Add(*widths), True))


def unsharded_vectors(sw: Switches) -> sp.Expr:
    """Elements of parameters ZeRO leaves whole on one device (each also counted in the 1/(d*c) share of the
    parameters): the vectors above, in each stack (dense, MoE, Gated DeltaNet) and in the multi-token-prediction
    modules' layers; 0 without ZeRO (or where none of them exists)."""
    if not sw.dist_opt:
        return sp.Integer(0)
    zero2 = sw.sharded_grads
    dense, moe = stack_layers(sw)
    stacks = [(dense, False, False), (moe, True, False)] + ([(linear_layers(sw), sw.moe, True)] if sw.gdn else [])
    total = sp.Add(
        *(_whole(_layer_vectors(sw, m, g), n, zero2) for n, m, g in stacks if n != 0 and _layer_vectors(sw, m, g))
    )
    if sw.mtp and _layer_vectors(sw, sw.mtp_moe, False):
        total += _whole(_layer_vectors(sw, sw.mtp_moe, False), n_mtp, zero2, stacked=False)
    return total
