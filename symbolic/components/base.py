"""What a component is (a named sympy expression in bytes per GPU with a one-line docstring), and how totals are made."""

from __future__ import annotations

from typing import NamedTuple

import sympy as sp

from ..config.dtypes import DTYPES
from ..config.parallel import Parallel
from ..config.switches import Switches
from ..config.symbols import B_a, b, c, h, s, t

FP32 = sp.Integer(DTYPES["fp32"])  # bytes of an fp32 element (logits, norms, softmax in fp32)
INT32 = sp.Integer(DTYPES["int32"])
INT64 = sp.Integer(DTYPES["int64"])  # bytes of a Megatron token id
# the groups the parallel degrees make, over the glossary's symbols (config.parallel): GROUPS.zero_group is d c
GROUPS = Parallel.symbols()


class Component(NamedTuple):
    """One memory term: bytes per GPU, a name, and what tensor/buffer it is plus the source of the assumption."""

    name: str
    expr: sp.Expr
    doc: str
    count: int = 1  # how many tensors of equal size the expression counts (jax's saved residuals list each one)


def repeated(name: str, count: int, one: sp.Expr, doc: str) -> Component:
    """`count` tensors of `one` bytes each, as one component."""
    return Component(name, count * one, doc, count)


def per_gpu_tokens(x: sp.Expr, tensor_parallel: bool, sw: Switches) -> sp.Expr:
    """Share of a [s, b, ...] tensor held by one GPU: /c always (CP splits s); /t inside TP regions, or with SP outside."""
    return x / (c * (t if tensor_parallel or sw.sp else 1))


def fused_norm_tensors(sw: Switches, norm: str) -> list[Component]:
    """What a norm fused into a mixer's column-parallel in_proj keeps (TELayerNormColumnParallelLinear, Gated
    DeltaNet's and Mamba-2's): its input, the residual stream, and its output, in_proj's input; `norm` names it."""
    return [
        Component(
            "norm1_input",
            per_gpu_tokens(B_a * s * b * h, False, sw),
            f"input of the layer's {norm}, fused "
            "into in_proj (TELayerNormColumnParallelLinear keeps it; the residual stream)",
        ),
        Component(
            "in_proj_input",
            per_gpu_tokens(B_a * s * b * h, False, sw),
            "the fused norm's output, in_proj's "
            "input (kept sharded with SP; not rerun by selective 'layernorm': the norm is fused)",
        ),
    ]


def tokens(width: sp.Expr, nbytes: sp.Expr, split_t: bool) -> sp.Expr:
    """One device's bytes of jaxcheck's [b, s, width] tensor: s split over c, and width (or s, with SP) over t if split_t."""
    return nbytes * b * s * width / (c * (t if split_t else 1))


def total(parts: list[Component]) -> sp.Expr:
    """Sum of a list of components (the only way totals are made, so totals equal the sum of their parts)."""
    return sp.Add(*(part.expr for part in parts))
