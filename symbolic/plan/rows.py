"""Evaluating plan's rows: one (recompute choice, ZeRO stage) pair's components, stage totals and splits
(`_evaluate`), the pairs' rows as one table with totals, peaks and the proxy's terms (`merged`), shared by the
exhaustive search (plan.search) and the best-K one (plan.best)."""

from __future__ import annotations

import time

import numpy as np

from ..config.stages import STAGES
from ..estimator.estimate import PEAK_FROM, mixed, peak_of
from .balance import even_cap
from .enumerate import SPLITS, Cluster, expert_columns
from .proxy import Hardware
from .ranking import terms
from .splits import LAYERS, split_rows


def _mixed_even_totals(est, arrays: dict, shape) -> dict[str, np.ndarray]:
    """Each stage kind's total of an even split when the model's layers are of several kinds (dense and MoE, softmax
    attention and Gated DeltaNet): every rank with its own layers of each kind (Training.layer_ranges: interleaved chunks placed), the middle kind the most loaded
    middle rank, as `mem4d estimate` lists every rank of such a model."""
    from ..config.training import Training
    from ..config.stages import stage_of

    n = len(arrays["p"])
    totals = {kind: np.full(n, -np.inf) for kind in STAGES}
    for p, vpp in {(int(p), int(v)) for p, v in zip(arrays["p"], np.broadcast_to(arrays["vpp"], (n,)))}:
        at = np.flatnonzero((arrays["p"] == p) & (np.broadcast_to(arrays["vpp"], (n,)) == vpp))
        column = {name: (x[at] if np.ndim(x) else x) for name, x in arrays.items()}
        held = Training(p=p, vpp=vpp).kind_layers(shape)
        for rank in range(p):
            kind = stage_of(rank, p)
            layers = shape.L if kind == "only" else shape.L / p
            total = est.stage_total(kind, **column, L_r=layers, m_r=est.in_flight(**column, r=rank), **held[rank])
            totals[kind][at] = np.maximum(totals[kind][at], total)
    return totals


def accounted_of(cluster: Cluster) -> tuple[bool, bool]:
    """Whether every row counts the embedding and the loss as pipeline units (--account-for-embedding/loss)."""
    held = dict(cluster.held)
    return bool(held.get("account_embedding")), bool(held.get("account_loss"))


def _accounted_totals(est, arrays: dict, grid: dict, shape, accounted: tuple[bool, bool]) -> dict[str, np.ndarray]:
    """Each stage kind's total where the embedding and loss are pipeline units: every rank with the layers
    Megatron-Core places there (config.layout.accounted_chunks), of each kind, and its in-flight count off the
    interleaved schedule of its chunks (config.layout.held), per (p, vpp, m) of the rows; the middle kind the most
    loaded middle rank, as `mem4d estimate` lists every rank."""
    from ..config.training import Training
    from ..config.stages import stage_of

    n = len(grid["p"])
    totals = {kind: np.full(n, -np.inf) for kind in STAGES}
    columns = [np.broadcast_to(grid[name], (n,)) for name in ("p", "vpp", "m")]
    for p, vpp, m in {tuple(int(x) for x in row) for row in zip(*columns)}:
        at = np.flatnonzero((columns[0] == p) & (columns[1] == vpp) & (columns[2] == m))
        column = {name: (x[at] if np.ndim(x) else x) for name, x in arrays.items()}
        training = Training(p=p, vpp=vpp, gbs=m, account_embedding=accounted[0], account_loss=accounted[1])
        layers, kinds, held = training.layers(shape.L), training.kind_layers(shape), training.held(shape.L)
        for rank in range(p):
            kind = stage_of(rank, p)
            micro = est.in_flight(**column, r=rank) if held[rank] is None else held[rank]
            total = est.stage_total(kind, **column, L_r=layers[rank], m_r=micro, **kinds[rank])
            totals[kind][at] = np.maximum(totals[kind][at], total)
    return totals


def _tick(clock: dict, name: str, since: float) -> float:
    """Add the seconds since `since` to clock[name]; the time now."""
    now = time.perf_counter()
    clock[name] = clock.get(name, 0.0) + now - since
    return now


