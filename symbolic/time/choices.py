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
    narrow_v: bool = False  # value heads d_v narrower than dh (config.architecture's narrow_v)
    swa: bool = False  # L_w sliding-window layers of k_w KV heads (config.architecture's swa)

    @classmethod
    def of(cls, shape, training) -> Choices:
        return cls(shape.moe, shape.mla, bool(shape.q_lora), shape.mlp_matrices, training.recompute,
                   tuple(training.recompute_modules.split(",")), training.zero, *kinds_of(shape))


def kinds_of(shape) -> tuple[bool, bool]:
    """A shape's narrow_v and swa (config.architecture reads them the same way)."""
    return shape.v_dim > 0 and not shape.mla, bool(shape.swa_layers)
