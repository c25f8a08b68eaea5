"""Causal grouped-query attention with context parallelism: Q stays split over context, K and V are all-gathered.
Queries and keys are dh wide, values d_v (d_v = dh but for MLA, jaxcheck.model.mla)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name

from symbolic.recipes.jax.step import FLASH_BLOCK

from .flash import flash_attention
from .rules import constrain


def allgather_attention(
    q_BxSxAxD: jax.Array,
    k_BxSxKxD: jax.Array,
    v_BxSxKxV: jax.Array,
    flash: bool = True,
    sinks_A: jax.Array | None = None,
    cap: float | None = None,
) -> jax.Array:
    """softmax(q k^T / sqrt(dh) + causal mask) v with K/V all-gathered over context; returns [b, s, a, d_v].

    Per device (a/t query heads, k/t KV heads, s/c queries, all s keys): q [b, s/c, a/t, dh], k and v gathered to
    [b, s, k/t, dh] and [b, s, k/t, d_v]. flash: jaxcheck.model.flash over key blocks of min(s, FLASH_BLOCK), fp32
    score blocks [b, k/t, a/k, s/c, block] one at a time and an fp32 log-sum-exp [b, a/t, s/c] kept for backward; else
    XLA attention with fp32 scores and probabilities [b, k/t, a/k, s/c, s] (s x s materialised). sinks_A: gpt-oss's
    sink logit per head [a]; cap: Gemma 2's soft-capping of the scores (flash only: the rule table refuses sinks and
    caps without flash attention)."""
    b, s, a, dh = q_BxSxAxD.shape
    kh, d_v = k_BxSxKxD.shape[2], v_BxSxKxV.shape[3]
    q_BxSxAxD = constrain(q_BxSxAxD, ("batch", "seq", "heads", "head_dim"))
    k_BxSxKxD = checkpoint_name(constrain(k_BxSxKxD, ("batch", "kv_seq", "kv_heads", "head_dim")), "k_gathered")
    v_BxSxKxV = checkpoint_name(constrain(v_BxSxKxV, ("batch", "kv_seq", "kv_heads", "head_dim")), "v_gathered")
    if flash:
        out = flash_attention(q_BxSxAxD, k_BxSxKxD, v_BxSxKxV, sinks_A, min(s, FLASH_BLOCK), cap)
        return constrain(out, ("batch", "seq", "heads", "head_dim"))
    q_BxSxKxGxD = q_BxSxAxD.reshape(b, s, kh, a // kh, dh)
    scores_BxKxGxSxS = jnp.einsum(
        "bqkgd,bskd->bkgqs", q_BxSxKxGxD, k_BxSxKxD, preferred_element_type=jnp.float32
    ) / jnp.sqrt(jnp.float32(dh))
    # additive causal bias: the add's backward needs no mask, so no [s, s] bool is kept per layer
    bias_SxS = jnp.where(jnp.arange(s)[:, None] >= jnp.arange(s)[None, :], 0.0, jnp.finfo(jnp.float32).min)
    scores_BxKxGxSxS = scores_BxKxGxSxS + bias_SxS
    probs = jax.nn.softmax(scores_BxKxGxSxS, axis=-1).astype(v_BxSxKxV.dtype)
    out_BxSxKxGxV = jnp.einsum("bkgqs,bskd->bqkgd", probs, v_BxSxKxV)
    return constrain(out_BxSxKxGxV.reshape(b, s, a, d_v), ("batch", "seq", "heads", "head_dim"))
