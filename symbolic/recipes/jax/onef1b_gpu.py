"""The XLA:GPU rows of the 1F1B table (recipes.jax.onef1b): the vocabularies XLA:GPU pads where it splits the loss's
cotangent product over v/t, and Gemma 2's second cast of the LM head; read on the H100 target (the dumps in
docs/accuracy.md under each row's name)."""

from __future__ import annotations

import sympy as sp

from ...components.base import FP32, GROUPS
from ...config.switches import Switches
from ...config.symbols import B_a, B_g, b, c, h, s, t, v
from .buffers import Buffer

# XLA:GPU (the H100 target, 132 SMs) computes an fp32 dot [M, K] x [K, N] whose output has fewer 128 x 128 tiles than
# SMs with a kernel that pads K, once K is long enough for the idle SMs to pay: K (SMS - tiles) >= SPLIT_WORK, bracketed
# by isolated dots (benchmarks/vocab_pad_probe.py; evidence: docs/accuracy.md, SPLIT_WORK)
SMS, SPLIT_WORK = 132, 196000


def dot_tiles() -> sp.Expr:
    """Output tiles of 128 x 128 of the product of the fp32 logits gradient [b s/c, v/t] with the head [h, v/t]."""
    return sp.ceiling(b * s / (c * 128)) * sp.ceiling(h / 128)


# the multiple XLA:GPU pads v/t to when it splits that product, by the product's output tiles: 8 from 64, 16 from 32,
# 32 below (the fewer the tiles, the more ways K is split; evidence: docs/accuracy.md, vocab_padded)
VOCAB_GRAINS = ((8, 64, SMS), (16, 32, 64), (32, 0, 32))


def vocab_padded(grain: int, low: int, high: int) -> sp.Boolean:
    """Whether XLA:GPU pads v/t to a multiple of `grain` (VOCAB_GRAINS): the product has from `low` to `high` - 1
    output tiles (fewer than SMS), v/t is long enough for it to split (v/t (SMS - tiles) >= SPLIT_WORK), and `grain`
    does not divide v/t. Read on the H100 target, an A100's bound differs (evidence: docs/accuracy.md, vocab_padded).
    One flat conjunction, so that its printed form breaks between its terms."""
    tiles = dot_tiles()
    return sp.And(
        tiles >= low,
        tiles < high,
        v / t * (SMS - tiles) >= SPLIT_WORK,
        sp.Ne(v / t, grain * sp.ceiling(v / (grain * t))),
    )


def rows(sw: Switches) -> tuple[Buffer, ...]:
    """XLA:GPU's own rows of a 1F1B tick's loss (none on XLA:CPU's program: buffers.on keeps them apart)."""
    return (
        *(
            Buffer(
                "vocab_padded" + ("" if grain == 8 else f"_{grain}"),
                (b * s / c + h, grain * sp.ceiling(v / (grain * t))),
                sp.Piecewise((FP32, vocab_padded(grain, low, high)), (0, True)),
                ("loss_input_grad",),
                "the fp32 logits gradient [b s/c, v/t] and head [h, v/t] padded to a multiple of 8, 16 or 32 "
                "(VOCAB_GRAINS, one row each) where XLA:GPU splits the cotangent's dot over v/t; none when the "
                "multiple divides v/t or XLA does not split the dot",
                backend="gpu",
            )
            for grain, low, high in VOCAB_GRAINS
        ),
        *(
            Buffer(
                "head_shard_padded" + ("" if grain == 8 else f"_{grain}"),
                (h / GROUPS.zero_group, v / t),
                sp.Piecewise((B_g, sp.And(sp.Eq(t, 1), vocab_padded(grain, low, high))), (0, True)),
                ("loss_input_grad",),
                "ZeRO-2/3 at t = 1: the micro batch's fp32 head-gradient shard [h/(d c), "
                "v/t], made by XLA:GPU beside the padded operands, one row per padding multiple",
                backend="gpu",
            )
            for grain, low, high in (VOCAB_GRAINS if sw.sharded_grads else ())
        ),
        *(
            [
                Buffer(
                    "softcap_head_cast",
                    (v / t, h),
                    B_a,
                    ("loss_input_grad",),
                    "with soft-capped logits (Gemma 2), "
                    "the LM head [v/t, h] cast to compute dtype once more for the cotangent's product, a buffer of its "
                    "own",
                    backend="gpu",
                )
            ]
            if sw.logit_softcap
            else []
        ),
    )
