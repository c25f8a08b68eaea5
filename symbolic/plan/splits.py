"""Stage splits of many rows at once (`mem4d plan`): the balanced one (least most-loaded stage) or the most even one
(no stage above ceil(L/p) layers, least most-loaded stage among those), each with its stages' exact totals.

Per row the split solves plan.balance's min-max on the stage totals as the estimator's bilinear coefficients give
them (_bilinear): the continuous water level with every rank between one chunk and the cap, rounded down, then the
remaining chunks one at a time where the total grows least (plan.balance's greedy, from below its optimum).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..config.kinds import prefixes, shares
from ..config.stages import STAGES
from ..estimator.vectorized import Estimator
from .balance import even_cap

KINDS = ("first", "middle", "last")  # the stage kinds of p >= 2
_prefixes = lru_cache(maxsize=8)(prefixes)  # a model's per-kind prefix sums, a Python loop over its layers: once
LAYERS = np.int16  # dtype of a split's layer counts (a Cluster's model has fewer than 2**15 layers)


def _bilinear(est: Estimator, kind: str, arrays: dict, n: int, base: np.ndarray) -> np.ndarray:
    """[4, n] coefficients of a stage kind's total as c0 + c1 L_r + (c2 + c3 L_r) m_r, read off the estimator at L_r
    in {base, base + 1} (per row: next to its even split's layers per rank) and m_r in {0, 1} (one call). Exact where
    the total is bilinear in them; the minimums over a stage's parameters (the 40M-parameter bucket at ZeRO-2,
    Megatron-FSDP's prefetch window at ZeRO-3: zero.fsdp_window) are linear in L_r up to where they saturate and
    constant past it, so read next to the layers a rank holds they are the slope the split meets."""
    column = {name: (x[:, None] if np.ndim(x) else x) for name, x in arrays.items()}
    L_r = np.asarray(base)[:, None] + np.array([0, 1, 0, 1])
    at = np.broadcast_to(
        est.stage_peak_total(kind, **column, L_r=L_r, m_r=np.array([0, 0, 1, 1]), **shares(column, L_r)), (n, 4)
    )
    c1 = at[:, 1] - at[:, 0]
    c3 = at[:, 3] - at[:, 2] - c1
    b = L_r[:, 0]
    return np.stack([at[:, 0] - b * c1, c1, at[:, 2] - at[:, 0] - b * c3, c3])


NEVER = 1e300  # a total no rank reaches: what "inf" would be, kept finite (numpy's arithmetic on inf is slow here)


def _level(cost: np.ndarray, slope: np.ndarray, units: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """[rows, 1] water level of the continuous problem: the lambda at which sum_r clip((lambda - cost_r) / slope_r,
    1, cap) = units, exactly, by sorting each row's 2p breakpoints (rank r leaves one chunk at cost_r + slope_r and
    reaches the cap at cost_r + cap slope_r; cap <= units): between breakpoints the sum grows linearly with the free
    ranks' sum of 1 / slope_r, so a cumulative sum over the sorted breakpoints finds the segment holding units."""
    rows, p = cost.shape
    points = np.concatenate([cost + slope, cost + cap * slope], axis=1)
    deltas = np.concatenate([1 / slope, -1 / slope], axis=1)
    order = np.argsort(points, axis=1, kind="stable")
    points, deltas = np.take_along_axis(points, order, 1), np.take_along_axis(deltas, order, 1)
    rate = np.cumsum(deltas, axis=1)  # the sum's growth per unit of lambda after each breakpoint
    held = p + np.concatenate([np.zeros((rows, 1)), np.cumsum(rate[:, :-1] * np.diff(points, axis=1), axis=1)], axis=1)
    need = np.asarray(units, dtype=np.float64).reshape(rows, 1)
    j = np.clip((held < need).sum(1, keepdims=True) - 1, 0, 2 * p - 1)  # the last breakpoint below units
    base, at, rate_j = (np.take_along_axis(x, j, 1) for x in (held, points, rate))
    grows = rate_j > 0  # past the last breakpoint nothing grows: every rank at the cap
    return np.where(need <= p, points[:, :1], np.where(grows, at + (need - base) / np.where(grows, rate_j, 1), at))


