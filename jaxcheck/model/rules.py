"""The one table mapping logical tensor axes to the mesh axes (data, pipe, tensor, context), and helpers built on it."""
from __future__ import annotations

import jax
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

# logical axis -> mesh axis (None = replicated). Every parameter and constrained activation names its axes with these.
RULES: dict[str, str | tuple[str, ...] | None] = {
    "batch": "data",  # b (the d*b sequences of one micro batch)
    "stage": "pipe",  # leading axis of the stacked layers: pipeline stage
    "layer": None,  # layers within a stage (scanned)
    "seq": "context",  # s inside attention / MLP: split over context only (CP)
    "seq_sp": ("context", "tensor"),  # s between blocks with sequence parallelism (Megatron SP) and CP
    "vocab": "tensor",  # v: vocab-parallel embedding and LM head
    "embed": None,  # h
    "heads": "tensor",  # a: column-parallel Q, row-parallel out-projection
    "kv_heads": "tensor",  # k: column-parallel K, V
    "head_dim": None,  # dh
    "mlp": "tensor",  # f: column-parallel gate/up, row-parallel down
    "norm": None,  # h of the RMSNorm scales (not split by t)
    "kv_seq": None,  # s of K and V inside attention: all-gathered over context
    "micro": None,  # m: micro batches (scanned)
}


def partition_spec(names: tuple[str | None, ...]) -> P:
    """PartitionSpec of a tensor whose axes carry these logical names (None = not sharded)."""
    return P(*(None if n is None else RULES[n] for n in names))


def constrain(x: jax.Array, names: tuple[str | None, ...]) -> jax.Array:
    """with_sharding_constraint by logical names; needs the mesh set by `jax.set_mesh` (see compile/step)."""
    return jax.lax.with_sharding_constraint(x, partition_spec(names))


def _zero_axes(mesh_shape: dict[str, int]) -> tuple[tuple[str, ...], int]:
    """The mesh axes a ZeRO stage shards over (data, context; those of size > 1) and their product d*c."""
    extra = tuple(a for a in ("data", "context") if mesh_shape[a] > 1)
    return extra, int(np.prod([mesh_shape[a] for a in extra]))


def zero1_spec(pspec: P, shape: tuple[int, ...], mesh_shape: dict[str, int]) -> P:
    """ZeRO-1: add (data, context) to the first unsharded dimension divisible by d*c (as MaxText's add_data_to_sharding)."""
    extra, n = _zero_axes(mesh_shape)
    if n == 1:
        return pspec
    entries = list(pspec) + [None] * (len(shape) - len(pspec))
    for i, (entry, size) in enumerate(zip(entries, shape)):
        if entry is None and size % n == 0:
            entries[i] = extra if len(extra) > 1 else extra[0]
            return P(*entries)
    return pspec


def layer_zero_spec(pspec: P, shape: tuple[int, ...], mesh_shape: dict[str, int], skip: int = 0) -> P:
    """ZeRO-2/3: add (data, context) after the mesh axes of the first dimension from `skip` on (past the stacked
    [p, L/p] prefix: within one layer) whose per-device size d*c divides; unchanged when none does. The major
    dimension of a layer, so that a layer's gather and reduce-scatter over d*c are contiguous (on a minor one
    XLA:GPU transposes the whole stack into and out of the update's layer loop)."""
    extra, n = _zero_axes(mesh_shape)
    if n == 1:
        return pspec
    entries = list(pspec) + [None] * (len(shape) - len(pspec))
    for i, (entry, size) in enumerate(zip(entries, shape)):
        axes = () if entry is None else (entry,) if isinstance(entry, str) else tuple(entry)
        if i >= skip and (size // int(np.prod([mesh_shape[a] for a in axes]))) % n == 0:
            entries[i] = (axes + extra) if len(axes + extra) > 1 else extra[0]
            return P(*entries)
    return pspec


def named(mesh: jax.sharding.Mesh, pspec: P) -> NamedSharding:
    return NamedSharding(mesh, pspec)
