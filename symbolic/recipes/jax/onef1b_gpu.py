"""The XLA:GPU rows of the 1F1B table (recipes.jax.onef1b): the vocabularies XLA:GPU pads where it splits the loss's
cotangent product over v/t, and Gemma 2's second cast of the LM head; read on the H100 target."""
from __future__ import annotations

import sympy as sp

from ...components.base import FP32, GROUPS
from ...config.switches import Switches
from ...config.symbols import B_a, B_g, b, c, h, s, t, v
from .buffers import Buffer

# XLA:GPU (the H100 target, 132 SMs) computes an fp32 dot [M, K] x [K, N] whose output has fewer 128 x 128 tiles than
# SMs with a kernel that pads K, once K is long enough for the idle SMs to pay: K (SMS - tiles) >= SPLIT_WORK. Isolated
# dots bracket SPLIT_WORK in (192004, 200016] (128 tiles: K = 48001 unpadded, 50004 padded; 96 tiles: 4001 and 8001;
# 112 tiles: 8001 and 16001; at 64 tiles and fewer every K from 4001 was padded; from 132 tiles none up to 200001:
# benchmarks/vocab_pad_probe.py); docs/accuracy.md, "Vocabularies XLA:GPU pads"
SMS, SPLIT_WORK = 132, 196000


def dot_tiles() -> sp.Expr:
    """Output tiles of 128 x 128 of the product of the fp32 logits gradient [b s/c, v/t] with the head [h, v/t]."""
    return sp.ceiling(b * s / (c * 128)) * sp.ceiling(h / 128)


# the multiple XLA:GPU pads v/t to when it splits that product, by the product's output tiles: 8 from 64, 16 from 32,
# 32 below (isolated dots: the fewer the tiles, the more ways K is split; at very long K a few columns more)
VOCAB_GRAINS = ((8, 64, SMS), (16, 32, 64), (32, 0, 32))


def vocab_padded(grain: int, low: int, high: int) -> sp.Boolean:
    """Whether XLA:GPU pads v/t to a multiple of `grain` (VOCAB_GRAINS): the product has from `low` to `high` - 1
    output tiles (fewer than SMS), v/t is long enough for it to split (v/t (SMS - tiles) >= SPLIT_WORK), and `grain`
    does not divide v/t. Read on the H100 target; an A100's bound differs (1024 x 1536 with v/t = 20001 unpadded
    there, padded on the H100). One flat conjunction, so that its printed form breaks between its terms."""
    tiles = dot_tiles()
    return sp.And(tiles >= low, tiles < high, v / t * (SMS - tiles) >= SPLIT_WORK,
                  sp.Ne(v / t, grain * sp.ceiling(v / (grain * t))))


def rows(sw: Switches) -> tuple[Buffer, ...]:
    """XLA:GPU's own rows of a 1F1B tick's loss (none on XLA:CPU's program: buffers.on keeps them apart)."""
    return (
        *(Buffer("vocab_padded" + ("" if grain == 8 else f"_{grain}"),
                 (b * s / c + h, grain * sp.ceiling(v / (grain * t))),
                 sp.Piecewise((FP32, vocab_padded(grain, low, high)), (0, True)), ("loss_input_grad",),
                 "a vocabulary XLA:GPU pads: where it splits the cotangent's dot over v/t (few output tiles, long "
                 "v/t), it pads both operands, the logits gradient [b s/c, v/t] and the head [h, v/t], in fp32, to a "
                 "multiple of 8 from 64 output tiles, 16 from 32 and 32 below, one row each (VOCAB_GRAINS; "
                 "grids/derive-1f1b-ep-zero.toml's moe3-derive-vocab-40002-1024 d4 e2 p2 full zero3: loop_pad_fusion "
                 "and loop_pad_fusion.1 f32[1024,40016], the step's peak; grids/derive-vocab.toml's moe-top1-768 d2 "
                 "e2 t2 p2 full zero3, v/t = 25000 at 48 tiles: f32[1024,25008] and f32[768,25008]); none when the "
                 "multiple divides v/t or XLA does not split the dot", backend="gpu")
          for grain, low, high in VOCAB_GRAINS),
        *(Buffer("head_shard_padded" + ("" if grain == 8 else f"_{grain}"), (h / GROUPS.zero_group, v / t),
                 sp.Piecewise((B_g, sp.And(sp.Eq(t, 1), vocab_padded(grain, low, high))), (0, True)),
                 ("loss_input_grad",), "ZeRO-2/3 at t = 1: beside the padded operands, the micro batch's head-gradient "
                 "shard [h/(d c), v/t] in fp32, which XLA:GPU makes while they are live, one row per padding multiple "
                 "(grids/derive-vocab-2.toml's vocab-derive-30001-1024 d2 p2 zero2 and zero3: gemm_fusion_dot.108 and "
                 ".127 f32[512,30001] at the step's peak beside loop_pad_fusion and .1; not at ZeRO-1, nor at t = 2: "
                 "vocab-derive-30002-1792 d2 t2 p2 zero2 and zero3)", backend="gpu")
          for grain, low, high in (VOCAB_GRAINS if sw.sharded_grads else ())),
        *([Buffer("softcap_head_cast", (v / t, h), B_a, ("loss_input_grad",), "with soft-capped logits (Gemma 2), "
                  "the LM head cast to compute dtype once more for the cotangent's product, a buffer of its own "
                  "(grids/derive-gemma2.toml's gemma2-1536 d2 p2 c2 none zero2 and d4 p3 full zero2: "
                  "loop_convert_fusion.4 and .5 bf16[32768,1536], transpose(jvp())/convert_element_type)",
                  backend="gpu")] if sw.logit_softcap else []),
    )
