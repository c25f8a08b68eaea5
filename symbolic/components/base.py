"""What a component is (a named sympy expression in bytes per GPU with a one-line docstring) and the switches that shape it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import sympy as sp

from ..config.dtypes import DTYPE_BYTES
from ..config.errors import ConfigError
from ..config.symbols import c, t
from ..config.training import RECOMPUTE

FP32 = sp.Integer(DTYPE_BYTES["float32"])  # bytes of an fp32 element (logits, norms, softmax in fp32)
INT32 = sp.Integer(DTYPE_BYTES["int32"])
INT64 = sp.Integer(DTYPE_BYTES["int64"])  # bytes of a Megatron token id


class Component(NamedTuple):
    """One memory term: bytes per GPU, a name, and what tensor/buffer it is plus the source of the assumption."""

    name: str
    expr: sp.Expr
    doc: str
    count: int = 1  # how many tensors of equal size the expression counts (jax's saved residuals list each one)


def repeated(name: str, count: int, one: sp.Expr, doc: str) -> Component:
    """`count` tensors of `one` bytes each, as one component."""
    return Component(name, count * one, doc, count)


@dataclass(frozen=True)
class Switches:
    """The discrete choices that change the form of the expressions (everything numeric stays a symbol)."""

    recompute: str = "none"  # none | selective | full (Korthikanti et al. 2022)
    flash_attn: bool = True  # no s x s scores/softmax kept for backward
    sp: bool = True  # sequence parallel: non-TP regions sharded along s over t
    dist_opt: bool = True  # optimizer states sharded over d*c (Megatron distributed optimizer, ZeRO-1)
    overheads: bool = True  # add the often-neglected buffers (communicators, CUDA context, ...)
    tied: bool = False  # LM head shares the embedding matrix: one v x h matrix on the p = 1 "only" stage

    def __post_init__(self):
        if self.recompute not in RECOMPUTE:
            raise ConfigError(f"recompute must be one of {', '.join(RECOMPUTE)}, got {self.recompute!r}")

    @property
    def t_sp(self) -> sp.Expr:
        """Divisor of non-TP-region tensors (norms, residual stream): t with sequence parallel, else 1."""
        return t if self.sp else sp.Integer(1)


def per_gpu_tokens(x: sp.Expr, tensor_parallel: bool, sw: Switches) -> sp.Expr:
    """Share of a [s, b, ...] tensor held by one GPU: /c always (CP splits s); /t inside TP regions, or with SP outside."""
    return x / (c * (t if tensor_parallel else sw.t_sp))


def total(parts: list[Component]) -> sp.Expr:
    """Sum of a list of components (the only way totals are made, so totals equal the sum of their parts)."""
    return sp.Add(*(part.expr for part in parts))
