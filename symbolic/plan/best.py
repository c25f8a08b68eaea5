"""`best`: plan's K best fitting configurations without evaluating every one, exactly the rows an exhaustive `search`
would rank first.

The ranking proxy (plan.proxy) does not read the memory estimate, so a row's rank is known, up to one bound, before
its bytes are. Every grid row (a valid configuration with its ZeRO stage and split kind) gets an upper bound of the
score of each of its rows (one per recompute policy its profile allows): its score without recompute (selective and
full recompute only add time) at the narrowest widest stage its split can have (L/p even; vpp ceil(L/(vpp p))
near-even, exact; a balanced split is listed only where its widest stage is wider, and a wider stage never raises the
score: skew multiplies the compute time). Grid rows are evaluated in rounds, those of the highest bounds first
(every row tied with a round's lowest bound in that round; the first round FIRST_ROUND rows, each next one 4 times
as many), one estimator call per (recompute, ZeRO) pair per round, stage splits searched only for the uneven rows a
round holds; once K rows fit, a round takes only rows whose bound reaches the K-th one's score (the others can
never rank). The search stops once K rows fit and no grid row left has a bound as high as the K-th one's score: no
unevaluated row can rank above it or tie it. Ties rank as `search` ranks them (lower peak, then the exhaustive
search's row order). Memory holds the grid, its bounds, one round's rows and the K best.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..config.glossary import inputs_for
from ..config.training_checks import RECOMPUTE
from .balance import even_cap
from .enumerate import Cluster, valid
from .proxy import Hardware
from .ranking import StepTime, score, tokens_per_s
from .rows import _tick, _union, merged
from .result import PlanResult, reference
from .search import _allowed, _estimators, pair_rows, result, search, searched_policies
from ..recipes.registry import DEFAULT_PROFILE

FIRST_ROUND = 4096  # rows evaluated in the first round; each further round evaluates GROWTH times as many
GROWTH = 2  # CPU seconds of plan.best (min of 4, 2026-12-07) for first round / growth 4096/4, 4096/2, 1024/2:
# DeepSeek-V3 on 2048 GPUs 1.19, 1.01, 1.38 (rows 101,750, 59,382, 53,453: fewer rows in more rounds cost more calls);
# Qwen3-235B on 1024 0.31, 0.30, 0.16; Mixtral 8x22B 0.30, 0.30, 0.49; Qwen3-30B-A3B 0.38, 0.37, 0.31
BOUND_BLOCK = 2**14  # rows whose bound score is computed at once: the proxy's temporaries stay in cache (measured
# on DeepSeek-V3's 2.6 M rows: 0.30 s at 2**14, 0.74 s at 2**18, one thread)
# the columns the proxy reads (plan.proxy.terms) besides recompute and max_layers
PROXY_INPUTS = ("d", "t", "p", "c", "e", "t_e", "vpp", "b", "m", "zero")


def _widest(grid: dict, L: int) -> np.ndarray:
    """The widest stage's layers of each row's split as far as it is known before the split search: L/p (even), vpp
    ceil(L/(vpp p)) (near-even, and the least a listed balanced split's widest stage exceeds)."""
    vpp, p = grid["vpp"], grid["p"]
    return np.where(grid["split"] > 0, vpp * even_cap(L // vpp, p), L / p)


def _codes(column: np.ndarray) -> tuple[np.ndarray, int]:
    """Each entry's index among the column's distinct values, and how many there are (a lookup table for the small
    nonnegative integer columns of a grid: no sort of its rows)."""
    column = np.asarray(column).astype(np.int64)
    present = np.bincount(column) > 0
    lookup = np.cumsum(present) - 1
    return lookup[column], int(present.sum())


def _step_bounds(cluster: Cluster, grid: dict, hw: StepTime) -> np.ndarray:
    """_bounds for the step-time ranker, once per distinct (d, t, p, c, e, t_e, vpp, b, ZeRO stage, even or not)
    rather than per row: the score reads nothing else of a grid row (DeepSeek-V3 on 2048 GPUs: 881,680 grid rows,
    about 500,000 distinct)."""
    n = len(grid["d"])
    names = ("d", "t", "p", "c", "e", "t_e", "vpp", "b", "zero")
    cols = {name: np.broadcast_to(grid.get(name, grid["t"] if name == "t_e" else 1), (n,)) for name in names}
    key = np.zeros(n, dtype=np.int64)
    for column in [*cols.values(), grid["split"] > 0]:
        code, distinct = _codes(column)
        key = key * distinct + code  # mixed radix over each column's distinct values
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    picked = {name: x[first] for name, x in cols.items()} | {
        "m": np.broadcast_to(grid["m"], (n,))[first],
        "split": grid["split"][first],
    }
    picked.update(recompute=RECOMPUTE.index("none"), max_layers=_widest(picked, cluster.shape.L))
    out = np.empty(len(first))
    for z in np.unique(picked["zero"]):  # one ZeRO stage a call: tokens_per_s copies no column
        at = np.flatnonzero(picked["zero"] == z)
        out[at] = tokens_per_s(cluster, {name: (x[at] if np.ndim(x) else x) for name, x in picked.items()}, hw.system)
    return out[inverse]


def _bounds(cluster: Cluster, grid: dict, hw: Hardware) -> np.ndarray:
    """The upper bound of the score of every grid row under every recompute policy: its score without recompute
    (full and selective recompute only add time: rerun forward FLOPs and, under full, communication) at the
    narrowest widest stage its split can have; BOUND_BLOCK rows at a time, in one thread per core (numpy releases the
    GIL in its array operations; each thread writes its own rows)."""
    if isinstance(hw, StepTime):
        return _step_bounds(cluster, grid, hw)
    n = len(grid["d"])
    out = np.empty(n)

    def blocks(first: int, last: int) -> None:
        for start in range(first, last, BOUND_BLOCK):
            rows = slice(start, min(start + BOUND_BLOCK, last))
            cols = {name: grid[name][rows] for name in PROXY_INPUTS + ("split",) if name in grid}
            cols.update(recompute=RECOMPUTE.index("none"), max_layers=_widest(cols, cluster.shape.L))
            out[rows] = score(cluster, cols, hw)

    workers = max(1, min(os.cpu_count() or 1, n // BOUND_BLOCK))
    edges = [n * i // workers // BOUND_BLOCK * BOUND_BLOCK for i in range(workers)] + [n]
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        list(pool.map(blocks, edges[:-1], edges[1:]))
    finally:  # on Ctrl-C the blocks not started are dropped at once
        pool.shutdown(wait=False, cancel_futures=True)
    return out


def _key_order(score: np.ndarray, peak: np.ndarray, row: np.ndarray) -> np.ndarray:
    """Rank order: higher score first, then lower peak, then the exhaustive search's row order."""
    return np.lexsort((row, peak, -score))


def best(
    cluster: Cluster,
    limit: float,
    top: int,
    profile: str = DEFAULT_PROFILE,
    hw: Hardware = Hardware(),
    overheads: bool = True,
    zero: tuple[int, ...] = (0, 1, 2, 3),
    balance: bool = True,
) -> PlanResult:
    """The `top` best fitting rows of `search(cluster, limit, ...)`, in its order, evaluating rows in bound order
    (module docstring). The result's rows are the K best and, where fewer than K fit, the lowest peak evaluated;
    `complete` says whether every valid row was evaluated (then `feasible` counts the fitting ones)."""
    t0 = time.perf_counter()
    grid, n_candidates = valid(cluster, profile, zero, balance)
    if len(grid["d"]) == 0:
        return search(cluster, limit, profile, hw, overheads, zero, balance)
    t1 = time.perf_counter()
    estimators = _estimators(cluster, profile, overheads, tuple(int(z) for z in np.unique(grid["zero"])), grid)
    fixed = inputs_for(cluster.shape, reference(cluster, profile))
    t2 = time.perf_counter()
    pairs = list(estimators.items())
    # the exhaustive search's rows: each pair's grid rows in grid order, pair after pair; "row" numbers them
    choices = searched_policies(cluster, profile)
    members, offsets = _members(grid, pairs, choices, profile, cluster.shape.L)
    clock: dict[str, float] = {}
    start = time.perf_counter()
    bound = _bounds(cluster, grid, hw)
    start = _tick(clock, "bounds", start)
    width = int(grid["p"][grid["split"] > 0].max(initial=1))
    components = _union(est.components for est in estimators.values())
    left = np.zeros(len(bound), dtype=bool)  # grid rows not evaluated yet, of those some pair holds
    left[np.concatenate(members)] = True
    kept: dict | None = None  # the K best fitting rows so far and the lowest peak evaluated
    pruned = False  # whether a round left out a (row, recompute) pair its own bound put below the K-th
    size, evaluated, fitting, kth = FIRST_ROUND, 0, 0, -np.inf
    while left.any():
        chosen = _chosen(left, bound, kth, size)
        if chosen is None:
            break
        left[chosen] = False
        rows = _round(cluster, grid, pairs, choices, members, offsets, chosen, fixed, width, components, hw, clock, kth)
        pruned |= rows.pop("pruned")
        size *= GROWTH
        if not len(rows["d"]):  # every chosen row a balanced one that another split stands for
            continue
        evaluated += len(rows["d"])
        fits = rows["peak"] < limit
        fitting += int(fits.sum())
        kept = _keep(kept, rows, fits, top)
        if kept["fits"].sum() >= top and left.any():
            kth = kept["score"][kept["fits"]][top - 1]  # kept is in rank order, fitting rows first
            if bound[left].max() < kth:  # no row left can rank above the K-th or tie it
                break
    if kept is None:  # no row at all: search says so as it always has
        return search(cluster, limit, profile, hw, overheads, zero, balance)
    complete = not left.any() and not pruned
    order = np.flatnonzero(kept["fits"])[:top]
    kept.pop("fits")
    t3 = time.perf_counter()
    found = (cluster, profile, limit, components, kept, order, n_candidates)
    counts = {"ranked": int(offsets[-1]), "evaluated": evaluated, "feasible": fitting if complete else None}
    return result(found, estimators, choices, (t0, t1, t2, t3), clock, counts=counts, complete=complete)


def _members(grid: dict, pairs: list, choices: tuple, profile: str, L: int) -> tuple[list, np.ndarray]:
    """Each pair's grid rows (its ZeRO stage, the rows its recompute choice allows), and where each pair's rows start
    when they are numbered pair after pair."""
    members = [np.flatnonzero((grid["zero"] == z) & _allowed(profile, choices[i], grid, L)) for (i, z), _ in pairs]
    return members, np.concatenate([[0], np.cumsum([len(m) for m in members])])


def _chosen(left: np.ndarray, bound: np.ndarray, kth: float, size: int) -> np.ndarray | None:
    """The next round's rows: of those left whose bound can still reach the K-th, the `size` with the highest
    bounds (every row tied with the cut too); None when no row left can."""
    remaining = np.flatnonzero(left & (bound >= kth))  # a row bounded below the K-th so far can never rank
    if not len(remaining):
        return None
    if size < len(remaining):
        cut = np.partition(bound[remaining], len(remaining) - size)[len(remaining) - size]
        return remaining[bound[remaining] >= cut]  # every row tied with the cut comes along
    return remaining


def _round(
    cluster: Cluster,
    grid: dict,
    pairs: list,
    choices: tuple,
    members: list,
    offsets: np.ndarray,
    chosen: np.ndarray,
    fixed: dict,
    width: int,
    components: tuple[str, ...],
    hw: Hardware,
    clock: dict,
    kth: float = -np.inf,
) -> dict:
    """The chosen grid rows evaluated under every pair that holds them, as `search` evaluates them (components, stage
    totals and splits per pair, total, peak, proxy), each with its exhaustive row number "row"; balanced rows another
    split stands for are dropped, and, ranking by step time, the pairs whose own bound (their recompute choice's
    score at the narrowest widest stage) is below the K-th score so far: they can never rank ("pruned" says so)."""
    chosen = np.sort(chosen)
    parts, pruned = [], False
    for i, ((choice, _), est) in enumerate(pairs):
        position = np.searchsorted(members[i], chosen)
        held = position < len(members[i])
        held[held] = members[i][position[held]] == chosen[held]
        if not held.any():
            continue
        sub = {name: x[chosen[held]] for name, x in grid.items()}
        sub["row"] = offsets[i] + position[held]
        if kth > -np.inf and isinstance(hw, StepTime):
            start = time.perf_counter()
            sub, cut = _above(cluster, sub, choice, choices, hw, kth)
            pruned |= cut
            _tick(clock, "pair_bounds", start)
            if not len(sub["d"]):
                continue
        parts.append(pair_rows(cluster, sub, est, fixed, width, choices, choice, clock))
    if not parts:
        return {"d": np.zeros(0), "pruned": pruned}
    return {**merged(parts, components, cluster, hw, clock, choices), "pruned": pruned}


def _above(cluster: Cluster, sub: dict, choice: int, choices: tuple, hw: StepTime, kth: float) -> tuple[dict, bool]:
    """The rows of `sub` whose step-time score under recompute choice `choice`, at the narrowest widest stage their
    split can have, reaches kth (the others can never rank), and whether any was left out."""
    cols = {name: sub[name] for name in PROXY_INPUTS + ("split",) if name in sub}
    cols.update(policy=choice, max_layers=_widest(cols, cluster.shape.L))
    keep = tokens_per_s(cluster, cols, hw.system, choices) >= kth
    if keep.all():
        return sub, False
    return {name: x[keep] for name, x in sub.items()}, True


def _keep(kept: dict | None, rows: dict, fits: np.ndarray, top: int) -> dict:
    """The `top` best fitting rows of kept and rows together, in rank order, then the lowest peak of both (one row,
    where it is not among them), with "fits" saying which."""
    rows = {**rows, "fits": fits}
    both = rows if kept is None else {name: np.concatenate([kept[name], rows[name]]) for name in kept}
    order = _key_order(both["score"], both["peak"], both["row"])
    good = order[both["fits"][order]][:top]
    lowest = np.lexsort((both["row"], both["peak"]))[0]
    pick = good if lowest in good else np.append(good, lowest)
    return {name: x[pick] for name, x in both.items()}
