"""Megatron-LM's --first-last-layers-bf16 under FP8 or NVFP4: a stage's Lb_r layers (Lbe_r of them MoE layers) are built
and run under a null context instead of Transformer Engine's FP8 one (megatron-core 0.16.1 fp8_utils.py
is_first_last_bf16_layer, get_fp8_context; fp4_utils.py get_fp4_context alike; transformer/transformer_block.py
build_layer and the forward's per-layer context; MTP layers keep the global context). Such a layer's TE linears are
plain BF16 GEMMs: they save their inputs in B_a (not B_q), the output projection keeps no FP8 copy of the attention
output, and TE caches no FP8 copies of their weights (TE 2.20.2 module/linear.py: a module outside fp8_autocast
quantizes nothing)."""

from __future__ import annotations

from dataclasses import replace

import sympy as sp

from ..config.switches import Switches
from .activations import layer_activation
from .experts import experts_params
from .weights import layers_params


def _counts(kinds: dict | None) -> tuple[sp.Expr, sp.Expr]:
    """(Lb_r, Lbe_r) of a stage's kinds (0 where the stage's layers are not placed: the closed form)."""
    kinds = kinds or {}
    return kinds.get("Lb_r", sp.Integer(0)), kinds.get("Lbe_r", sp.Integer(0))


def bf16_activations(sw: Switches, kinds: dict | None) -> sp.Expr:
    """What a stage's BF16 layers keep for one micro batch beyond the same layers under FP8: each dense one a BF16
    layer's tensors less an FP8 layer's, each MoE one likewise of an MoE layer's (0 without BF16 layers)."""
    if not sw.bf16_layers:
        return sp.Integer(0)
    plain = replace(sw, fp8=False)
    bf16, bf16_moe = _counts(kinds)
    out = (bf16 - bf16_moe) * (layer_activation(plain) - layer_activation(sw))
    if sw.moe:
        out += bf16_moe * (layer_activation(plain, moe=True) - layer_activation(sw, moe=True))
    return out


def bf16_params(sw: Switches, kinds: dict | None) -> sp.Expr:
    """Parameters a stage's BF16 layers hold on this GPU (their routed experts' too), of which Transformer Engine
    caches no FP8 copy (0 without BF16 layers)."""
    if not sw.bf16_layers:
        return sp.Integer(0)
    bf16, bf16_moe = _counts(kinds)
    return layers_params(sw, bf16, bf16_moe, {}) + (bf16_moe * experts_params(sw) if sw.moe else 0)
