"""Causal grouped-query attention with context parallelism: Q stays split over context, K and V are all-gathered."""
from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name

from symbolic.config.step import FLASH_BLOCK

from .flash import flash_attention
from .rules import constrain


def rope(x_BxSxNxD: jax.Array, theta: float) -> jax.Array:
    """Rotary position embedding (rotate-half form) at global positions 0..s-1; computed in fp32."""
    s, dh = x_BxSxNxD.shape[1], x_BxSxNxD.shape[3]
    freq = theta ** (-jnp.arange(0, dh // 2, dtype=jnp.float32) * 2.0 / dh)
    angle_SxD2 = jnp.arange(s, dtype=jnp.float32)[:, None] * freq[None, :]
    cos, sin = jnp.cos(angle_SxD2)[None, :, None, :], jnp.sin(angle_SxD2)[None, :, None, :]
    x = x_BxSxNxD.astype(jnp.float32)
    x1, x2 = x[..., : dh // 2], x[..., dh // 2:]
    out = jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)
    return out.astype(x_BxSxNxD.dtype)


def allgather_attention(q_BxSxAxD: jax.Array, k_BxSxKxD: jax.Array, v_BxSxKxD: jax.Array,
                        flash: bool = True) -> jax.Array:
    """softmax(q k^T / sqrt(dh) + causal mask) v with K/V all-gathered over context; returns [b, s, a, dh].

    Per device (a/t query heads, k/t KV heads, s/c queries, all s keys): q [b, s/c, a/t, dh], k and v gathered to
    [b, s, k/t, dh]. flash: jaxcheck.model.flash over key blocks of min(s, FLASH_BLOCK), fp32 score blocks
    [b, k/t, a/k, s/c, block] one at a time and an fp32 log-sum-exp [b, a/t, s/c] kept for backward; else XLA
    attention with fp32 scores and probabilities [b, k/t, a/k, s/c, s] (s x s materialised)."""
    b, s, a, dh = q_BxSxAxD.shape
    kh = k_BxSxKxD.shape[2]
    q_BxSxAxD = constrain(q_BxSxAxD, ("batch", "seq", "heads", "head_dim"))
    k_BxSxKxD = checkpoint_name(constrain(k_BxSxKxD, ("batch", "kv_seq", "kv_heads", "head_dim")), "k_gathered")
    v_BxSxKxD = checkpoint_name(constrain(v_BxSxKxD, ("batch", "kv_seq", "kv_heads", "head_dim")), "v_gathered")
    if flash:
        out = flash_attention(q_BxSxAxD, k_BxSxKxD, v_BxSxKxD, min(s, FLASH_BLOCK))
        return constrain(out, ("batch", "seq", "heads", "head_dim"))
    q_BxSxKxGxD = q_BxSxAxD.reshape(b, s, kh, a // kh, dh)
    scores_BxKxGxSxS = jnp.einsum("bqkgd,bskd->bkgqs", q_BxSxKxGxD, k_BxSxKxD,
                                  preferred_element_type=jnp.float32) / jnp.sqrt(jnp.float32(dh))
    causal_SxS = jnp.arange(s)[:, None] >= jnp.arange(s)[None, :]
    scores_BxKxGxSxS = jnp.where(causal_SxS, scores_BxKxGxSxS, jnp.finfo(jnp.float32).min)
    probs = jax.nn.softmax(scores_BxKxGxSxS, axis=-1).astype(v_BxSxKxD.dtype)
    out_BxSxKxGxD = jnp.einsum("bkgqs,bskd->bqkgd", probs, v_BxSxKxD)
    return constrain(out_BxSxKxGxD.reshape(b, s, a, dh), ("batch", "seq", "heads", "head_dim"))
