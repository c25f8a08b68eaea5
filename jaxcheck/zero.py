"""ZeRO-2/3 in the train step, where the layouts of jaxcheck.state.layouts meet: parameters all-gathered where used
(ZeRO-3; the pipeline gathers the stacked blocks itself, one layer at a time), and the updated parameters of ZeRO-2
computed on shards and all-gathered into the replicated parameters one layer at a time."""

from __future__ import annotations

import jax
import optax

from .model.causal_lm import STACKS
from .model.pipeline import layer_of, layer_shardings


def gathered(params: dict, compute) -> dict:
    """ZeRO-3 (compute: the parameters' compute layout): every parameter but the stacked blocks all-gathered into
    it; otherwise (compute None) the parameters as they are."""
    if compute is None:
        return params
    return {
        name: x if name in STACKS else jax.lax.with_sharding_constraint(x, compute[name]) for name, x in params.items()
    }


def apply_updates(params: dict, updates: dict, shards=None, compute=None) -> dict:
    """New parameters: optax.apply_updates. ZeRO-2 (shards: the gradients' sharded layout, compute: the parameters'
    replicated one): each stacked weight's new value is computed on its shard [p, L/p, .../(d c)] and all-gathered
    into the (donated) parameter stack one layer at a time, in a loop over the L/p layers, as a trainer gathers into
    its parameter buffer bucket by bucket; the other parameters are updated whole."""
    if shards is None:
        return optax.apply_updates(params, updates)
    stacks = [name for name in STACKS if name in params]
    new = optax.apply_updates(
        {k: v for k, v in params.items() if k not in stacks}, {k: v for k, v in updates.items() if k not in stacks}
    )
    return {
        **new,
        **{name: _gathered_update(params[name], updates[name], shards[name], compute[name]) for name in stacks},
    }


def _gathered_update(stack: dict, updates: dict, shards, compute):
    """One stack's new parameters [p, L/p, ...]: updated on shards, all-gathered into the stack layer by layer."""
    blocks = jax.lax.with_sharding_constraint(stack, shards)
    fresh = jax.lax.with_sharding_constraint(optax.apply_updates(blocks, updates), shards)
    n = jax.tree.leaves(fresh)[0].shape[1]
    whole = layer_shardings(compute)

    def layer(j, out):
        w = jax.lax.with_sharding_constraint(layer_of(fresh, j), whole)
        return jax.tree.map(lambda a, x: jax.lax.dynamic_update_index_in_dim(a, x.astype(a.dtype), j, axis=1), out, w)

    return jax.lax.fori_loop(0, n, layer, stack)
