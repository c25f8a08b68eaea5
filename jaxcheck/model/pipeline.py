"""GPipe over the pipe mesh axis, forward and backward written out: p stages vmapped (spmd_axis_name="pipe"),
m + p - 1 iterations scanned, one gradient accumulator per stacked weight.

Forward: at iteration i stage j runs micro batch i - j (the stage buffer [p, b, s, h] shifts one stage forward by
jnp.roll, a collective-permute); each layer runs under jax.vjp and its activation residuals (what the remat policy
saves) are written in place into stacks [m + p - 1, L/p, p, ...]. Backward: the iterations in reverse; the stage buffer's cotangent
shifts one stage back; each stage walks its layers in reverse, rebuilds each layer's vjp from its residuals and its
weights, and adds the layer's weight gradient into the accumulator [p, L/p, ...] in place. Residual stacks,
accumulator and stage buffers are loop carries, updated in place: no iteration's slice is copied. Bubble iterations compute
on zeros or repeated inputs whose outputs never reach the loss, so their cotangents are zero and the result is exact.
With p = 1 this is gradient accumulation over the m micro batches. ZeRO-2/3: the accumulator is sharded over each
weight's ZeRO group (acc_shardings; data x expert x context, or a routed expert's expert data-parallel group), so each
layer's gradient is reduce-scattered into it; ZeRO-3: the stacked weights are sharded too (gather: their compute
layout), and each layer's are all-gathered inside the layer loop, forward and backward.
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp

from .residuals import Layout, join, split
from .rules import constrain
from .weightops import zeros_after


class Tape:
    """The layout of one layer's vjp closure, recorded while the forward is traced and used by the backward."""

    layout: Layout | None = None


def layer_of(tree, j):
    """Layer j of every stage: [p, L/p, ...] leaves -> [p, ...]."""
    return jax.tree.map(lambda a: jax.lax.dynamic_index_in_dim(a, j, axis=1, keepdims=False), tree)


def reduced(acc, shardings):
    """The accumulator in the parameters' layout: summed over data and context, like the parameters."""
    return acc if shardings is None else jax.lax.with_sharding_constraint(acc, shardings)


def layer_shardings(shardings):
    """The shardings of one layer [p, ...] of stacked [p, L/p, ...] leaves (the layer axis dropped)."""

    def drop(sh):
        spec = tuple(sh.spec) + (None,) * 2
        return jax.sharding.NamedSharding(sh.mesh, jax.sharding.PartitionSpec(spec[0], *tuple(sh.spec)[2:]))

    return None if shardings is None else jax.tree.map(drop, shardings)


def layer_weights(blocks, j, anchor, gather):
    """Layer j's weights [p, ...]; with ZeRO-3 all-gathered over data and context into `gather`'s layer layout. The
    barrier ties the gather to the loop's activation (anchor), so that XLA cannot hoist one gather of the whole
    loop-invariant stack out of the layer loop."""
    w = layer_of(blocks, j)
    if gather is None:
        return anchor, w
    anchor, w = jax.lax.optimization_barrier((anchor, w))
    return anchor, jax.lax.with_sharding_constraint(w, layer_shardings(gather))


def summed(dw, shardings):
    """One layer's weight gradient, summed over data and context before it joins the accumulator. The barrier keeps
    that all-reduce inside the layer loop: XLA:GPU otherwise moves it out (while-loop all-reduce code motion) and
    keeps the partial sums of every iteration in a second weight-sized buffer."""
    if shardings is None:
        return dw
    return jax.lax.optimization_barrier(jax.lax.with_sharding_constraint(dw, layer_shardings(shardings)))


def _at(stacks, i, j):
    """Iteration i, layer j of residual stacks [m + p - 1, L/p, p, ...] -> [p, ...]."""
    return [jax.lax.dynamic_index_in_dim(jax.lax.dynamic_index_in_dim(a, i, 0, False), j, 0, False) for a in stacks]


def _put(stacks, res, i, j):
    """Write one layer's residuals [p, ...] into the stacks at iteration i, layer j (in place in the loop carry)."""
    return [jax.lax.dynamic_update_slice(a, r[None, None], (i, j) + (0,) * r.ndim) for a, r in zip(stacks, res)]


def vjp_layer(layer_fn: Callable, tape: Tape):
    """Every stage's layer j under jax.vjp: output [p, b, s, h] and the activation residuals [p, ...]."""

    def one(w, x):
        y, vjp = jax.vjp(layer_fn, w, x)
        res, tape.layout = split(vjp, w)
        return y, res

    return jax.vmap(one, spmd_axis_name="pipe")


def layer_backward(tape: Tape):
    """Every stage's layer j backward: (weights [p, ...], residuals [p, ...], dy [p, b, s, h]) -> (dw, dx), the vjp
    closure rebuilt from the residuals and the weights (jaxcheck.model.residuals)."""
    return jax.vmap(lambda w, r, dy: join(r, tape.layout, w)(dy), spmd_axis_name="pipe")


