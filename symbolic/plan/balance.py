"""Stage splits that minimise the most loaded pipeline stage's memory: exact for one configuration (`mem4d estimate
--balance`), vectorized over many rows for `mem4d plan`.

A stage's bytes never fall when it gains a layer, so adding the layers one chunk (vpp layers) at a time, each to the
stage whose total grows to the least, minimises the largest total (the greedy is optimal for a min-max of
nondecreasing functions). Every stage keeps at least one chunk.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..config import rules
from ..config.glossary import inputs_for
from ..config.shapes import ModelShape
from ..config.switches import Switches
from ..config.training import STAGES, Training, even_split, stage_of
from ..estimator.vectorized import Estimator, estimator


@dataclass(frozen=True)
class Balance:
    """A balanced split and the most even one, with every rank's total in whole bytes under each."""

    training: Training  # the configuration with the balanced stage_layers
    split: tuple[int, ...]  # layers per rank, balanced
    totals: tuple[int, ...]  # bytes per rank under the balanced split
    even: tuple[int, ...]  # layers per rank, most even (even_split)
    even_totals: tuple[int, ...]  # bytes per rank under the most even split

    @property
    def peak(self) -> int:
        return max(self.totals)

    @property
    def even_peak(self) -> int:
        return max(self.even_totals)


def greedy(table: np.ndarray, units: int) -> np.ndarray:
    """Chunks per rank minimising max_r table[r, n_r - 1] with sum n_r = units, n_r >= 1; table[r, j] is rank r's
    total with j + 1 chunks, nondecreasing in j. Ties go to the lower rank."""
    p = table.shape[0]
    n = np.ones(p, dtype=np.int64)
    ranks = np.arange(p)
    for _ in range(units - p):
        grow = int(np.argmin(table[ranks, n]))  # each rank's total with one chunk more
        n[grow] += 1
    return n


def rank_table(est: Estimator, values: dict, p: int, layers: np.ndarray) -> np.ndarray:
    """[p, len(layers)]: each rank's total (whole bytes, as estimate adds them) holding each count of layers."""
    ranks = np.arange(p)
    micro = est.in_flight(**values, r=ranks)
    table = np.empty((p, len(layers)))
    for kind in STAGES:
        at = ranks[[stage_of(rank, p) == kind for rank in ranks]]
        if len(at):
            table[at] = est.stage_total(kind, **values, L_r=layers[None, :], m_r=micro[at, None])
    return table


def check_balanceable(shape: ModelShape, training: Training, scope: str = "all") -> None:
    """The rule table as for one of plan's balanced rows: uneven stages, the split not yet chosen (one line, exit 2)."""
    x = rules.letters(replace(training, stage_layers=None), shape)
    x.uneven = True
    rules.check(x, rules.select(scope))


