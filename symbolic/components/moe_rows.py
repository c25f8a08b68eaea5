"""The token counts of one MoE layer on one GPU for one micro batch, as Megatron-Core's MoELayer lays them out
(megatron/core/transformer/moe/: router.py, token_dispatcher.py): T routed tokens, R rows for the local experts; the width they move at and a [rows, width] tensor."""

from __future__ import annotations

import sympy as sp

from ..config.switches import Switches
from ..config.symbols import C_f, b, c, d_l, h, k_e, s, t, t_e
from .base import Component


def local_tokens() -> sp.Expr:
    """T: the tokens of one micro batch on one GPU in the MoE layer, the sequence-parallel shard s b / (t c)."""
    return s * b / (t * c)


def expert_rows() -> sp.Expr:
    """R: the token rows one GPU's experts compute for one micro batch, C_f k_e T t_e (k_e copies of each token, an
    even share of C_f over the e ranks of the all-to-all, gathered over the t_e expert tensor-parallel ranks)."""
    return C_f * k_e * local_tokens() * t_e


def token_width(sw: Switches) -> sp.Expr:
    """The width of the tokens the dispatcher moves and the experts read and write: h, or a latent MoE's d_l
    (megatron-core 0.16.1 moe_layer.py: fc1_latent_proj before the dispatch, fc2_latent_proj after the combine)."""
    return d_l if sw.latent else h


def rows(name: str, rows: sp.Expr, width: sp.Expr, nbytes: sp.Expr, doc: str) -> Component:
    """A [rows, width] tensor of nbytes per element."""
    return Component(name, nbytes * rows * width, doc)
