"""Routed experts with Megatron-Core's all-to-all token dispatcher, written with jax.shard_map: each device routes its
own sequence-parallel tokens, sorts their assignments by expert, keeps C per expert (capacity, tokens beyond it are
dropped), exchanges [E, C, h] buffers over "expert", all-gathers them over "tensor" when the experts are split over
it (t_e = t > 1), runs its E/e experts as batched matmuls, and sends the outputs back to be combined.

Per device, with T = b s / (c t) tokens of one micro batch and C = ceil(C_f T k_e / E) (`capacity`):
send and return buffers [E, C, h]; received [e, E/e, C, h], gathered [t_e, e, E/e, C, h] (t_e = t > 1), each local
expert's rows [E/e, t_e e C, h] (expert-major); expert activations [E/e, t_e e C, f_e / t_e]; per-assignment outputs
[T k_e, h]. Slots and flags: [E, C] and [T k_e] int32, [T k_e] bool.
"""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name
from jax.sharding import PartitionSpec as P

from .weightops import cast_einsum


def capacity(tokens: int, k_e: int, E: int, C_f: float) -> int:
    """C: the assignments each expert takes from one device's T tokens, ceil(C_f T k_e / E) (GShard, Megatron-Core's
    moe_expert_capacity_factor with moe_pad_expert_input_to_capacity); C_f = E / k_e gives C = T (nothing dropped)."""
    return max(1, math.ceil(C_f * tokens * k_e / E - 1e-9))


