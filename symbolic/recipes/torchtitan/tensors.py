"""One saved per-token tensor of torchtitan's TransformerBlock, as fsdp2.py and compiled.py list them."""
from __future__ import annotations

import sympy as sp

from ...components.base import Component
from ...config.switches import Switches
from ...config.symbols import B_a, b, c, h, s, t


def token_tensor(name: str, width: sp.Expr, nbytes: sp.Expr, split: bool, doc: str) -> Component:
    """A saved [b, s/c, width] tensor, width (or, split by sequence parallelism, s) over t where `split`."""
    return Component(name, nbytes * s * b * width / (c * (t if split else 1)), doc)


def block_input() -> Component:
    """The block's input [b, s/c, h] in bf16: what full checkpointing keeps (ptd_checkpoint_wrapper)."""
    return token_tensor("block_input", h, B_a, True,
                        "the block's input, bf16 (sharded over t along s by SequenceParallel)")


def tensor_parallel() -> sp.Expr:
    """1 where tensor parallelism runs (t > 1: the plan's collectives and their outputs exist), else 0."""
    return sp.Piecewise((1, t > 1), (0, True))


def fp8_tp(sw: Switches) -> sp.Expr:
    """1 where torchao's Float8 tensor-parallel styles run (--fp8 with t > 1: Float8ColwiseParallel,
    Float8RowwiseParallel, PrepareFloat8ModuleInput cast a linear's input to FP8 before it is gathered), else 0."""
    return tensor_parallel() if sw.fp8 else sp.Integer(0)