def balance(shape: ModelShape, training: Training, profile: str = "paper", overheads: bool = True,
            backend: str = "gpu") -> Balance:
    """The stage split of `training` (its stage_layers ignored) that minimises the most loaded stage's total, exactly:
    every rank's total is evaluated for every layer count it could hold, then the greedy picks the split."""
    check_balanceable(shape, training, "jax" if profile == "jax" else "all")
    est = estimator(profile, Switches.of(training, overheads, shape.tied, backend))
    p, vpp = training.p, training.vpp
    units = shape.L // vpp
    layers = vpp * np.arange(1, units - p + 2)  # what one rank may hold: 1 .. units - p + 1 chunks
    table = rank_table(est, inputs_for(shape, training), p, layers)
    chunks = greedy(table, units)
    split = tuple(int(x) for x in vpp * chunks)
    even = even_split(shape.L, p, vpp)
    ranks = np.arange(p)
    totals = table[ranks, chunks - 1]
    even_totals = table[ranks, np.asarray(even) // vpp - 1]
    return Balance(replace(training, stage_layers=split).check(shape), split, tuple(int(x) for x in totals), even,
                   tuple(int(x) for x in even_totals))


# ---- many rows at once (mem4d plan) ----------------------------------------------------------------------------------

def _bilinear(est: Estimator, kind: str, arrays: dict) -> tuple[np.ndarray, ...]:
    """Coefficients of a stage kind's total as c0 + c1 L_r + (c2 + c3 L_r) m_r, read off the estimator at L_r in
    {1, 2} and m_r in {0, 1}. Exact where the total is bilinear in them: everything but the 40M-parameter buckets'
    min(params, bucket), which is constant once one layer holds 40M parameters per GPU."""
    at = {(n, f): est.stage(kind, **arrays, L_r=n, m_r=f)["total"] for n in (1, 2) for f in (0, 1)}
    c1 = at[2, 0] - at[1, 0]
    c3 = at[2, 1] - at[1, 1] - c1
    c0 = at[1, 0] - c1
    return c0, c1, at[1, 1] - at[1, 0] - c3, c3


def _greedy_rows(cost: np.ndarray, slope: np.ndarray, units: np.ndarray) -> np.ndarray:
    """Chunks per rank [rows, p] minimising each row's max of cost + chunks x slope with sum = units, each >= 1: the
    water level of the continuous problem (ranks that cannot reach it pinned at one chunk), rounded down, then the
    remaining chunks one at a time where the total grows least (the greedy of `greedy`, from below its optimum)."""
    rows, p = cost.shape
    pinned = np.zeros((rows, p), dtype=bool)
    for _ in range(p):
        free = ~pinned
        with np.errstate(divide="ignore", invalid="ignore"):  # a row with every rank pinned has no level (nor use)
            level = ((units - pinned.sum(1) + (cost / slope * free).sum(1)) / ((1 / slope) * free).sum(1))[:, None]
        low = free & ((level - cost) / slope < 1)
        if not low.any():
            break
        pinned |= low
    with np.errstate(invalid="ignore"):
        chunks = np.where(pinned, 1, np.maximum(1, np.floor((level - cost) / slope * (1 - 1e-12)))).astype(np.int64)
    rest = units - chunks.sum(1)
    index = np.arange(rows)
    while (rest < 0).any():  # float rounding gave a row one chunk too many: take it back where the total is largest
        over = np.where(chunks > 1, cost + chunks * slope, -np.inf)
        chunks[index, np.argmax(over, 1)] -= rest < 0
        rest += rest < 0
    while (rest > 0).any():
        chunks[index, np.argmin(cost + (chunks + 1) * slope, 1)] += rest > 0
        rest -= rest > 0
    return chunks


def balanced_rows(est: Estimator, arrays: dict[str, np.ndarray], L: int,
                  width: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """For rows of p >= 2 (`arrays`: the estimator's inputs, one entry per row or shared): the balanced split of each
    ([rows, width] layers per rank, zero beyond p) and the exact total of its first, most loaded middle, and last
    stage.

    The split minimises the largest stage total as the estimator's bilinear coefficients give it (_bilinear: exact
    but for the bucket overheads of stages under 40M parameters); the totals are then evaluated exactly."""
    n = len(arrays["p"])
    splits = np.zeros((n, width), dtype=np.int64)
    totals = {kind: np.full(n, -np.inf) for kind in STAGES}
    kinds = ("first", "middle", "last")
    coef = {kind: [np.broadcast_to(x, (n,)) for x in _bilinear(est, kind, arrays)] for kind in kinds}
    for p in np.unique(arrays["p"]):
        at = np.flatnonzero(arrays["p"] == p)
        column = {name: (x[at, None] if np.ndim(x) else x) for name, x in arrays.items()}
        micro = np.broadcast_to(est.in_flight(**column, r=np.arange(p)[None, :]), (len(at), p))
        cols = {"first": slice(0, 1), "middle": slice(1, p - 1), "last": slice(p - 1, p)}
        c = np.empty((4, len(at), p))
        for kind in kinds:
            c[:, :, cols[kind]] = np.stack(coef[kind])[:, at, None]
        vpp = np.broadcast_to(column["vpp"], (len(at), 1))
        chunks = _greedy_rows(c[0] + c[2] * micro, vpp * (c[1] + c[3] * micro), L // vpp[:, 0])
        layers = vpp * chunks
        splits[at, :p] = layers
        for kind in kinds:
            if p > 2 or kind != "middle":
                total = est.stage_total(kind, **column, L_r=layers[:, cols[kind]], m_r=micro[:, cols[kind]])
                totals[kind][at] = np.broadcast_to(total, layers[:, cols[kind]].shape).max(1)
    return splits, totals