def routing_slots(experts_TxK: jax.Array, E: int, C: int):
    """Where each assignment goes, without a [T, E, C] one-hot: the T k_e assignments (a = token k_e + j) sorted by
    expert (a stable argsort), each one's position in its expert's group, kept while under C. Returns the token
    each send-buffer slot (expert, c) holds [E, C] (slots past the expert's count hold token 0: their outputs are
    never combined, so their cotangents are exactly zero), and each assignment's slot expert C + position [T k_e]
    with whether it was kept [T k_e]."""
    T, k = experts_TxK.shape
    expert_A = experts_TxK.reshape(T * k)
    order_A = jnp.argsort(expert_A, stable=True)
    count_E = jnp.zeros((E,), jnp.int32).at[expert_A].add(1)
    start_E = jnp.cumsum(count_E) - count_E
    c_C = jnp.arange(C, dtype=jnp.int32)
    sorted_ExC = jnp.minimum(start_E[:, None] + c_C[None, :], T * k - 1)
    token_ExC = jnp.where(c_C[None, :] < count_E[:, None], order_A[sorted_ExC] // k, 0)
    rank_A = jnp.zeros((T * k,), jnp.int32).at[order_A].set(jnp.arange(T * k, dtype=jnp.int32))
    position_A = rank_A - start_E[expert_A]
    kept_A = position_A < C
    slot_A = expert_A * C + jnp.minimum(position_A, C - 1)
    return token_ExC, slot_A, kept_A


def dispatch(x_TxH: jax.Array, experts_TxK: jax.Array, E: int, C: int):
    """The send buffer [E, C, h] (a gather of token rows) and the combine's slots and kept flags (routing_slots)."""
    token_ExC, slot_A, kept_A = (checkpoint_name(a, "moe_slots") for a in routing_slots(experts_TxK, E, C))
    return jnp.take(x_TxH, token_ExC, axis=0), slot_A, kept_A


def combine(back_ExCxH: jax.Array, slot_A: jax.Array, kept_A: jax.Array, weights_TxK: jax.Array) -> jax.Array:
    """Each token's output [T, h]: its k_e experts' outputs (a gather from the returned buffer) weighted by its router
    weights, a dropped assignment's weight zero, summed in the tokens' dtype (as Megatron-Core's unpermute
    scatter-adds). Elementwise, not a dot: a dot made XLA:GPU transpose the whole stack of these residuals."""
    T, k = weights_TxK.shape
    h = back_ExCxH.shape[-1]
    y_AxH = checkpoint_name(jnp.take(back_ExCxH.reshape(-1, h), slot_A, axis=0), "moe_expert_out")
    weights_A = jnp.where(kept_A, weights_TxK.reshape(T * k), 0).astype(y_AxH.dtype)
    return jnp.sum((y_AxH * weights_A[:, None]).reshape(T, k, h), axis=1)


def experts_ffn(in_ExNxH: jax.Array, gate_ExHxF: jax.Array, up_ExHxF: jax.Array, down_ExFxH: jax.Array, biases=None):
    """The local experts' SwiGLU as batched matmuls over the expert axis: each local expert's rows [E/e, n, h]
    (n = t_e e C) -> [E/e, n, h], partial sums over the f_e shards when they are split. biases: gpt-oss's per-expert
    gate and up biases [E/e, f_e/t_e] and down bias [E/e, h] (zero but on one tensor rank where the f_e shards' partial
    sums are summed after), or None."""

    def biased(y, b):
        return y if biases is None else y + b[:, None, :].astype(y.dtype)

    gate_b, up_b, down_b = biases if biases is not None else (None, None, None)
    gate = checkpoint_name(biased(cast_einsum("enh,ehf->enf", None, in_ExNxH, gate_ExHxF), gate_b), "moe_gate")
    up = checkpoint_name(biased(cast_einsum("enh,ehf->enf", None, in_ExNxH, up_ExHxF), up_b), "moe_up")
    act = checkpoint_name(jax.nn.silu(gate) * up, "moe_swiglu")
    return biased(cast_einsum("enf,efh->enh", None, act, down_ExFxH), down_b)


def _local(
    x_BxSxH, experts_BxSxK, weights_BxSxK, gate, up, down, biases=None, *, E: int, C_f: float, e: int, gather: bool
):
    """One device's routed experts: its tokens [b, s/(c t), h] -> their routed output, same shape. e: expert-parallel
    size (all-to-all when > 1); gather: all-gather over tensor before the experts (t_e = t > 1); biases: the experts'
    (gate, up, down) biases or None."""
    b, s, h = x_BxSxH.shape
    k = experts_BxSxK.shape[-1]
    C = capacity(b * s, k, E, C_f)
    send, slot_A, kept_A = dispatch(x_BxSxH.reshape(b * s, h), experts_BxSxK.reshape(b * s, k), E, C)
    buf = send.reshape(e, E // e, C, h)
    if e > 1:  # [experts' rank, E/e, C, h] -> [source rank, E/e, C, h]
        buf = jax.lax.all_to_all(buf, "expert", 0, 0, tiled=True)
    buf = jax.lax.all_gather(buf, "tensor", axis=0) if gather else buf[None]  # [g, x, E/e, C, h]
    g = buf.shape[0]
    # expert-major rows, transposed one layer at a time: stacked as [g, x, E/e, C, h] residuals, XLA:GPU transposed
    # the whole stack for the backward's batched matmuls
    rows = jnp.moveaxis(buf, 2, 0).reshape(E // e, g * e * C, h)
    if biases is not None and gather:  # the down bias once in the sum over the f_e shards
        gate_b, up_b, down_b = biases
        biases = (gate_b, up_b, jnp.where(jax.lax.axis_index("tensor") == 0, down_b, jnp.zeros_like(down_b)))
    out = experts_ffn(checkpoint_name(rows, "moe_dispatched"), gate, up, down, biases)
    out = jnp.moveaxis(out.reshape(E // e, g, e, C, h), 0, 2)
    out = jax.lax.psum_scatter(out, "tensor", scatter_dimension=0) if gather else out[0]
    if e > 1:  # back to the source ranks: [experts' rank, E/e, C, h]
        out = jax.lax.all_to_all(out, "expert", 0, 0, tiled=True)
    y = combine(out.reshape(E, C, h), slot_A, kept_A, weights_BxSxK.reshape(b * s, k))
    return y.reshape(b, s, h)


def routed_experts(
    x_BxSxH, experts_BxSxK, weights_BxSxK, gate, up, down, act: P, expert: P, C_f: float, expert_tp: bool, biases=None
) -> jax.Array:
    """The routed experts' output [b, s, h] in the tokens' layout `act` (the between-blocks [b, s/(c t), h] one),
    under shard_map over the whole mesh. gate, up [E, h, f_e] and down [E, f_e, h] in their layouts (`expert`: that
    of gate and up; down's swaps its last two entries); expert_tp: f_e is split over tensor (t_e = t). Without a mesh
    (an unsharded reference) the same computation on one device. biases: gpt-oss's (gate [E, f_e], up [E, f_e], down
    [E, h]) in the layouts of their weights' rows, or None."""
    E = gate.shape[0]
    mesh = jax.sharding.get_abstract_mesh()
    if mesh.empty:
        return _local(x_BxSxH, experts_BxSxK, weights_BxSxK, gate, up, down, biases, E=E, C_f=C_f, e=1, gather=False)
    e, t = mesh.shape.get("expert", 1), mesh.shape.get("tensor", 1)
    local = partial(_local, E=E, C_f=C_f, e=e, gather=expert_tp and t > 1)
    down_spec = P(expert[0], expert[2], expert[1])
    bias_specs = None if biases is None else (P(expert[0], expert[2]), P(expert[0], expert[2]), P(expert[0], None))
    return jax.shard_map(
        local, mesh=mesh, in_specs=(act, act, act, expert, expert, down_spec, bias_specs), out_specs=act
    )(x_BxSxH, experts_BxSxK, weights_BxSxK, gate, up, down, biases)
