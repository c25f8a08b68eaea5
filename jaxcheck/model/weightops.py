"""Ops that read a weight or a position table, written so that a layer's residuals are activations only.

The manual pipeline backward (jaxcheck.pipeline) stacks every residual of jax.vjp(layer) per layer and micro batch,
except leaves that are the layer's own inputs (its param-dtype weights), which it passes again in the backward. So
weights are cast to the compute dtype inside the op, forward and backward (one layer's cast exists at a time), the
norm scale multiplies without saving a broadcast of it, and RoPE recomputes its cos/sin table in the backward.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P

from .rules import DENSE_ZERO


def _einsum(spec: str, preferred, x, w):
    return jnp.einsum(spec, x, w, preferred_element_type=preferred)


def _cast(anchor, w: jax.Array, dtype, pin: bool):
    """w cast to dtype; with pin, behind one optimization barrier with the anchor (an activation), so that the cast
    depends on it and neither jax's partial evaluation of a differentiated scan nor XLA's loop-invariant code motion
    hoists a loop-invariant weight's cast out of the loop."""
    if pin:
        anchor, w = jax.lax.optimization_barrier((anchor, w))
    return anchor, w.astype(dtype)


@partial(jax.custom_vjp, nondiff_argnums=(0, 1, 4))
def cast_einsum(spec: str, preferred, x: jax.Array, w: jax.Array, pin: bool = False) -> jax.Array:
    """einsum(spec, x, w.astype(x.dtype)) with preferred_element_type=preferred; residuals x and w (param dtype).
    pin: for a weight read inside a scan that jax differentiates (the LM head in the loss scan)."""
    return _einsum(spec, preferred, *_cast(x, w, x.dtype, pin))


def _cast_einsum_fwd(spec, preferred, x, w, pin):
    return _einsum(spec, preferred, *_cast(x, w, x.dtype, pin)), (x, w)


def _cast_einsum_bwd(spec, preferred, pin, res, g):
    x, w = res
    (x, g), w_cast = _cast((x, g), w, x.dtype, pin)
    _, vjp = jax.vjp(partial(_einsum, spec, preferred), x, w_cast)
    dx, dw = vjp(g)
    return dx, dw.astype(w.dtype)


cast_einsum.defvjp(_cast_einsum_fwd, _cast_einsum_bwd)


@jax.custom_vjp
def scale(x_BxSxH: jax.Array, w_H: jax.Array) -> jax.Array:
    """x * w along the last axis in x's dtype (an RMSNorm scale); residuals x and w itself."""
    return x_BxSxH * w_H.astype(x_BxSxH.dtype)


def _scale_fwd(x, w):
    return scale(x, w), (x, w)


def _scale_bwd(res, g):
    x, w = res
    return g * w.astype(g.dtype), jnp.sum(g * x, axis=tuple(range(g.ndim - 1))).astype(w.dtype)


scale.defvjp(_scale_fwd, _scale_bwd)


