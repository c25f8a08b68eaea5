"""A Gated DeltaNet layer's mixer (Qwen3-Next, Qwen3.5) as Megatron-Core 0.16.1 trains it
(megatron/core/ssm/gated_delta_net.py, GatedDeltaNet.forward; its spec in models/gpt/
experimental_attention_variant_module_specs.py fuses the input norm into in_proj, a TELayerNormColumnParallelLinear):
its parameters on one TP rank and the tensors it keeps for backward per micro batch. The heads split over t;
the recurrence runs on the whole sequence of each TP rank (in_proj gathers it from the sequence-parallel shard), and
context parallelism is refused with it (Megatron-Core 0.16.1: "TODO: support CP"; symbolic.recipes.megatron.rules),
so nothing here is split over c. The kernels: causal-conv1d's causal_conv1d_fn (SiLU inside; it keeps its input),
fla's l2norm and chunk_gated_delta_rule (fla-core 0.6.0: fla/modules/norm/l2norm.py L2NormFunction keeps y and
rstd; fla/ops/gated_delta_rule/chunk.py ChunkGatedDeltaRuleFunction keeps q, k, v, g, beta and A [b, s, n_gv, 64])."""

from __future__ import annotations

import sympy as sp

from ..config.hybrid import GDN_CHUNK
from ..config.switches import Switches
from ..config.symbols import B_a, b, d_gk, d_gv, h, K_c, n_gk, n_gv, s, t
from .base import FP32, Component, fused_norm_tensors

CHUNK = sp.Integer(GDN_CHUNK)  # fla's chunk length BT (chunk_gated_delta_rule's default): A is [b, s, n_gv, BT]


def gdn_params(sw: Switches = Switches()) -> sp.Expr:
    """One Gated DeltaNet mixer on one TP rank: in_proj [h, 2 n_gk d_gk + 2 n_gv d_gv + 2 n_gv] column-parallel (q, k,
    v, the gate z, beta, alpha), the depthwise conv1d [(2 n_gk d_gk + n_gv d_gv) / t, 1, K_c] (no bias), dt_bias and
    A_log [n_gv / t], the gated RMSNorm's weight [d_gv] (replicated: it normalises each head), out_proj
    [n_gv d_gv, h] row-parallel; its input norm is the layer's first norm (norm_params)."""
    qk, vd = n_gk * d_gk, n_gv * d_gv
    return (h * (2 * qk + 2 * vd + 2 * n_gv) + (2 * qk + vd) * K_c + 2 * n_gv + vd * h) / t + d_gv


def _heads(name: str, width: sp.Expr, nbytes: sp.Expr, doc: str) -> Component:
    """A [b, s, width] tensor of the mixer's heads: width split over t, the whole sequence on every TP rank."""
    return Component(name, nbytes * s * b * width / t, doc)


def gdn_tensors(sw: Switches) -> list[Component]:
    """What one Gated DeltaNet mixer keeps for one micro batch, in place of softmax attention's tensors: the fused
    norm's input and output (in_proj's input), the convolution's input, the l2-normed queries and keys with their
    fp32 1/norms, the repeated queries and keys the chunked rule keeps when n_gv > n_gk, the values, the gate z, beta
    and the fp32 decay terms, the chunk matrix A, the recurrence's output with its RMSNorm's statistics and output,
    and out_proj's input. _apply_gated_norm runs under torch.compile (Megatron-Core's jit_fuser): the product
    RMSNorm(o) * silu(z) keeps its two bf16 factors' sources (o normed, z) and recomputes silu."""
    conv = 2 * n_gk * d_gk + n_gv * d_gv
    parts = [
        *fused_norm_tensors(sw, "first norm"),
        _heads(
            "conv_input",
            conv,
            B_a,
            "q, k, v before the causal conv1d [b, 2 n_gk d_gk + n_gv d_gv, s], kept by "
            "causal_conv1d_fn (which applies SiLU inside and recomputes it)",
        ),
        _heads(
            "qk_l2norm",
            2 * n_gk * d_gk,
            B_a,
            "the l2-normed queries and keys [b, s, n_gk, d_gk] each, kept by "
            "fla's l2norm (L2NormFunction saves its output)",
        ),
        _heads("qk_l2norm_rstd", 2 * n_gk, FP32, "the l2norm's fp32 1/norm per token and head, for queries and keys"),
    ]
    if sw.gdn_repeat:
        parts.append(
            _heads(
                "qk_repeated",
                2 * n_gv * d_gk,
                B_a,
                "queries and keys repeated to n_gv heads "
                "(repeat_interleave, new tensors), kept by chunk_gated_delta_rule",
            )
        )
    parts += [
        _heads(
            "gdn_v", n_gv * d_gv, B_a, "the values [b, s, n_gv, d_gv] after the convolution, kept by the chunked rule"
        ),
        _heads(
            "gdn_z",
            n_gv * d_gv,
            B_a,
            "the output gate z [b, s, n_gv, d_gv] (a contiguous copy of in_proj's "
            "slice), a factor of the gated norm's product",
        ),
        _heads("gdn_beta", n_gv, B_a, "beta = sigmoid(b) [b, s, n_gv], kept by sigmoid and the chunked rule"),
        _heads(
            "gdn_decay",
            3 * n_gv,
            FP32,
            "fp32 decay terms [b, s, n_gv]: softplus's input (alpha + dt_bias) and "
            "output (a factor of g = -exp(A_log) softplus(...)) and the chunked rule's cumulative g",
        ),
        _heads(
            "gdn_chunk_A",
            n_gv * CHUNK,
            B_a,
            "fla's solved inverse of (I + A) per 64-token chunk [b, s, n_gv, 64], kept by the chunked rule",
        ),
        _heads("gdn_out", n_gv * d_gv, B_a, "the recurrence's output [b, s, n_gv, d_gv], input of the gated RMSNorm"),
        _heads("gdn_norm_rstd", n_gv, FP32, "the gated RMSNorm's fp32 1/rms per token and head"),
        _heads("gdn_norm_out", n_gv * d_gv, B_a, "RMSNorm(o), the other factor of the gated product"),
        _heads("out_proj_input", n_gv * d_gv, B_a, "RMSNorm(o) * silu(z) in bf16, input of the row-parallel out_proj"),
    ]
    return parts
