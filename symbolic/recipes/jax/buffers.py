"""A buffer table: rows of (name, per-device shape, bytes per element, phases live, backend), and live sets per phase.

A compiled train step holds its arguments and outputs throughout and its temporaries in phases; XLA packs the
temporaries into one heap whose size is the largest phase's live set. Every row is one buffer (or `count` equal
ones) of the program, named after what it holds, with its shape in the glossary's letters.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from ...config.switches import BACKENDS
from ...components.base import Component

# in program order; forward_embed: the embedding lookup before the pipeline's layers; loss_input_grad: the logits
# gradient's product with the head, the cotangent of the last stage's output (after the logits are gone, before the
# head's own gradient); loss_head: a micro batch's
# LM-head gradient after its logits are gone (ZeRO-2/3 reduce-scatter it); backward_embed: 1F1B's lookup gradient at
# the end of a tick; update_gather: ZeRO-2's loop that all-gathers the updated weights layer by layer, after the rest
# of the update
PHASES = (
    "forward_embed",
    "forward",
    "relayout",
    "loss",
    "loss_input_grad",
    "loss_head",
    "loss_modules",
    "backward_attention",
    "backward_weights",
    "backward_embed",
    "update",
    "update_gather",
)


@dataclass(frozen=True)
class Buffer:
    """One buffer (or `count` equal buffers): per-device shape, bytes per element, the phases it is live in."""

    name: str
    shape: tuple  # per-device extents, sympy expressions in the glossary's letters
    width: sp.Expr  # bytes per element
    phases: tuple[str, ...]
    doc: str
    count: sp.Expr = sp.Integer(1)
    backend: str = "all"  # "all", or the one backend whose program holds it ("gpu": XLA:GPU, "cpu": XLA:CPU)

    def __post_init__(self):
        unknown = set(self.phases) - set(PHASES)
        if unknown or self.backend not in ("all",) + BACKENDS:
            raise ValueError(f"buffer {self.name}: unknown phase(s) {sorted(unknown)} or backend {self.backend!r}")
        if {"loss", "loss_head"} <= set(self.phases) and "loss_input_grad" not in self.phases:
            raise ValueError(f"buffer {self.name}: live in loss and loss_head, so in loss_input_grad between them")

    @property
    def bytes(self) -> sp.Expr:
        return self.count * self.width * sp.Mul(*self.shape)

    def component(self) -> Component:
        return Component(self.name, self.bytes, self.doc)


def on(rows: list[Buffer], backend: str) -> list[Buffer]:
    """The rows a backend's program holds: the shared ones and its own."""
    return [row for row in rows if row.backend in ("all", backend)]


def live(rows: list[Buffer], phase: str) -> sp.Expr:
    """Bytes live in one phase: the sum of the rows that list it."""
    return sp.Add(*(row.bytes for row in rows if phase in row.phases))


def peak(rows: list[Buffer]) -> sp.Expr:
    """The heap XLA needs for these temporaries: the largest phase's live set. A phase whose rows are a subset of
    another's holds no more (every row's bytes are nonnegative) and is left out; the rest form an unevaluated Max
    (sympy's own pruning compares every pair of live sets symbolically, seconds per switch set, for the same value)."""
    held = {phase: frozenset(i for i, row in enumerate(rows) if phase in row.phases) for phase in PHASES}
    kept = [
        phase
        for i, phase in enumerate(PHASES)
        if held[phase]
        and not any(
            held[phase] < held[other] or (held[phase] == held[other] and j < i)
            for j, other in enumerate(PHASES)
            if j != i
        )
    ]
    return (
        sp.Max(*(live(rows, phase) for phase in kept), evaluate=False)
        if len(kept) > 1
        else (live(rows, kept[0]) if kept else sp.Integer(0))
    )