def _chunks(cost: np.ndarray, slope: np.ndarray, units: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """Chunks per rank [rows, p] minimising each row's max of cost + chunks x slope with sum = units, 1 <= chunks
    <= cap (cap [rows, 1], inf for none)."""
    rows, p = cost.shape
    cap = np.minimum(cap, np.asarray(units, dtype=np.float64).reshape(rows, 1))  # no rank holds more than all
    x = (_level(cost, slope, units, cap) - cost) / slope
    chunks = np.where(x > cap, cap, np.clip(np.floor(x * (1 - 1e-12)), 1, cap)).astype(np.int64)
    rest = units - chunks.sum(1)
    index = np.arange(rows)
    while (rest < 0).any():  # float rounding gave a row one chunk too many: take it back where the total is largest
        over = np.where(chunks > 1, cost + chunks * slope, -NEVER)
        chunks[index, np.argmax(over, 1)] -= rest < 0
        rest += rest < 0
    grown = np.where(chunks < cap, cost + (chunks + 1) * slope, NEVER)  # each rank's total with one chunk more
    while (rest > 0).any():
        rows_left = np.flatnonzero(rest > 0)
        rank = np.argmin(grown[rows_left], 1)
        chunks[rows_left, rank] += 1
        more = chunks[rows_left, rank] < cap[rows_left, 0]
        grown[rows_left, rank] = np.where(more, grown[rows_left, rank] + slope[rows_left, rank], NEVER)
        rest[rows_left] -= 1
    return chunks


def placed_kinds(shape, splits: np.ndarray, p: int, vpp: np.ndarray) -> dict[str, np.ndarray]:
    """Each kind's [rows, p] layers each rank holds under each row's split (layers per rank, in vpp chunks: chunk j
    of rank r is virtual stage j p + r, the virtual stages in model order, as Training.layer_ranges places them), for
    a model whose layers are of several kinds; counted from the model's prefix sums of each kind (config.kinds)."""
    vpp = np.broadcast_to(np.asarray(vpp), (len(splits),))
    out = {}
    for name, prefix in _prefixes(shape).items():
        out[name] = np.zeros((len(splits), p), dtype=np.float64)
        for v in np.unique(vpp):
            at = np.flatnonzero(vpp == v)
            sizes = np.tile(splits[at, :p] // v, (1, int(v)))  # [rows, v p]: the virtual stages in model order
            stop = np.cumsum(sizes, axis=1)
            held = prefix[stop] - prefix[stop - sizes]
            out[name][at] = held.reshape(len(at), int(v), p).sum(axis=1)
    return out


def split_rows(
    est: Estimator, arrays: dict[str, np.ndarray], L: int, width: int, even: np.ndarray, shape=None
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """For rows of p >= 2 (`arrays`: the estimator's inputs, one entry per row or shared): the most even (where
    `even`) or the balanced split of each ([rows, width] layers per rank, zero beyond p) and the exact totals of its
    first, most loaded middle, and last stage. With `shape`, a model of several layer kinds: the split is chosen as
    if each layer were L_e / L of an MoE layer and L_g / L of a Gated DeltaNet layer, and its totals are exact, each
    rank with the layers of each kind it holds (placed_kinds), every rank evaluated."""
    n = len(arrays["p"])
    splits = np.zeros((n, width), dtype=LAYERS)
    totals = {kind: np.full(n, -np.inf) for kind in STAGES}
    base = np.maximum(1, L // np.broadcast_to(arrays["p"], n) - 1)  # one layer below the even split's per rank
    coef = {kind: _bilinear(est, kind, arrays, n, base) for kind in KINDS}
    for p in np.unique(arrays["p"]):
        at = np.flatnonzero(arrays["p"] == p)
        column = {name: (x[at, None] if np.ndim(x) else x) for name, x in arrays.items()}
        micro = np.broadcast_to(est.in_flight(**column, r=np.arange(p)[None, :]), (len(at), p))
        cols = {"first": slice(0, 1), "middle": slice(1, p - 1), "last": slice(p - 1, p)}
        c = np.empty((4, len(at), p))
        for kind in KINDS:
            c[:, :, cols[kind]] = coef[kind][:, at, None]
        vpp = np.broadcast_to(column["vpp"], (len(at), 1))
        units = L // vpp[:, 0]
        cap = np.where(even[at], even_cap(units, p), np.inf)[:, None]
        layers = vpp * _chunks(c[0] + c[2] * micro, vpp * (c[1] + c[3] * micro), units, cap)
        splits[at, :p] = layers
        placed = None if shape is None else placed_kinds(shape, layers, int(p), vpp[:, 0])
        for kind in KINDS:
            if p > 2 or kind != "middle":
                if placed is None:
                    held, mic = _candidates(layers[:, cols[kind]], micro[:, cols[kind]])
                    of_kind = shares(column, held)
                else:
                    held, mic = layers[:, cols[kind]], micro[:, cols[kind]]
                    of_kind = {name: x[:, cols[kind]] for name, x in placed.items()}
                total = est.stage_total(kind, **column, L_r=held, m_r=mic, **of_kind)
                totals[kind][at] = np.broadcast_to(total, held.shape).max(1)
    return splits, totals


def _candidates(held: np.ndarray, micro: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ranks of one stage kind [rows, ranks] that can hold its most: a stage's total never falls with more layers
    or more in-flight micro batches (every component is a nonnegative amount per layer and per micro batch), so where
    the in-flight counts never rise with the rank (1F1B) a rank with no more layers than an earlier one holds no
    more, and only the ranks that hold more layers than every earlier one are evaluated (a few, where a split has
    two or three layer counts). Their (layers, micro batches), padded with repeats of the first rank's to equal
    widths; otherwise every rank's."""
    rows, ranks = held.shape
    if ranks < 3 or (np.diff(micro, axis=1) > 0).any():
        return held, micro
    record = np.ones((rows, ranks), dtype=bool)
    record[:, 1:] = held[:, 1:] > np.maximum.accumulate(held, axis=1)[:, :-1]
    width = int(record.sum(1).max())
    pick = np.argsort(~record, axis=1, kind="stable")[:, :width]  # record ranks first, in rank order
    pick = np.where(np.take_along_axis(record, pick, 1), pick, 0)  # pad with rank 0 (a record: it changes no max)
    return np.take_along_axis(held, pick, 1), np.take_along_axis(micro, pick, 1)
