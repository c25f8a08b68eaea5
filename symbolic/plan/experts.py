"""The expert layouts plan searches for a model with routed experts: expert parallel e and expert tensor parallel
t_e, each searched or fixed by `plan --ep` / `--etp` (Cluster.ep, Cluster.etp); the rule table judges them."""

from __future__ import annotations

import numpy as np

from ..config.parallel import Parallel
from .grid import cross, divisors


def expert_columns(grid: dict) -> dict:
    """e and t_e of every row: the grid's own columns, or a dense model's e = 1 and t_e = t (not stored: a grid of
    a highly composite cluster holds tens of millions of rows)."""
    return {"e": grid["e"] if "e" in grid else 1, "t_e": grid["t_e"] if "t_e" in grid else grid["t"]}


def has_columns(cluster) -> bool:
    """Whether the rows carry e and t_e columns: a model with experts, or --ep / --etp given other than a dense
    model's own e = 1 (its t_e = t then; the rule table refuses any other value, as estimate's)."""
    return cluster.shape.moe or cluster.etp is not None or cluster.ep not in (None, 1)


def least_constrained(cluster, one: np.ndarray) -> dict[str, np.ndarray]:
    """e and t_e at the least constrained choice, for rows like `one`: the fixed ones, else e = 1 and t_e = 1 (t_e = t
    for a dense model: no columns)."""
    if not has_columns(cluster):
        return {}
    return {"e": one * (cluster.ep or 1), "t_e": one * (cluster.etp or 1)}


def experts(cluster, fac: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The factorisations crossed with the expert layouts plan searches: e in divisors(E) (or --ep's) and t_e in
    {1, t} (no expert tensor parallelism, or Megatron-Core's default t_e = t; or --etp's), those with e t_e | d t c;
    a dense model keeps e = 1, t_e = t. `estimate --etp` takes any t_e, and so does `plan --etp`."""

    x = cluster.shape
    if not has_columns(cluster):
        return dict(fac)
    es = divisors(x.E) if cluster.ep is None else np.array([cluster.ep], dtype=np.int64)
    grid = cross(fac, e=es, same=np.array([False, True] if cluster.etp is None else [False]))
    same = grid.pop("same")
    grid["t_e"] = np.where(same, grid["t"], 1 if cluster.etp is None else cluster.etp)
    groups = Parallel(grid["d"], grid["t"], 1, grid["c"], grid["e"], grid["t_e"])
    keep = (groups.stage_ranks % groups.expert_ranks == 0) & ~(same & (grid["t"] == 1))
    return {name: values[keep] for name, values in grid.items()}
