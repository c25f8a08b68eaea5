"""1F1B (PipeDream-flush, Megatron-LM's default schedule) over the pipe mesh axis, as one SPMD program.

A loop of ticks: at tick τ stage r runs the forward of micro batch i where τ = 2i + r, or the backward of micro batch
i where τ = 2i + 2p - 1 - r: each stage alternates forward and backward as Megatron-LM's steady state does, and
holds a micro batch from its forward to its backward, min(m, p - r) of them (p - r - 1 warm-up forwards). The last
stage's loss ends the tick of its forward and its cotangent starts the next tick's backward; activations move one
stage forward and cotangents one stage back per tick (jnp.roll of the stage buffers: collective permutes). Every
stage computes every tick (vmap over stages, spmd_axis_name="pipe"), in one loop over its layers that runs layer j's
forward and layer L/p - 1 - j's backward; the op a stage is not on this tick computes on stale inputs, its residual
writes dropped and its gradients selected away: the program holds 1F1B's memory and does about twice GPipe's
arithmetic. Each layer's residuals go into a ring of K = min(m, p) slots per stage (micro batch i in slot i mod K),
the most loaded rank's count on every device (an SPMD program has one shape everywhere); the ring is read and written
in the same loop, so XLA gives it one layout and one sharding. The first stage looks its micro batch up in the
embedding each tick and adds the lookup's gradient when its backward reaches it. With p = 1 it is gradient
accumulation, one micro batch's residuals at a time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .pipeline import Tape, accumulate, layer_backward, layer_of, layer_shardings, layer_weights, reduced, vjp_layer
from .rules import constrain
from .weightops import zeros_after


@dataclass(frozen=True)
class Clock:
    """The 1F1B clock of p stages and m micro batches (plain ints, also for tests and the profile's checks)."""

    p: int
    m: int

    @property
    def ticks(self) -> int:
        """Ticks from the first stage's first forward to its last backward: 2 (m - 1) + 2p - 1 + 1."""
        return 2 * self.m + 2 * self.p - 2

    @property
    def slots(self) -> int:
        """K: the residual ring's slots per stage, the most loaded stage's in-flight count min(m, p)."""
        return min(self.m, self.p)

    def offsets(self, backward: bool) -> np.ndarray:
        """The tick of stage r's forward (r) or backward (2p - 1 - r) of micro batch 0, for r = 0 .. p - 1."""
        r = np.arange(self.p)
        return 2 * self.p - 1 - r if backward else r

    def micro(self, tau, backward: bool):
        """Each stage's micro batch at tick tau ([p] ints, clipped to 0 .. m - 1) and whether it runs one ([p])."""
        q = tau - self.offsets(backward)
        valid = (q >= 0) & (q % 2 == 0) & (q < 2 * self.m)
        return jnp.clip(q // 2, 0, self.m - 1), valid

    def in_flight(self, r: int) -> int:
        """Micro batches stage r holds at once (forward done, backward not yet): counted on the clock."""
        f, b = self.offsets(False)[r], self.offsets(True)[r]
        return max(sum(2 * i + f <= tau <= 2 * i + b for i in range(self.m)) for tau in range(self.ticks))


class Stack(NamedTuple):
    """One stack of stacked layers [p, L/p, ...] and how its layers run: the layer function (under its remat
    policy), its vjp layout, ZeRO-3's compute layout (or None) and the accumulators' layout (or None)."""

    layer_fn: Callable
    tape: Tape
    blocks: Any
    gather: Any = None
    acc_shardings: Any = None
    layout: Any = None  # ZeRO-2/3: the blocks' compute layout, which a layer's gradient takes before its reduce-scatter


class Ends(NamedTuple):
    """What the pipeline's ends run each tick: the first stage's lookup (embed(params, tokens [b, s]) -> [b, s, h])
    and the last stage's summed loss (loss(head params, y [b, s, h], targets [b, s], shifted)), their parameters, the
    layouts of their gradients (ZeRO-2/3) or None. With multi-token prediction (else None): the last stage's lookup
    of its modules' inputs (shifted(embed params, targets) -> [n_mtp, b, s, h]) and the modules but their final norms
    (trunk(trunk params, y, shifted) -> the states the heads read), with their parameters and gradient layouts;
    then loss(head params, states, targets) is the heads' alone."""

    embed: Callable
    embed_params: Any
    loss: Callable
    head_params: Any
    embed_sharding: Any = None
    head_sharding: Any = None
    shifted: Callable | None = None
    trunk: Callable | None = None
    trunk_params: Any = None
    trunk_sharding: Any = None


def _keep(tree, shardings):
    return tree if shardings is None else jax.lax.with_sharding_constraint(tree, shardings)


_write = jax.vmap(lambda a, r, k, j: a.at[k, j].set(r, mode="drop"), in_axes=(0, 0, 0, None), spmd_axis_name="pipe")
_read = jax.vmap(
    lambda a, k, j: jax.lax.dynamic_index_in_dim(jax.lax.dynamic_index_in_dim(a, k, 0, False), j, 0, False),
    in_axes=(0, 0, None),
    spmd_axis_name="pipe",
)


def _masked(tree, valid):
    """Each leaf [p, ...] where the stage ran (valid [p]), zero elsewhere: a select, so that what a stage off its tick
    computed from stale or never-written residuals (a NaN from a zero denominator, say) cannot reach the gradients."""
    return jax.tree.map(lambda x: jnp.where(valid.reshape((-1,) + (1,) * (x.ndim - 1)), x, jnp.zeros_like(x)), tree)


def _ring(stack: Stack, x, slots: int):
    """Zeroed residual rings of one stack: per residual of a layer [p, ...], [p, K, L/p, ...]; traced on abstract
    inputs, which records the stack's vjp layout on its tape (a backward may run before its stack's forward)."""
    n = jax.tree.leaves(stack.blocks)[0].shape[1]
    _, avals = jax.eval_shape(vjp_layer(stack.layer_fn, stack.tape), layer_of(stack.blocks, 0), x)
    return [jnp.zeros((a.shape[0], slots, n) + a.shape[1:], a.dtype) for a in avals]


def _segments(sizes: list[int]) -> list[tuple[int, int, int, int]]:
    """The combined layer loop over all N layers of the stacks in order (forward layer k, backward layer N - 1 - k),
    cut where either side changes stack: (start, stop, forward stack, backward stack) per piece."""
    starts = np.cumsum([0] + sizes)
    owner = lambda k: int(np.searchsorted(starts, k, side="right") - 1)  # noqa: E731
    n = starts[-1]
    cuts = sorted({0, n, *starts[1:-1], *(n - starts[1:-1])})
    return [(a, b, owner(a), owner(n - 1 - a)) for a, b in zip(cuts, cuts[1:]) if a < b]


def _layers(stacks: list[Stack], x, dy, rings: list, accs: list, slots, valid, names):
    """One tick's layer loop on every stage: forward of layer k on x [p, b, s, h] (its residuals written into ring
    slot slots[0] ([p]; K where the stage runs no forward: dropped)), backward of layer N - 1 - k on the cotangent dy
    (its vjp rebuilt from the residuals in slot slots[1] and its weights, its gradients, zero where the stage runs no
    backward (valid[1]), added into the accumulator)."""
    sizes = [jax.tree.leaves(st.blocks)[0].shape[1] for st in stacks]
    starts, total = np.cumsum([0] + sizes), sum(sizes)
    for start, stop, fs, bs in _segments(sizes):
        fwd, bwd = stacks[fs], stacks[bs]
        run, back = vjp_layer(fwd.layer_fn, fwd.tape), layer_backward(bwd.tape)

        one = fs == bs  # one ring: the backward reads its slot, then the forward writes another

        def layer(carry, k, fs=fs, bs=bs, fwd=fwd, bwd=bwd, run=run, back=back, one=one):
            x, dy, bring, fring, acc = carry
            jf, jb = k - starts[fs], total - 1 - k - starts[bs]
            x, w = layer_weights(fwd.blocks, jf, x, fwd.gather)
            y, res = run(w, x)
            # the backward begins once the forward's layer is done: left free, XLA:GPU ran the two side by side and
            # the forward's working set (weights cast, inputs gathered over t) joined the backward's peak
            # (llama2-13b t4 p5 selective); the layer's residuals wait for the write below
            y, res, dy = jax.lax.optimization_barrier((y, res, dy))
            dy, wb = layer_weights(bwd.blocks, jb, dy, bwd.gather)
            dw, dx = _masked(back(wb, [_read(a, slots[1], jb) for a in bring], dy), valid[1])
            # the forward writes once the backward's reads are done (the gradients exist), so that it writes in
            # place: written first or left free, XLA:GPU copied whole rings (grids/derive-1f1b.toml's llama2-7b
            # zero2 and zero3, llama2-13b t4 p5)
            dw, dx, bring = jax.lax.optimization_barrier((dw, dx, bring))
            if bwd.layout is not None:
                # the gradient in the weights' layout first: GSPMD otherwise carried the ZeRO-2/3 split of the
                # gradient (a major dimension over d*c) back into the residuals it is made from, and so into the
                # rings, resharding every forward write through replication (llama3-8b d2 t2 p2 c2 s1024 none zero2)
                dw = jax.lax.with_sharding_constraint(dw, layer_shardings(bwd.layout))
            acc = accumulate(acc, dw, jb, bwd.acc_shardings)
            written = [_write(a, r, slots[0], jf) for a, r in zip(bring if one else fring, res)]
            bring, fring = (written, None) if one else (bring, written)
            return (constrain(y, names), constrain(dx, names), bring, fring, acc), None

        carry = (x, dy, rings[bs], None if one else rings[fs], accs[bs])
        if stop - start == 1 and len(sizes) > 1:
            # a one-layer piece of two stacks (a one-layer dense stack): a scan of one trip XLA removes, and then its
            # accumulator update and weight casts were no longer in place (GQA probes in no grid, 1 dense + 2 MoE
            # layers at p = 1: -8.86 % against the table, 2 + 4 layers: -0.63 %); a while loop whose bound XLA
            # cannot read (behind an optimization barrier) stays a loop
            bound = jax.lax.optimization_barrier(jnp.int32(stop))
            (_, x, dy, rings[bs], fring, accs[bs]) = jax.lax.while_loop(
                lambda c: c[0] < bound, lambda c: (c[0] + 1,) + layer(c[1:], c[0])[0], (jnp.int32(start),) + carry
            )
        else:
            (x, dy, rings[bs], fring, accs[bs]), _ = jax.lax.scan(layer, carry, jnp.arange(start, stop))
        if not one:
            rings[fs] = fring
    return x, dy


def one_f_one_b(stacks: dict[str, Stack], ends: Ends, tokens, targets, act: tuple[str, ...]):
    """The summed loss over the m micro batches of tokens/targets [m, d*b, s] (scaled by 1/targets.size), and the
    gradients of the ends' parameters (embedding, head; the MTP modules' trunk, None without) and of every stack's
    blocks [p, L/p, ...], by the 1F1B clock."""
    names_of = list(stacks)
    order = [stacks[name] for name in names_of]
    p = jax.tree.leaves(order[0].blocks)[0].shape[0]
    m = tokens.shape[0]
    clock = Clock(p, m)
    names = ("stage",) + act
    stage = jnp.arange(p).reshape(p, 1, 1, 1)
    scale = jnp.float32(1.0 / targets.size)
    take = lambda a, i: jax.lax.dynamic_index_in_dim(a, i, keepdims=False)  # noqa: E731
    x_aval = jax.eval_shape(ends.embed, ends.embed_params, tokens[0])
    state0 = constrain(jnp.zeros((p,) + x_aval.shape, x_aval.dtype), names)
    rings0 = [_ring(st, state0, clock.slots) for st in order]
    accs0 = [reduced(zeros_after(st.blocks, tokens), st.acc_shardings) for st in order]
    dhead0 = _keep(zeros_after(ends.head_params, tokens), ends.head_sharding)
    dembed0 = _keep(zeros_after(ends.embed_params, tokens), ends.embed_sharding)

    def tick(carry, _):
        tau, fstate, bstate, dlast, rings, accs, dhead, dembed, dtrunk, total = carry
        rings, accs = list(rings), list(accs)
        fi, fvalid = clock.micro(tau, backward=False)
        bi, bvalid = clock.micro(tau, backward=True)
        x = ends.embed(ends.embed_params, take(tokens, fi[0]))
        x = constrain(jnp.where(stage == 0, x[None], jnp.roll(fstate, 1, axis=0)), names)
        dy = jnp.where(stage == p - 1, dlast[None], jnp.roll(bstate, -1, axis=0))
        dy = constrain(_masked(dy, bvalid), names)
        slots = (jnp.where(fvalid, fi % clock.slots, clock.slots), bi % clock.slots)
        x, dx = _layers(order, x, dy, rings, accs, slots, (fvalid, bvalid), names)
        # the loss once the layers are done: with one layer per stage XLA removes the layer loop (one trip) and ran
        # the loss beside the layer's ops (moe-wide-512 d2 e2 t2 p2 selective: expert weights and transposes live
        # with the logits)
        x, dx, rings, accs = jax.lax.optimization_barrier((x, dx, rings, accs))
        # the last stage's loss: its cotangent starts that stage's backward at the next tick
        last, t_last = fvalid[p - 1], take(targets, fi[p - 1])
        keep_last = lambda tree: jax.tree.map(lambda g: jnp.where(last, g, jnp.zeros_like(g)), tree)  # noqa: E731
        if ends.trunk is None:
            loss, vjp = jax.vjp(lambda hd, y: ends.loss(hd, y, t_last), ends.head_params, x[p - 1])
            dh, dlast = keep_last(vjp(scale))
            dhead, dshifted = _keep(jax.tree.map(jnp.add, dhead, dh), ends.head_sharding), None
        else:
            # MTP: the modules' inputs looked up outside the loss (their gradient waits for the head's, below); the
            # heads' backward (logits gradients, the head's gradient) before the modules' layers' backward, as a
            # trainer's output layer makes its weight gradient before the layer below runs: left free, XLA:GPU
            # ordered the two differently from one configuration to the next (grids/derive-mtp.toml)
            shifted = ends.shifted(ends.embed_params, t_last)
            states, trunk_vjp = jax.vjp(ends.trunk, ends.trunk_params, x[p - 1], shifted)
            loss, heads_vjp = jax.vjp(lambda hd, st: ends.loss(hd, st, t_last), ends.head_params, states)
            dh, dstates = keep_last(heads_vjp(scale))
            dhead = _keep(jax.tree.map(jnp.add, dhead, dh), ends.head_sharding)
            dhead, dstates = jax.lax.optimization_barrier((dhead, dstates))
            dtr, dlast, dshifted = keep_last(trunk_vjp(dstates))
            dtrunk = _keep(jax.tree.map(jnp.add, dtrunk, dtr), ends.trunk_sharding)
        total = total + jnp.where(last, loss, 0.0)
        # the lookups' gradient once the head's has joined its accumulator: left free, XLA:GPU made both at once,
        # two [v/t, h] fp32 buffers (llama3-8b d2 t2 p2 c2 s1024 none zero2; with MTP, holdout-mtp's mtp-v3-1280 d4
        # e4 none zero2: the shifted tokens' lookup gradient beside the head's, the step's peak)
        dhead, dx0, dshifted = jax.lax.optimization_barrier((dhead, dx[0], dshifted))

        def lookups(e):  # stage 0's micro batch (zero cotangent unless it ran a backward) and the last stage's MTP
            first = ends.embed(e, take(tokens, bi[0]))
            return first if ends.shifted is None else (first, ends.shifted(e, t_last))

        _, lookup_vjp = jax.vjp(lookups, ends.embed_params)
        (de,) = lookup_vjp(dx0 if ends.shifted is None else (dx0, dshifted))  # one gradient of both lookups
        dembed = _keep(jax.tree.map(jnp.add, dembed, de), ends.embed_sharding)
        return (tau + 1, x, dx, dlast, rings, accs, dhead, dembed, dtrunk, total), None

    # the tick counts in the carry (no [ticks] array of indices: nothing in the step grows with m but the batch)
    dtrunk0 = None if ends.trunk is None else _keep(zeros_after(ends.trunk_params, tokens), ends.trunk_sharding)
    carry0 = (jnp.int32(0), state0, state0, state0[0], rings0, accs0, dhead0, dembed0, dtrunk0, jnp.float32(0))
    (*_, accs, dhead, dembed, dtrunk, total), _ = jax.lax.scan(tick, carry0, None, length=clock.ticks)
    return total * scale, dembed, dhead, dict(zip(names_of, accs)), dtrunk
