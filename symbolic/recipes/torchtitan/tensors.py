"""One saved per-token tensor of torchtitan's TransformerBlock, as fsdp2.py and compiled.py list them."""

from __future__ import annotations

import sympy as sp

from ...components.base import FP32, Component
from ...config.switches import Switches
from ...config.symbols import B_a, a, b, c, dh, h, k, s, t


def token_tensor(name: str, width: sp.Expr, nbytes: sp.Expr, split: bool, doc: str) -> Component:
    """A saved [b, s/c, width] tensor, width (or, split by sequence parallelism, s) over t where `split`."""
    return Component(name, nbytes * s * b * width / (c * (t if split else 1)), doc)


def block_input() -> Component:
    """The block's input [b, s/c, h] in bf16: what full checkpointing keeps (ptd_checkpoint_wrapper)."""
    return token_tensor(
        "block_input", h, B_a, True, "the block's input, bf16 (sharded over t along s by SequenceParallel)"
    )


def tensor_parallel() -> sp.Expr:
    """1 where tensor parallelism runs (t > 1: the plan's collectives and their outputs exist), else 0."""
    return sp.Piecewise((1, t > 1), (0, True))


def fp8_tp(sw: Switches) -> sp.Expr:
    """1 where torchao's Float8 tensor-parallel styles run (--fp8 with t > 1: Float8ColwiseParallel,
    Float8RowwiseParallel, PrepareFloat8ModuleInput cast a linear's input to FP8 before it is gathered), else 0."""
    return tensor_parallel() if sw.fp8 else sp.Integer(0)


def sac_attention(split: bool) -> list[Component]:
    """What op-level SAC saves of the attention: wq's and wv's aten.mm outputs, the flash kernel's output and its fp32
    logsumexp (torchtitan's _save_list: aten.mm every second one, _scaled_dot_product_flash_attention); `split`: over
    t (the dense blocks; torchtitan's MoE runs at tp = 1)."""
    over, heads = (" / t", "a/t") if split else ("", "a")
    return [
        token_tensor("wq_out", a * dh, B_a, split, f"aten.mm output of wq, the queries before RoPE [b, s, a dh{over}]"),
        token_tensor(
            "wv_out", k * dh, B_a, split, f"aten.mm output of wv, the values [b, s, k dh{over}] (before repeat_kv)"
        ),
        token_tensor("sdpa_out", a * dh, B_a, split, f"_scaled_dot_product_flash_attention output [b, {heads}, s, dh]"),
        token_tensor("sdpa_lse", a, FP32, split, f"its fp32 logsumexp [b, {heads}, s]"),
    ]


def flash_attention() -> list[Component]:
    """What the flash kernel saves of a block with no checkpointing, eager or compiled: Q and the repeated K and V (a
    heads each), its output and its fp32 logsumexp."""
    return [
        token_tensor("q", a * dh, B_a, True, "queries after RoPE, saved by the flash kernel"),
        token_tensor("k_repeated", a * dh, B_a, True, "keys after RoPE and repeat_kv: a heads"),
        token_tensor("v_repeated", a * dh, B_a, True, "values after repeat_kv: a heads"),
        token_tensor("sdpa_out", a * dh, B_a, True, "the flash kernel's output, also wo's saved input"),
        token_tensor("sdpa_lse", a, FP32, True, "its fp32 logsumexp [b, a, s]"),
    ]