def accumulate(acc, dw, j, shardings=None):
    """The accumulator [p, L/p, ...] with layer j's gradient [p, ...] added in place, after dw is summed over data and
    context (reduce-scattered with ZeRO-2/3, in `shardings`)."""
    dw = summed(dw, shardings)
    acc = jax.tree.map(lambda a, g: jax.lax.dynamic_update_index_in_dim(a, layer_of(a, j) + g, j, axis=1), acc, dw)
    return reduced(acc, shardings)


def gpipe_forward(layer_fn: Callable, tape: Tape, blocks, x_MxBxSxH: jax.Array, act: tuple[str, ...], gather=None):
    """Last-stage outputs [m, b, s, h] and the residual stacks [m + p - 1, L/p, p, ...] of every iteration, layer
    and stage, written in place as the layers run (gather: the blocks' compute layout, with ZeRO-3)."""
    p, n = jax.tree.leaves(blocks)[0].shape[:2]
    m = x_MxBxSxH.shape[0]
    iterations = m + p - 1
    names = ("stage",) + act
    stage_of = jnp.arange(p).reshape(p, 1, 1, 1)
    run = vjp_layer(layer_fn, tape)
    state0 = constrain(jnp.zeros((p,) + x_MxBxSxH.shape[1:], x_MxBxSxH.dtype), names)
    _, avals = jax.eval_shape(run, layer_of(blocks, 0), state0)
    stacks0 = [jnp.zeros((iterations, n) + a.shape, a.dtype) for a in avals]

    def layer(i, carry, j):
        x, stacks = carry
        x, w = layer_weights(blocks, j, x, gather)
        y, res = run(w, x)
        return (constrain(y, names), _put(stacks, res, i, j)), None

    def step(carry, i):
        state_PxBxSxH, stacks = carry
        shifted = jnp.roll(state_PxBxSxH, 1, axis=0)  # stage j receives stage j-1's output
        micro = jax.lax.dynamic_index_in_dim(x_MxBxSxH, jnp.minimum(i, m - 1), keepdims=True)
        state = constrain(jnp.where(stage_of == 0, micro, shifted), names)
        (out, stacks), _ = jax.lax.scan(lambda c, j: layer(i, c, j), (state, stacks), jnp.arange(n))
        return (out, stacks), out[p - 1]

    (_, stacks), last_IxBxSxH = jax.lax.scan(step, (state0, stacks0), jnp.arange(iterations))
    return last_IxBxSxH[p - 1 :], stacks


def gpipe_backward(
    layer_fn: Callable,
    tape: Tape,
    blocks,
    stacks,
    dy_MxBxSxH: jax.Array,
    act: tuple[str, ...],
    acc_shardings=None,
    gather=None,
):
    """Cotangents of the micro batches' inputs [m, b, s, h] and the stacked weights' gradients [p, L/p, ...]:
    iterations and layers in reverse, each layer's vjp rebuilt from its residuals (read in place) and weights
    (gathered again with ZeRO-3), its weight gradient summed over data and context (reduce-scattered with ZeRO-2/3)
    and added into the accumulator in place."""
    p, n = jax.tree.leaves(blocks)[0].shape[:2]
    m = dy_MxBxSxH.shape[0]
    names = ("stage",) + act
    stage_of = jnp.arange(p).reshape(p, 1, 1, 1)
    run = layer_backward(tape)
    # iteration i's last-stage output is micro batch i - (p - 1)
    dlast_IxBxSxH = jnp.concatenate([jnp.zeros((p - 1,) + dy_MxBxSxH.shape[1:], dy_MxBxSxH.dtype), dy_MxBxSxH])

    def layer(i, carry, j):
        dy, acc = carry
        dy, w = layer_weights(blocks, j, dy, gather)
        dw, dx = run(w, _at(stacks, i, j), dy)
        return (constrain(dx, names), accumulate(acc, dw, j, acc_shardings)), None

    def step(carry, xs):
        dstate_next, acc = carry
        i, dlast = xs
        dout = constrain(jnp.where(stage_of == p - 1, dlast[None], jnp.roll(dstate_next, -1, axis=0)), names)
        (dstate, acc), _ = jax.lax.scan(lambda c, j: layer(i, c, j), (dout, acc), jnp.arange(n), reverse=True)
        return (dstate, acc), dstate[0]

    acc0 = reduced(zeros_after(blocks, dy_MxBxSxH), acc_shardings)
    dstate0 = constrain(jnp.zeros((p,) + dy_MxBxSxH.shape[1:], dy_MxBxSxH.dtype), names)
    xs = (jnp.arange(m + p - 1), dlast_IxBxSxH)
    (_, acc), dmicro_IxBxSxH = jax.lax.scan(step, (dstate0, acc0), xs, reverse=True)
    return dmicro_IxBxSxH[:m], acc


def layer_residuals(layer_fn: Callable, w, x_BxSxH) -> list:
    """The activation residuals one layer writes into the stacks (shapes and dtypes, nothing computed)."""
    return jax.eval_shape(lambda w, x: split(jax.vjp(layer_fn, w, x)[1], w)[0], w, x_BxSxH)
