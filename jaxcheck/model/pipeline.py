"""GPipe pipeline over the pipe mesh axis: vmap over p stages (spmd_axis_name="pipe") inside a scan of m + p - 1 steps;
with p = 1, plain gradient accumulation over the m micro batches."""
from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp

from .rules import constrain


def scan_layers(layer_fn: Callable, stage_params, x_BxSxH: jax.Array) -> jax.Array:
    """Run the L/p layers of one stage in order; stage_params leaves are [L/p, ...]."""

    def body(x, layer_params):
        return layer_fn(layer_params, x), None

    out, _ = jax.lax.scan(body, x_BxSxH, stage_params)
    return out


def gpipe(layer_fn: Callable, blocks_params, x_MxBxSxH: jax.Array, act: tuple[str, ...]) -> jax.Array:
    """Outputs [m, b, s, h] of the last stage; blocks_params leaves are [p, L/p, ...] sharded over pipe.

    At iteration i stage j runs micro batch i - j: the stage buffer [p, b, s, h] is shifted one stage forward by
    jnp.roll on its pipe-sharded axis (XLA lowers it to a collective-permute), stage 0 takes micro batch i, and the
    last stage's output is kept. Bubble iterations compute on zeros or repeated inputs whose results never reach a
    kept output, so loss and gradients are exact. Autodiff of the scan keeps each iteration's residuals (GPipe: all
    m micro batches' activations live at the peak), which the remat policy of the layer function shrinks."""
    p = jax.tree.leaves(blocks_params)[0].shape[0]
    m = x_MxBxSxH.shape[0]
    names = ("stage",) + act
    stage_of_PxBxSxH = jnp.arange(p).reshape(p, 1, 1, 1)
    run_stages = jax.vmap(lambda params, x: scan_layers(layer_fn, params, x), spmd_axis_name="pipe")

    def step(state_PxBxSxH, i):
        shifted = jnp.roll(state_PxBxSxH, 1, axis=0)  # stage j receives stage j-1's output
        micro = jax.lax.dynamic_index_in_dim(x_MxBxSxH, jnp.minimum(i, m - 1), keepdims=True)
        state = constrain(jnp.where(stage_of_PxBxSxH == 0, micro, shifted), names)
        out = constrain(run_stages(blocks_params, state), names)
        return out, out[p - 1]

    state0 = constrain(jnp.zeros((p,) + x_MxBxSxH.shape[1:], x_MxBxSxH.dtype), names)
    _, last_IxBxSxH = jax.lax.scan(step, state0, jnp.arange(m + p - 1))
    return last_IxBxSxH[p - 1:]
