"""What changes the form of the step-time expressions (the model's kinds, recompute, ZeRO stage); no sympy."""
from __future__ import annotations

from typing import NamedTuple


class Choices(NamedTuple):
    """What changes the step's expressions: the model's kinds, recompute, ZeRO stage."""

    moe: bool
    mla: bool
    q_latent: bool
    n_f: int
    recompute: str  # none | selective | full
    modules: tuple[str, ...]  # selective recompute's modules
    zero: int

    @classmethod
    def of(cls, shape, training) -> Choices:
        return cls(shape.moe, shape.mla, bool(shape.q_lora), shape.mlp_matrices, training.recompute,
                   tuple(training.recompute_modules.split(",")), training.zero)