def _rotate(x_BxSxNxD: jax.Array, theta: float, sign: float) -> jax.Array:
    """Rotate-half RoPE by sign x angle at global positions 0..s-1, in fp32, returned in x's dtype."""
    s, dh = x_BxSxNxD.shape[1], x_BxSxNxD.shape[3]
    freq = theta ** (-jnp.arange(0, dh // 2, dtype=jnp.float32) * 2.0 / dh)
    angle_SxD2 = jnp.arange(s, dtype=jnp.float32)[:, None] * freq[None, :]
    cos, sin = jnp.cos(angle_SxD2)[None, :, None, :], sign * jnp.sin(angle_SxD2)[None, :, None, :]
    x = x_BxSxNxD.astype(jnp.float32)
    x1, x2 = x[..., : dh // 2], x[..., dh // 2 :]
    return jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1).astype(x_BxSxNxD.dtype)


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def rope(x_BxSxNxD: jax.Array, theta: float) -> jax.Array:
    """Rotary position embedding (rotate-half form); linear in x, so the backward rotates back and saves nothing."""
    return _rotate(x_BxSxNxD, theta, 1.0)


rope.defvjp(lambda x, theta: (_rotate(x, theta, 1.0), None), lambda theta, _, g: (_rotate(g, theta, -1.0),))


def zeros_after(like, anchor):
    """zeros shaped like `like` (a tree), computed as min(|a|, 0) of one element a of `anchor`: the data dependency keeps
    XLA from scheduling the (otherwise operand-free) broadcast early and holding the buffer from the step's start.
    A NaN in the anchor makes these zeros NaN, as it would make the gradients they accumulate."""
    first = jax.tree.leaves(anchor)[0]
    zero = jnp.minimum(jnp.abs(jax.lax.index_in_dim(first.reshape(-1), 0, keepdims=False).astype(jnp.float32)), 0.0)
    return jax.tree.map(lambda x: jnp.broadcast_to(zero.astype(x.dtype), x.shape), like)


@partial(jax.custom_vjp, nondiff_argnums=(2,))
def lookup(table_VxH: jax.Array, tokens: jax.Array, dtype) -> jax.Array:
    """table[tokens] in param dtype, cast to dtype; the backward scatter-adds into a gradient created then."""
    return jnp.take(table_VxH, tokens, axis=0).astype(dtype)


def _lookup_fwd(table, tokens, dtype):
    return lookup(table, tokens, dtype), (table, tokens)


def _lookup_bwd(dtype, res, g):
    table, tokens = res
    grad = zeros_after(table, g).at[tokens].add(g.astype(table.dtype))
    return grad, None


lookup.defvjp(_lookup_fwd, _lookup_bwd)


def _rows(table: jax.Array, ids: jax.Array):
    """This tensor rank's row of each token in its [v/t, h] slice (0 outside it) and whether the token is there."""
    index = ids - jax.lax.axis_index("tensor") * table.shape[0]
    inside = (index >= 0) & (index < table.shape[0])
    return jnp.where(inside, index, 0), inside[..., None]


@partial(jax.custom_vjp, nondiff_argnums=(2, 3, 4))
def _local_lookup(table: jax.Array, ids: jax.Array, dtype, t: int, sp: bool) -> jax.Array:
    """Inside shard_map: the local rows' lookup, summed over the t tensor ranks (reduce-scattered along s with SP)."""
    rows, inside = _rows(table, ids)
    x = jnp.take(table, rows, axis=0).astype(dtype) * inside.astype(dtype)
    if t == 1:
        return x
    if sp:
        return jax.lax.psum_scatter(x, "tensor", scatter_dimension=x.ndim - 2, tiled=True)
    return jax.lax.psum(x, "tensor")


def _local_lookup_fwd(table, ids, dtype, t, sp):
    return _local_lookup(table, ids, dtype, t, sp), (table, ids)


def _local_lookup_bwd(dtype, t, sp, res, g):
    table, ids = res
    if sp and t > 1:
        g = jax.lax.all_gather(g, "tensor", axis=g.ndim - 2, tiled=True)
    rows, inside = _rows(table, ids)
    grad = zeros_after(table, g).at[rows].add(g.astype(table.dtype) * inside.astype(table.dtype))
    return jax.lax.psum(grad, DENSE_ZERO), None  # over the d data-parallel ranks (data x expert) and context


_local_lookup.defvjp(_local_lookup_fwd, _local_lookup_bwd)


def vocab_parallel_lookup(table_VxH: jax.Array, tokens: jax.Array, dtype, ids: P, out: P, sp: bool) -> jax.Array:
    """Megatron's vocab-parallel embedding: each tensor rank looks its tokens up in its own [v/t, h] rows (zero for
    tokens outside them) and the partial results are summed over tensor, reduce-scattered along s with sequence
    parallelism; the backward all-gathers the cotangent, scatter-adds it into a gradient of the local [v/t, h] rows
    made then, and sums that over data x context. Written with shard_map because GSPMD partitions a gather from a
    vocab-sharded table by all-gathering the whole table (an fp32 [v, h] buffer on every device, and a [v, h]
    gradient). ids, out: the PartitionSpecs of the [..., d*b, s] tokens and of the [..., d*b, s, h] result."""
    mesh = jax.sharding.get_abstract_mesh()
    if mesh.empty:  # no mesh (the unsharded reference in the tests)
        return lookup(table_VxH, tokens, dtype)
    local = partial(_local_lookup, dtype=dtype, t=mesh.shape.get("tensor", 1), sp=sp)
    return jax.shard_map(local, mesh=mesh, in_specs=(P("tensor", None), ids), out_specs=out)(table_VxH, tokens)
