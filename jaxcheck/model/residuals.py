"""A layer's jax.vjp closure taken apart: its activation residuals (stacked per layer and micro batch by the
pipeline) and the slots that hold the layer's own inputs (weights), which the backward passes again.

jax.vjp forwards an input that the backward needs as that very object, so a residual leaf `is` one of the inputs'
leaves exactly when it is a weight; every other leaf is a tensor the layer computed (what the remat policy saves).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax


@dataclass(frozen=True)
class Layout:
    """Where each leaf of the vjp closure comes from: ("res", i) the i-th saved residual, or ("in", k) input leaf k."""

    treedef: object
    slots: tuple[tuple[str, int], ...]


def split(vjp_fn, inputs) -> tuple[list[jax.Array], Layout]:
    """The residual leaves of vjp_fn that are not leaves of `inputs`, and the layout to rebuild it with `join`."""
    leaves, treedef = jax.tree.flatten(vjp_fn)
    given = jax.tree.leaves(inputs)
    res, slots = [], []
    for leaf in leaves:
        k = next((k for k, x in enumerate(given) if leaf is x), None)
        if k is None:
            slots.append(("res", len(res)))
            res.append(leaf)
        else:
            slots.append(("in", k))
    return res, Layout(treedef, tuple(slots))


def join(res: list[jax.Array], layout: Layout, inputs):
    """The vjp closure again, from saved residuals and the same inputs (e.g. this layer's weights, sliced anew)."""
    given = jax.tree.leaves(inputs)
    return jax.tree.unflatten(layout.treedef, [res[i] if kind == "res" else given[i] for kind, i in layout.slots])
