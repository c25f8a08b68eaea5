"""The one table mapping logical tensor axes to the mesh axes (data, expert, pipe, tensor, context), the ZeRO groups,
and helpers built on them."""

from __future__ import annotations

import jax
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

from ..mesh import DATA

# logical axis -> mesh axis (None = replicated). Every parameter and constrained activation names its axes with these.
RULES: dict[str, str | tuple[str, ...] | None] = {
    "batch": DATA,  # b (the d*b sequences of one micro batch, over the d = (d/e) e ranks: data x expert)
    "stage": "pipe",  # leading axis of the stacked layers: pipeline stage
    "layer": None,  # layers within a stage (scanned)
    "seq": "context",  # s inside attention / MLP: split over context only (CP)
    "seq_sp": ("context", "tensor"),  # s between blocks with sequence parallelism (Megatron SP) and CP
    "vocab": "tensor",  # v: vocab-parallel embedding and LM head
    "embed": None,  # h
    "heads": "tensor",  # a: column-parallel Q, row-parallel out-projection
    "kv_heads": "tensor",  # k: column-parallel K, V
    "head_dim": None,  # dh (MLA: dh + d_r of a query/key head, d_v of a value head)
    "q_lora": None,  # q_r of MLA's query latent and its down-projection [h, q_r] (replicated, as Megatron-Core's)
    "kv_lora": None,  # kv_r + d_r of MLA's key/value latent and shared RoPE key [h, kv_r + d_r] (replicated)
    "mlp": "tensor",  # f: column-parallel gate/up, row-parallel down
    "norm": None,  # h of the RMSNorm scales, q_r and kv_r of MLA's latent norms (not split by t)
    "positions": None,  # s_p of GPT's learned position embeddings [s_p, h] (replicated)
    "kv_seq": None,  # s of K and V inside attention: all-gathered over context
    "micro": None,  # m: micro batches (scanned)
    "router": None,  # E of the router [h, E] (replicated)
    "experts": "expert",  # E of the routed experts' stacked weights [E, h, f_e], [E, f_e, h]: E/e on each rank
    "expert_mlp": "tensor",  # f_e of a routed expert split over tensor (t_e = t)
    "expert_mlp_whole": None,  # f_e of a routed expert kept whole on each tensor rank (t_e = 1)
    "eh_in": None,  # 2h of an MTP module's eh_proj [2h, h]: the normed embedding and hidden states concatenated
    "eh_out": "tensor",  # h of eh_proj's output columns: column-parallel (Megatron-Core's ColumnParallelLinear)
    "lin_k_heads": "tensor",  # n_gk of a Gated DeltaNet's query/key projections and convolutions (jaxcheck.model.gdn)
    "lin_v_heads": "tensor",  # n_gv of its value, gate, beta and alpha projections, dt_bias, A_log and out_proj
    "conv": None,  # K_c, the taps of its causal depthwise convolutions
}

# the ranks over which ZeRO shards a parameter's states: those holding the same copy of it. Dense parameters: the
# d data-parallel ranks (data x expert) and context. Routed experts (a parameter with an "experts" axis): their
# expert data-parallel group, data and context, and tensor where the experts are not split over it (t_e = 1), as
# Megatron-Core's distributed optimizer shards expert states over d t c / (e t_e) ranks.
DENSE_ZERO = DATA + ("context",)
EXPERT_ZERO = ("data", "context")


def act_names(plan) -> tuple[str, str, str]:
    """Logical axes of the [b, s, h] residual stream between blocks: s split over context, and over tensor with SP."""
    return ("batch", "seq_sp" if plan.train.sp else "seq", "embed")


def partition_spec(names: tuple[str | None, ...]) -> P:
    """PartitionSpec of a tensor whose axes carry these logical names (None = not sharded)."""
    return P(*(None if n is None else RULES[n] for n in names))


def constrain(x: jax.Array, names: tuple[str | None, ...]) -> jax.Array:
    """with_sharding_constraint by logical names; needs the mesh set by `jax.set_mesh` (see compile/step)."""
    return jax.lax.with_sharding_constraint(x, partition_spec(names))


def zero_group(names: tuple[str | None, ...]) -> tuple[str, ...]:
    """The mesh axes over which ZeRO shards the states of a parameter with these logical axes (see DENSE_ZERO)."""
    if "experts" not in names:
        return DENSE_ZERO
    return EXPERT_ZERO + (("tensor",) if "expert_mlp_whole" in names else ())


def _zero_axes(mesh_shape: dict[str, int], group: tuple[str, ...]) -> tuple[tuple[str, ...], int]:
    """The axes of a ZeRO group that have size > 1, in mesh order, and their product (d*c for dense parameters)."""
    order = tuple(mesh_shape)
    extra = tuple(sorted((a for a in group if mesh_shape[a] > 1), key=order.index))
    return extra, int(np.prod([mesh_shape[a] for a in extra]))


def zero1_spec(pspec: P, shape: tuple[int, ...], mesh_shape: dict[str, int], group: tuple[str, ...] = DENSE_ZERO) -> P:
    """ZeRO-1: add the group's axes (data, context for a dense parameter) to the first unsharded dimension divisible
    by their product (as MaxText's add_data_to_sharding)."""
    extra, n = _zero_axes(mesh_shape, group)
    if n == 1:
        return pspec
    entries = list(pspec) + [None] * (len(shape) - len(pspec))
    for i, (entry, size) in enumerate(zip(entries, shape)):
        if entry is None and size % n == 0:
            entries[i] = extra if len(extra) > 1 else extra[0]
            return P(*entries)
    return pspec


def layer_zero_spec(
    pspec: P, shape: tuple[int, ...], mesh_shape: dict[str, int], skip: int = 0, group: tuple[str, ...] = DENSE_ZERO
) -> P:
    """ZeRO-2/3: add the group's axes (data, context for a dense parameter) after the mesh axes of the first dimension
    from `skip` on (past the stacked [p, L/p] prefix: within one layer) whose per-device size their product divides;
    unchanged when none does. The major dimension of a layer, so that a layer's gather and reduce-scatter over the
    group are contiguous (on a minor one XLA:GPU transposes the whole stack into and out of the update's layer loop)."""
    extra, n = _zero_axes(mesh_shape, group)
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
