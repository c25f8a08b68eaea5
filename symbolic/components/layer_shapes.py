"""The shapes a layer's saved tensors take, in bytes per GPU for one micro batch: a token tensor [s, b, width]
(tok), an attention-score tensor [b, a, s/c, s] (scores), the one-byte dropout mask, and what a block keeps of its
output (block_output); activations.py and attention.py build a layer's tensors from them."""

from __future__ import annotations

import sympy as sp

from ..config.dtypes import DTYPES
from ..config.switches import Switches
from ..config.symbols import B_a, a, b, h, s
from .base import Component, per_gpu_tokens

MASK = sp.Integer(DTYPES["uint8"])  # dropout masks are one byte per element (Korthikanti et al. 2022)


def tok(name: str, width: sp.Expr, nbytes: sp.Expr, tp: bool, sw: Switches, doc: str) -> Component:
    """A [s, b, width] tensor of nbytes per element; tp says whether it lives in a tensor-parallel region (split over
    t), else (norm inputs, inputs of the column-parallel projections, dropout masks on the residual stream) it is
    split over t only with sequence parallelism; CP splits s over c."""
    return Component(name, per_gpu_tokens(nbytes * s * b * width, tp, sw), doc)


def scores(name: str, nbytes: sp.Expr, sw: Switches, doc: str) -> Component:
    """A [b, a, s/c, s] attention-score-shaped tensor: heads split over t, queries over c."""
    return Component(name, per_gpu_tokens(nbytes * a * s * s * b, True, sw), doc)


def block_output(sw: Switches, block: str, projection: str, norm: str, after: str) -> list[Component]:
    """What a block keeps of its [s, b, h] output: with Gemma's sandwich norms the post-norm's input, with dropout
    the mask (one byte per element, Korthikanti et al. 2022)."""
    parts = []
    if sw.sandwich:
        parts.append(
            tok(
                f"post_{block}_norm_input",
                h,
                B_a,
                False,
                sw,
                f"{projection}'s output, input of the {norm} norm (Gemma's sandwich norms)",
            )
        )
    if sw.dropout:
        parts.append(tok(f"{block}_dropout_mask", h, MASK, False, sw, f"dropout mask after {after}"))
    return parts
