"""Flash attention in plain jax: causal GQA attention over key blocks with an online softmax and a custom VJP
(FlashAttention-2 style; no [s, s] tensor is materialised). Queries and keys are dh wide, values d_v (d_v = dh for GQA;
MLA's values are narrower than its query/key heads)."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

# fp32 score of a key after the query: finite, and exp(MASKED - max) is exactly 0 because key block 0 holds position
# 0, so every query's running max is a real score from the first block on (causal masks only)
MASKED = -1e30


def _block(x_BxSxKxD: jax.Array, j, block: int) -> jax.Array:
    """Key or value block j: [b, block, k, dh] (or d_v)."""
    return jax.lax.dynamic_slice_in_dim(x_BxSxKxD, j * block, block, axis=1)


def _scores(q_BxSxKxGxD, k_BxSxKxD, j, block: int, scale, cap=None):
    """fp32 masked scores [b, k, g, s, block] of all queries against key block j (causal over global positions);
    with a cap (Gemma 2's attn_logit_softcapping), cap tanh(scores / cap) before the mask."""
    s = q_BxSxKxGxD.shape[1]
    k_BxCxKxD = _block(k_BxSxKxD, j, block)
    x = jnp.einsum("bqkgd,bckd->bkgqc", q_BxSxKxGxD, k_BxCxKxD, preferred_element_type=jnp.float32) * scale
    x = x if cap is None else cap * jnp.tanh(x / cap)
    causal_SxC = jnp.arange(s)[:, None] >= (j * block + jnp.arange(block))[None, :]
    return jnp.where(causal_SxC, x, MASKED)


def _sink_logits(sinks_A, kh: int) -> jax.Array:
    """The sink logits [a] as the softmax statistics' [1, k, a/k, 1] (fp32)."""
    return sinks_A.astype(jnp.float32).reshape(1, kh, -1, 1)


def _forward(q_BxSxAxD, k_BxSxKxD, v_BxSxKxV, sinks_A, block: int, cap=None):
    """Online softmax over key blocks: the output [b, s, a, d_v] and the fp32 log-sum-exp [b, k, a/k, s]. With sink
    logits [a] (gpt-oss) each head's denominator also sums exp(sink), a key with no value."""
    b, s, a, dh = q_BxSxAxD.shape
    kh, d_v = k_BxSxKxD.shape[2], v_BxSxKxV.shape[3]
    scale = jnp.float32(dh) ** -0.5
    q5 = q_BxSxAxD.reshape(b, s, kh, a // kh, dh)

    def body(carry):
        j, mx, sm, acc = carry
        x = _scores(q5, k_BxSxKxD, j, block, scale, cap)
        new = jnp.maximum(mx, jnp.max(x, axis=-1))
        p = jnp.exp(x - new[..., None])
        decay = jnp.exp(mx - new)
        sm = sm * decay + jnp.sum(p, axis=-1)
        pv = jnp.einsum(
            "bkgqc,bckd->bkgqd",
            p.astype(v_BxSxKxV.dtype),
            _block(v_BxSxKxV, j, block),
            preferred_element_type=jnp.float32,
        )
        return j + 1, new, sm, acc * decay[..., None] + pv

    stats = (b, kh, a // kh, s)
    init = (
        jnp.int32(0),
        jnp.full(stats, MASKED, jnp.float32),
        jnp.zeros(stats, jnp.float32),
        jnp.zeros(stats + (d_v,), jnp.float32),
    )
    # a while_loop over a carried block index, not a scan over an index array: transposing the layer scan, jax's
    # partial evaluation hoists a scan's loop-invariant causal masks and stacks them, [s / block, b, a, s, block] bools
    _, mx, sm, acc = jax.lax.while_loop(lambda carry: carry[0] < s // block, body, init)
    if sinks_A is not None:  # the sink as one more column of the softmax, after the last block
        z = _sink_logits(sinks_A, kh)
        new = jnp.maximum(mx, z)
        decay = jnp.exp(mx - new)
        mx, sm, acc = new, sm * decay + jnp.exp(z - new), acc * decay[..., None]
    out = jnp.einsum("bkgqd->bqkgd", acc / sm[..., None]).reshape(b, s, a, d_v).astype(q_BxSxAxD.dtype)
    return out, mx + jnp.log(sm)


@partial(jax.custom_vjp, nondiff_argnums=(4, 5))
def flash_attention(
    q_BxSxAxD: jax.Array, k_BxSxKxD: jax.Array, v_BxSxKxV: jax.Array, sinks_A, block: int, cap: float | None = None
) -> jax.Array:
    """Causal softmax(q k^T / sqrt(dh)) v over key blocks; q [b, s, a, dh], k [b, s, k, dh], v [b, s, k, d_v];
    returns [b, s, a, d_v]; s % block == 0. sinks_A: a learned sink logit per head [a] in every query's softmax
    (gpt-oss), or None; cap: the scores soft-capped, cap tanh(scores / cap) (Gemma 2), or None.

    The forward scans the gathered keys and values in blocks of `block` positions, keeping a running max, sum and
    fp32 accumulator per query (Dao et al. 2022, Algorithm 1 without the query tiling); the backward scans the same
    blocks again and recomputes each block's probabilities from the saved log-sum-exp (Algorithm 2 / FA-2), so
    autodiff keeps only q, k, v, the output and the fp32 log-sum-exp. While a block runs (a/t heads, s/c queries,
    `block` keys): fp32 scores/probabilities [b, k/t, a/k, s/c, block] and, in the backward, their gradients; fp32
    carries [b, a/t, s/c] (max, sum), [b, a/t, s/c, d_v] (accumulator) and [b, a/t, s/c, dh] (dq). Shapes are global
    (GSPMD); the query axis may be split over context."""
    return _forward(q_BxSxAxD, k_BxSxKxD, v_BxSxKxV, sinks_A, block, cap)[0]


def _fwd(q, k, v, sinks, block, cap):
    out, lse = _forward(q, k, v, sinks, block, cap)
    return out, (q, k, v, sinks, out, lse)


def _bwd(block, cap, res, dout_BxSxAxD):
    """FlashAttention-2 backward: per key block, recompute P from the log-sum-exp, then dV, dP, dS, dQ, dK (with a
    cap, dS times tanh's derivative 1 - (capped / cap)^2); a sink's gradient -sum over batch and queries of P(sink) *
    rowsum(dO * O) (its value is zero, so dP(sink) = 0)."""
    q, k, v, sinks, out, lse = res
    b, s, a, dh = q.shape
    kh, d_v = k.shape[2], v.shape[3]
    scale = jnp.float32(dh) ** -0.5
    q5 = q.reshape(b, s, kh, a // kh, dh)
    do5 = dout_BxSxAxD.reshape(b, s, kh, a // kh, d_v)
    out5 = out.reshape(b, s, kh, a // kh, d_v).astype(jnp.float32)
    delta = jnp.einsum("bqkgd,bqkgd->bkgq", do5.astype(jnp.float32), out5)  # rowsum(dO * O)

    def body(carry):
        j, dq, dk_BxSxKxD, dv_BxSxKxV = carry
        k_blk, v_blk = _block(k, j, block), _block(v, j, block)
        x = _scores(q5, k, j, block, scale, cap)
        p = jnp.exp(x - lse[..., None])
        dv = jnp.einsum("bkgqc,bqkgd->bckd", p.astype(v.dtype), do5, preferred_element_type=jnp.float32)
        dp = jnp.einsum("bqkgd,bckd->bkgqc", do5, v_blk, preferred_element_type=jnp.float32)
        ds = p * (dp - delta[..., None]) * scale
        ds = (ds if cap is None else ds * (1 - jnp.square(x / cap))).astype(q.dtype)  # masked: p = 0
        dq = dq + jnp.einsum("bkgqc,bckd->bqkgd", ds, k_blk, preferred_element_type=jnp.float32)
        dk = jnp.einsum("bkgqc,bqkgd->bckd", ds, q5, preferred_element_type=jnp.float32)
        dk_BxSxKxD = jax.lax.dynamic_update_slice_in_dim(dk_BxSxKxD, dk.astype(k.dtype), j * block, axis=1)
        dv_BxSxKxV = jax.lax.dynamic_update_slice_in_dim(dv_BxSxKxV, dv.astype(v.dtype), j * block, axis=1)
        return j + 1, dq, dk_BxSxKxD, dv_BxSxKxV

    init = (jnp.int32(0), jnp.zeros(q5.shape, jnp.float32), jnp.zeros_like(k), jnp.zeros_like(v))
    _, dq, dk, dv = jax.lax.while_loop(lambda carry: carry[0] < s // block, body, init)
    dsinks = None
    if sinks is not None:
        p_sink = jnp.exp(_sink_logits(sinks, kh) - lse)  # [b, k, a/k, s]
        dsinks = (-jnp.sum(p_sink * delta, axis=(0, 3))).reshape(sinks.shape).astype(sinks.dtype)
    return dq.reshape(q.shape).astype(q.dtype), dk, dv, dsinks


flash_attention.defvjp(_fwd, _bwd)