def _evaluate(
    grid: dict[str, np.ndarray],
    est,
    fixed: dict[str, float],
    L: int,
    width: int,
    shape=None,
    clock: dict | None = None,
    accounted: tuple[bool, bool] = (False, False),
) -> dict[str, np.ndarray]:
    """One (recompute, zero) pair's rows: every component, each stage kind's total (even rows: L/p layers on the
    representative ranks; the other kinds: their split, the most loaded middle rank), the split ([rows, width]
    layers per rank, zero beyond p and on even rows) and its largest stage's layers; `clock` gathers the seconds of
    each part (components, even stages, uneven splits)."""
    clock = {} if clock is None else clock
    start = time.perf_counter()
    n = len(grid["d"])
    arrays = {name: grid[name] if name in grid else fixed[name] for name in est.inputs} | expert_columns(grid)
    out = est(**arrays)
    part = {name: np.broadcast_to(np.asarray(out[name], dtype=np.float64), (n,)) for name in est.components}
    start = _tick(clock, "components", start)
    stage = {kind: np.full(n, -np.inf) for kind in STAGES}
    splits = np.zeros((n, width), dtype=LAYERS)
    for uneven in (False, True):
        rows = np.flatnonzero((grid["split"] > 0) == uneven)
        if not len(rows):
            continue
        sub = {name: (x[rows] if np.ndim(x) else x) for name, x in arrays.items()}
        if uneven:
            near_even = grid["split"][rows] == SPLITS.index("near_even")
            splits[rows], totals = split_rows(
                est, sub, L, width, near_even, shape if shape is not None and mixed(shape) else None
            )
        elif any(accounted):
            totals = _accounted_totals(
                est, sub, {name: grid[name][rows] for name in ("p", "vpp", "m")}, shape, accounted
            )
        elif shape is not None and mixed(shape):
            totals = _mixed_even_totals(est, sub, shape)
        else:
            totals = est.stage_totals(**sub)
        for kind, x in totals.items():
            stage[kind][rows] = x
        start = _tick(clock, "uneven_splits" if uneven else "even_stages", start)
    widest = np.where(grid["split"] > 0, splits.max(1), L / grid["p"])  # the largest stage's layers
    part.update(grid, stage_layers=splits, max_layers=widest, **{f"{kind}.total": x for kind, x in stage.items()})
    keep = ~_repeats_even(part, L)
    out = {name: x[keep] for name, x in part.items()}
    _tick(clock, "components", start)
    return out


def merged(
    parts: list[dict], components: tuple[str, ...], cluster: Cluster, hw: Hardware, clock: dict, policies: tuple = ()
) -> dict:
    """The pairs' evaluated rows (_evaluate's, each with its "recompute") as one table, with each row's total, peak
    and the proxy's terms and score; `clock` gathers the seconds of the merge and peak and of the proxy."""
    start = time.perf_counter()
    names = parts[0].keys() | set(components)
    rows = {name: np.concatenate([part.get(name, np.zeros(len(part["d"]))) for part in parts]) for name in names}
    # "total" as `estimate` reports it (the sum of the components rounded to bytes), so both give the same verdict
    rows["total"] = np.zeros(len(rows["d"]))
    for name in components[:-1]:
        rows["total"] += np.rint(rows[name])
    stage_totals = {stage: rows.pop(f"{stage}.total") for stage in PEAK_FROM[1:]}
    rows["peak"], which = peak_of(
        rows["total"], stage_totals, rows["p"], (rows["split"] > 0) | any(accounted_of(cluster))
    )
    rows["peak_from"] = which.astype(np.int8)
    start = _tick(clock, "merge_peak", start)
    rows.update(terms(cluster, rows, hw, policies))
    _tick(clock, "proxy", start)
    return rows


def _repeats_even(rows: dict[str, np.ndarray], L: int) -> np.ndarray:
    """Balanced rows whose widest stage is no wider than the most even split's: the even or near-even row of the same
    configuration holds as little and stands for it."""
    widest = rows["vpp"] * even_cap(L // rows["vpp"], rows["p"])
    return (rows["split"] == SPLITS.index("balanced")) & (rows["max_layers"] <= widest)


def _union(groups) -> tuple[str, ...]:
    """Component names of every switch pair, first-seen order, "total" last (switches may add or drop components)."""
    seen: dict[str, None] = {}
    for names in groups:
        seen.update(dict.fromkeys(names))
    seen.pop("total", None)
    return (*seen, "total")
