"""1F1B (PipeDream-flush, Megatron-LM's default schedule) over the pipe mesh axis, as one SPMD program.

A loop of ticks: at tick τ stage r runs the forward of micro batch i where τ = α i + r and the backward of micro batch
i where τ = α i + 2(p - 1) - r (α = 2 for p > 1, 1 for p = 1); the last stage runs a micro batch's forward, loss and
backward in one tick. Activations move one stage forward and cotangents one stage back per tick (jnp.roll of the
stage buffers: collective permutes), the first stage looks its micro batch up in the embedding each tick and adds
the lookup's gradient when its backward reaches it. Stage r holds a micro batch from its forward to its backward:
min(m, p - r) of them, Megatron-LM's 1F1B count (p - r - 1 warm-up forwards, then one forward and one backward).
Each layer's residuals go into a ring of K = min(m, p) slots per stage (micro batch i in slot i mod K), the most loaded
rank's count on every device: an SPMD program has one shape everywhere. Every stage computes every tick (vmap over
stages, spmd_axis_name="pipe"); a stage off its tick (α = 2: stages alternate, a checkerboard) computes on stale
inputs, its residual writes dropped and its gradients and loss selected away: the program holds 1F1B's memory and
does about twice GPipe's arithmetic. With p = 1 it is gradient accumulation, one
micro batch's residuals at a time.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .pipeline import Tape, accumulate, layer_backward, layer_of, layer_weights, reduced, vjp_layer
from .rules import constrain
from .weightops import zeros_after


@dataclass(frozen=True)
class Clock:
    """The 1F1B clock of p stages and m micro batches (plain ints, also for tests and the profile's checks)."""

    p: int
    m: int

    @property
    def alpha(self) -> int:
        """Ticks between two micro batches entering a stage: 2 with p > 1 (one forward and one backward per micro
        batch on alternating ticks), 1 with p = 1."""
        return 1 if self.p == 1 else 2

    @property
    def ticks(self) -> int:
        """Ticks from the first stage's first forward to its last backward: α (m - 1) + 2 (p - 1) + 1."""
        return self.alpha * (self.m - 1) + 2 * (self.p - 1) + 1

    @property
    def slots(self) -> int:
        """K: the residual ring's slots per stage, the most loaded stage's in-flight count min(m, p)."""
        return min(self.m, 2 * (self.p - 1) // self.alpha + 1)

    def offsets(self, backward: bool) -> np.ndarray:
        """The tick of stage r's forward (r) or backward (2(p - 1) - r) of micro batch 0, for r = 0 .. p - 1."""
        r = np.arange(self.p)
        return 2 * (self.p - 1) - r if backward else r

    def micro(self, tau, backward: bool):
        """Each stage's micro batch at tick tau ([p] ints, clipped to 0 .. m - 1) and whether it runs one ([p])."""
        q = tau - self.offsets(backward)
        valid = (q >= 0) & (q % self.alpha == 0) & (q < self.alpha * self.m)
        return jnp.clip(q // self.alpha, 0, self.m - 1), valid

    def in_flight(self, r: int) -> int:
        """Micro batches stage r holds at once (forward done, backward not yet): counted on the clock."""
        lives = [(self.alpha * i + r, self.alpha * i + 2 * (self.p - 1) - r) for i in range(self.m)]
        return max(sum(f <= tau <= b for f, b in lives) for tau in range(self.ticks))


class Stack(NamedTuple):
    """One stack of stacked layers [p, L/p, ...] and how its layers run: the layer function (under its remat
    policy), its vjp layout, ZeRO-3's compute layout (or None) and the accumulators' layout (or None)."""

    layer_fn: Callable
    tape: Tape
    blocks: Any
    gather: Any = None
    acc_shardings: Any = None


class Ends(NamedTuple):
    """What the pipeline's ends run each tick: the first stage's lookup (embed(params, tokens [b, s]) -> [b, s, h])
    and the last stage's summed loss (loss(head params, y [b, s, h], targets [b, s])), their parameters, and the
    layouts of their gradients (ZeRO-2/3) or None."""

    embed: Callable
    embed_params: Any
    loss: Callable
    head_params: Any
    embed_sharding: Any = None
    head_sharding: Any = None


def _keep(tree, shardings):
    return tree if shardings is None else jax.lax.with_sharding_constraint(tree, shardings)


_write = jax.vmap(lambda a, r, k, j: a.at[k, j].set(r, mode="drop"), in_axes=(0, 0, 0, None), spmd_axis_name="pipe")
_read = jax.vmap(lambda a, k, j: jax.lax.dynamic_index_in_dim(jax.lax.dynamic_index_in_dim(a, k, 0, False), j, 0, False),
                 in_axes=(0, 0, None), spmd_axis_name="pipe")


def _forward(stack: Stack, x, ring, slot, names):
    """Every stage's layers of one stack on x [p, b, s, h], each layer's residuals written into ring slot `slot`
    ([p]; K where the stage is off its tick: the write is dropped)."""
    n = jax.tree.leaves(stack.blocks)[0].shape[1]
    run = vjp_layer(stack.layer_fn, stack.tape)

    def layer(carry, j):
        x, ring = carry
        x, w = layer_weights(stack.blocks, j, x, stack.gather)
        y, res = run(w, x)
        return (constrain(y, names), [_write(a, r, slot, j) for a, r in zip(ring, res)]), None

    (x, ring), _ = jax.lax.scan(layer, (x, ring), jnp.arange(n))
    return x, ring


def _masked(tree, valid):
    """Each leaf [p, ...] where the stage ran (valid [p]), zero elsewhere: a select, so that what a stage off its tick
    computed from stale or never-written residuals (a NaN from a zero denominator, say) cannot reach the gradients."""
    return jax.tree.map(lambda x: jnp.where(valid.reshape((-1,) + (1,) * (x.ndim - 1)), x, jnp.zeros_like(x)), tree)


def _backward(stack: Stack, dy, ring, slot, valid, acc, names):
    """Every stage's layers of one stack in reverse on the cotangent dy [p, b, s, h], each layer's vjp rebuilt from
    the residuals in ring slot `slot` ([p]) and its weights, its weight gradient (zero where the stage is off its
    tick: `valid` [p]) added into the accumulator."""
    n = jax.tree.leaves(stack.blocks)[0].shape[1]
    back = layer_backward(stack.tape)

    cleared = jnp.where(valid, slot, ring[0].shape[1])  # the slots the backward consumes (K: none)

    def layer(carry, j):
        dy, acc, ring = carry
        dy, w = layer_weights(stack.blocks, j, dy, stack.gather)
        res = [_read(a, slot, j) for a in ring]
        dw, dx = _masked(back(w, res, dy), valid)
        # the consumed slot is cleared: the ring is this loop's carry as it is the forward's, so XLA keeps one layout
        # for it (read-only, XLA:GPU gave the backward a transposed copy of whole rings every tick: dumps of
        # grids/derive-1f1b.toml's llama3-8b t1 p4 and t2 p2 c2 b2, remat none); after the layer's gradients exist
        # (the barrier), so that the write is in place (before them, XLA:GPU copied whole rings with ZeRO-2/3)
        dw, dx, ring = jax.lax.optimization_barrier((dw, dx, ring))
        ring = [_write(a, jnp.zeros_like(r), cleared, j) for a, r in zip(ring, res)]
        return (constrain(dx, names), accumulate(acc, dw, j, stack.acc_shardings), ring), None

    (dx, acc, ring), _ = jax.lax.scan(layer, (dy, acc, ring), jnp.arange(n), reverse=True)
    return dx, acc, ring


def _ring(stack: Stack, x, slots: int):
    """Zeroed residual rings of one stack: per residual of a layer [p, ...], [p, K, L/p, ...]."""
    n = jax.tree.leaves(stack.blocks)[0].shape[1]
    _, avals = jax.eval_shape(vjp_layer(stack.layer_fn, Tape()), layer_of(stack.blocks, 0), x)
    return [jnp.zeros((a.shape[0], slots, n) + a.shape[1:], a.dtype) for a in avals]


def one_f_one_b(stacks: dict[str, Stack], ends: Ends, tokens, targets, act: tuple[str, ...]):
    """The summed loss over the m micro batches of tokens/targets [m, d*b, s] (scaled by 1/targets.size), and the
    gradients of the ends' parameters (embedding, head) and of every stack's blocks [p, L/p, ...], by the 1F1B clock."""
    first = next(iter(stacks.values()))
    p = jax.tree.leaves(first.blocks)[0].shape[0]
    m = tokens.shape[0]
    clock = Clock(p, m)
    names = ("stage",) + act
    stage = jnp.arange(p).reshape(p, 1, 1, 1)
    scale = jnp.float32(1.0 / targets.size)
    take = lambda a, i: jax.lax.dynamic_index_in_dim(a, i, keepdims=False)  # noqa: E731
    x_aval = jax.eval_shape(ends.embed, ends.embed_params, tokens[0])
    state0 = constrain(jnp.zeros((p,) + x_aval.shape, x_aval.dtype), names)
    rings0 = {name: _ring(st, state0, clock.slots) for name, st in stacks.items()}
    accs0 = {name: reduced(zeros_after(st.blocks, tokens), st.acc_shardings) for name, st in stacks.items()}
    dhead0 = _keep(zeros_after(ends.head_params, tokens), ends.head_sharding)
    dembed0 = _keep(zeros_after(ends.embed_params, tokens), ends.embed_sharding)

    def tick(carry, _):
        tau, fstate, bstate, rings, accs, dhead, dembed, total = carry
        rings, accs = dict(rings), dict(accs)
        fi, fvalid = clock.micro(tau, backward=False)
        x = ends.embed(ends.embed_params, take(tokens, fi[0]))
        x = constrain(jnp.where(stage == 0, x[None], jnp.roll(fstate, 1, axis=0)), names)
        for name, st in stacks.items():
            x, rings[name] = _forward(st, x, rings[name], jnp.where(fvalid, fi % clock.slots, clock.slots), names)
        last = fvalid[p - 1]
        loss, vjp = jax.vjp(lambda hd, y: ends.loss(hd, y, take(targets, fi[p - 1])), ends.head_params, x[p - 1])
        dh, dy = jax.tree.map(lambda g: jnp.where(last, g, jnp.zeros_like(g)), vjp(scale))
        dhead = _keep(jax.tree.map(jnp.add, dhead, dh), ends.head_sharding)
        # the head's gradient joins its accumulator before the stages' backward reads dy, as a trainer's loss
        # backward does: left free, XLA:GPU made it after, holding the fp32 logits gradient [b, s, v/t] (or the
        # micro batch's head gradient) through the stages' backward (dumps of grids/derive-1f1b.toml)
        dhead, dy = jax.lax.optimization_barrier((dhead, dy))
        total = total + jnp.where(last, loss, 0.0)
        bi, bvalid = clock.micro(tau, backward=True)
        dout = jnp.where(stage == p - 1, dy[None], jnp.roll(bstate, -1, axis=0))
        dout = constrain(_masked(dout, bvalid), names)
        for name, st in reversed(stacks.items()):
            dout, accs[name], rings[name] = _backward(st, dout, rings[name], bi % clock.slots, bvalid, accs[name],
                                                      names)
        _, lookup_vjp = jax.vjp(lambda e: ends.embed(e, take(tokens, bi[0])), ends.embed_params)
        (de,) = lookup_vjp(dout[0])  # zero unless stage 0 ran a backward
        dembed = _keep(jax.tree.map(jnp.add, dembed, de), ends.embed_sharding)
        return (tau + 1, x, dout, rings, accs, dhead, dembed, total), None

    # the tick counts in the carry (no [ticks] array of indices: nothing in the step grows with m but the batch)
    carry0 = (jnp.int32(0), state0, state0, rings0, accs0, dhead0, dembed0, jnp.float32(0))
    (*_, accs, dhead, dembed, total), _ = jax.lax.scan(tick, carry0, None, length=clock.ticks)
    return total * scale, dembed, dhead, accs
