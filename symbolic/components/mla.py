"""What one multi-head latent attention block keeps for backward per micro batch, as Megatron-Core's
MLASelfAttention runs it (NVIDIA/Megatron-LM d98e8a6, megatron/core/transformer/multi_latent_attention.py
get_query_key_value_tensors, with --qk-layernorm fusing the latents' RMSNorms into the up-projections): the
down-projections run on the sequence-parallel shard with replicated weights, the up-projections (column-parallel)
gather the sequence, and the RoPE key [s, b, d_r] is expanded to every head and concatenated into a contiguous key."""

from __future__ import annotations

import sympy as sp

from ..config.switches import Switches
from ..config.symbols import B_a, a, b, d_r, d_v, dh, h, kv_r, q_r, s
from .base import Component, per_gpu_tokens


def _tok(name: str, width: sp.Expr, tp: bool, sw: Switches, doc: str) -> Component:
    """A [s, b, width] tensor of B_a bytes per element: split over t inside the heads' region (tp), else only with
    SP; over c always."""
    return Component(name, per_gpu_tokens(B_a * s * b * width, tp, sw), doc)


def mla_tensors(sw: Switches) -> list[Component]:
    """The attention block of an MLA layer: norm-1 input; the normed input of the down-projections (one tensor,
    both TELinears save it); the query latent before and after its RMSNorm (the fused up-projection's input and the
    ln_out it keeps for its weight gradient) and the key/value latent alike; the contiguous query and key
    [s, b, a/t, dh + d_r] and the value [s, b, a/t, d_v] the attention core keeps; its output [s, b, a/t, d_v], the
    row-parallel output projection's input. The RoPE key itself is not kept (RoPE's backward needs only cos and
    sin; the split and the expansion are views). Unfused attention's scores: components.activations."""
    parts = [
        _tok("norm1_input", h, False, sw, "input of the first norm (the residual stream)"),
        _tok(
            "qkv_input",
            h,
            False,
            sw,
            "normed input of the down-projections q_a and kv_a (replicated TELinears on "
            "the sequence-parallel shard; without a query latent also the column-parallel q projection's input)",
        ),
    ]
    if sw.q_lora:
        parts += [
            _tok(
                "q_latent",
                q_r,
                False,
                sw,
                "query latent [s, b, q_r] before its RMSNorm, input of the fused "
                "norm + q_b projection (TELayerNormColumnParallelLinear)",
            ),
            _tok(
                "q_latent_normed", q_r, False, sw, "normed query latent (ln_out), kept by q_b for its weight gradient"
            ),
        ]
    parts += [
        _tok(
            "kv_latent",
            kv_r,
            False,
            sw,
            "key/value latent [s, b, kv_r] before its RMSNorm, input of the fused norm + kv_b projection",
        ),
        _tok(
            "kv_latent_normed",
            kv_r,
            False,
            sw,
            "normed key/value latent (ln_out), kept by kv_b for its weight gradient",
        ),
        _tok(
            "q",
            a * (dh + d_r),
            True,
            sw,
            "queries [s, b, a/t, dh + d_r] after RoPE on their last d_r, made contiguous for the attention core",
        ),
        _tok(
            "k",
            a * (dh + d_r),
            True,
            sw,
            "keys [s, b, a/t, dh + d_r]: kv_b's no-RoPE part and the one RoPE key "
            "expanded to every head, concatenated (a real copy)",
        ),
        _tok("v", a * d_v, True, sw, "values [s, b, a/t, d_v], a contiguous copy of kv_b's value part"),
        _tok("attn_out", a * d_v, True, sw, "attention output [s, b, a/t d_v] = input of the output projection"),
    ]
    return parts


def rope_key(sw: Switches) -> Component:
    """With --recompute-modules mla_up_proj: the RoPE key [s, b, d_r] the checkpointed up-projections keep beside
    the latents, all-gathered over the sequence under SP (Megatron-Core multi_latent_attention.py
    qkv_up_proj_and_rope_apply, CheckpointWithoutOutput); over c only."""
    from ..config.symbols import c

    return Component(
        "k_rope",
        B_a * s * b * d_r / c,
        "the RoPE key [s, b, d_r] (the sequence gathered), kept by the checkpointed up-projections with the latents",
    )


def mla_wgrad_shapes(sw: Switches) -> sp.Expr:
    """Elements of one of each of an MLA layer's attention weight shapes on one TP rank (q_a [q_r, h] or q
    [a (dh + d_r) / t, h], q_b [a (dh + d_r) / t, q_r], kv_a [kv_r + d_r, h], kv_b [a (dh + d_v) / t, kv_r],
    o [h, a d_v / t]; the indexer's wq_b, wk and weights_proj whole): the dummy weight gradients of gradient
    accumulation fusion."""
    from ..config.symbols import t

    queries = h * q_r + a * (dh + d_r) * q_r / t if sw.q_lora else a * (dh + d_r) * h / t
    from ..config.symbols import d_i
    from .weights import indexer_params

    indexer = indexer_params(sw) - 2 * d_i if sw.dsa else 0  # its three linears (whole on every TP rank), no norm
    return queries + (kv_r + d_r) * h + a * (dh + d_v) * kv_r / t + h * a * d_v / t + indexer
