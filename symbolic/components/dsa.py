"""What DeepSeek Sparse Attention keeps for backward per layer and micro batch, as Megatron-Core 0.16.1 runs it in
training (megatron/core/transformer/experimental_attention_variant/dsa.py: DSAIndexer.forward_with_scores,
unfused_dsa_fn, compute_dsa_indexer_loss; MLASelfAttention passes it the normed hidden states and the query latent
before its norm). The lightning indexer is replicated over TP ranks (its linears 'duplicated', on the whole
sequence), the sparse attention is unfused (fp32 scores and probabilities [b, a/t, s, s] masked to the indexer's
top-k), and the indexer's KL loss against the heads' summed attention keeps three fp32 [b, s, s]. Context
parallelism is refused with it (symbolic.recipes.megatron.rules), so nothing here is split over c."""

from __future__ import annotations

import sympy as sp

from ..config.switches import Switches
from ..config.symbols import B_a, a, b, d_i, d_r, d_v, dh, h, k_i, n_i, q_r, s, t
from .base import FP32, INT64, Component

_LN_STATS = 2 * FP32  # TE LayerNorm's fp32 mean and 1/sigma per token


def _gathered(width: sp.Expr, sw: Switches) -> sp.Expr:
    """Bytes of a [s, b, width] copy the indexer all-gathers from the sequence-parallel shard: a tensor of its own
    with SP at t > 1, else the one the attention block already keeps (0 more)."""
    if not sw.sp:
        return sp.Integer(0)
    return sp.Piecewise((B_a * s * b * width, t > 1), (0, True))


def dsa_tensors(sw: Switches) -> list[Component]:
    """The indexer's and the sparse attention's saved tensors of one MLA layer (in place of the q, k, v a fused
    attention core keeps: the unfused core saves its own fp32 copies, no bf16 q, k or v)."""
    return _indexer_tensors(sw) + _sparse_tensors(sw) + _index_loss_tensors(sw)


def _indexer_tensors(sw: Switches) -> list[Component]:
    """The lightning indexer's saved tensors: its gathered inputs, its fp32 queries and keys, scores, head
    weights and top-k indices."""
    return [
        Component(
            "dsa_x",
            _gathered(h, sw),
            "the normed hidden states gathered over the sequence [s, b, h] (with SP "
            "at t > 1), kept by the indexer's wk and weights_proj",
        ),
        Component(
            "dsa_qr",
            _gathered(q_r, sw),
            "the query latent gathered over the sequence [s, b, q_r] (with SP at t > 1), kept by the indexer's wq_b",
        ),
        Component(
            "index_k_norm_input",
            (B_a * d_i + _LN_STATS) * s * b,
            "the indexer key [s, b, d_i] = wk's output, "
            "input of its LayerNorm, with the norm's fp32 mean and 1/sigma per token",
        ),
        Component(
            "index_q_fp32",
            FP32 * s * b * n_i * d_i,
            "fp32 indexer queries [s, b, n_i, d_i] (after RoPE on "
            "their last d_r and the Hadamard rotation), an operand of the score einsum",
        ),
        Component(
            "index_k_fp32", FP32 * s * b * d_i, "fp32 indexer keys [s, b, d_i], the score einsum's other operand"
        ),
        Component(
            "index_relu",
            FP32 * b * s * s * n_i,
            "ReLU of the per-head index scores [s, b, n_i, s] in fp32, "
            "kept by the ReLU and by the product with the head weights",
        ),
        Component(
            "index_weights",
            B_a * s * b * n_i,
            "the head weights [s, b, n_i] (weights_proj's output scaled), kept by that product",
        ),
        Component(
            "index_topk",
            INT64 * b * s * sp.Min(k_i, s),
            "the top-k key indices [b, s, min(k_i, s)] in int64, "
            "kept by topk's backward (and read by the sparse mask and the loss)",
        ),
    ]


def _sparse_tensors(sw: Switches) -> list[Component]:
    """The sparse attention's own: fp32 queries and keys, the probabilities over the top-k keys, the values."""
    heads = a / t  # the attention's heads on one TP rank
    return [
        Component(
            "dsa_q_fp32",
            FP32 * s * b * heads * (dh + d_r),
            "fp32 queries [b a/t, s, dh + d_r], an operand of the unfused scores' bmm",
        ),
        Component(
            "dsa_k_fp32", FP32 * s * b * heads * (dh + d_r), "fp32 keys [b a/t, dh + d_r, s], the scores' other operand"
        ),
        Component(
            "dsa_softmax",
            FP32 * b * heads * s * s,
            "fp32 probabilities [b, a/t, s, s] over the top-k keys (the rest masked to -inf), kept by the softmax",
        ),
        Component(
            "dsa_probs",
            B_a * b * heads * s * s,
            "the probabilities cast to the values' dtype [b a/t, s, s], an operand of P V",
        ),
        Component("dsa_v", B_a * s * b * heads * d_v, "the values [b a/t, s, d_v] made contiguous for P V"),
    ]


def _index_loss_tensors(sw: Switches) -> list[Component]:
    """The indexer loss's: the index scores' softmax, its log's input, the target."""
    return [
        Component(
            "index_loss_softmax",
            FP32 * b * s * s,
            "softmax of the index scores [b, s, s] in fp32 (the indexer's KL loss)",
        ),
        Component(
            "index_loss_log_input",
            FP32 * b * s * s,
            "the index probabilities + 1e-10 [b, s, s] in fp32, kept by the loss's log",
        ),
        Component(
            "index_loss_target",
            FP32 * b * s * s,
            "the target: the heads' attention summed and normalised "
            "[b, s, s] in fp32, kept by its product with the log ratio",
        ),
    ]
