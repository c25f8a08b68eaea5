"""`search`: every valid configuration (ZeRO stage and even or balanced stages included) under every recompute policy,
one estimator per (recompute, ZeRO stage) pair, those whose peak fits, ranked by the throughput proxy. Bytes come from
symbolic.estimator, balanced splits from plan.balance, the ranking from plan.proxy."""

from __future__ import annotations

import os
import time
from collections import namedtuple
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np

from types import SimpleNamespace

from ..config import rules
from ..recipes.registry import DEFAULT_PROFILE, select
from ..config.switches import Switches
from ..config.training import RECIPE_FIELDS
from ..config.parallel import ZERO_STAGES
from ..config.training_checks import RECOMPUTE
from .enumerate import Cluster, valid
from .policies import Policy, policies, recompute_index, worth_searching
from .proxy import Hardware
from .result import PlanResult, reference
from .rows import _evaluate, _tick, _union, accounted_of, merged
from .splits import LAYERS


def _allowed(profile: str, policy: Policy, grid: dict, L: int) -> np.ndarray:
    """Where the profile has this recompute choice for the grid's rows (the rule table's policy rules), and plan
    searches it (plan.policies.worth_searching: an --ac-every that checkpoints some block, not as many as a smaller
    one)."""
    x = SimpleNamespace(zero=grid["zero"], t=grid["t"], **{**RECIPE_FIELDS, **policy.fields})
    held = rules.masks(x, select(profile, policy=True), len(grid["d"])).values()
    n = len(grid["d"])
    searched = np.broadcast_to(worth_searching(policy, grid["p"], L), (n,))
    return np.logical_and.reduce([np.ones(n, dtype=bool), *held, searched])


def policy_reason(cluster: Cluster, profile: str, zero: tuple[int, ...]) -> str | None:
    """The message of the profile's policy rule that rules out every (recompute, zero) pair plan would search (at
    t = 1 and t = 2), e.g. --zero 1 with torchtitan; None when some pair is allowed."""
    messages = []
    for z in zero:
        for recompute in RECOMPUTE:
            for t in (1, 2):
                x = SimpleNamespace(recompute=recompute, zero=z, t=t, **RECIPE_FIELDS)
                broken = [rule for rule in select(profile, policy=True) if not np.all(rule.holds(x))]
                if not broken:
                    return None
                messages.append(broken[0].message(x))
    return messages[0] if messages else None


def _estimators(cluster: Cluster, profile: str, overheads: bool, zero: tuple[int, ...], grid: dict) -> dict:
    """The lambdified estimator of each (recompute choice index, zero) pair (lru-cached inside symbolic.estimator),
    the choices of plan.policies in their order; the higher stage first, the order in which exact ties of the
    ranking are listed."""
    from ..estimator.vectorized import estimator

    base = reference(cluster, profile)
    choices = searched_policies(cluster, profile)
    return {
        (i, z): estimator(profile, Switches.of(replace(base, **policy.fields, zero=z), overheads, shape=cluster.shape))
        for i, policy in enumerate(choices)
        for z in sorted(zero, reverse=True)
        if np.any(_allowed(profile, policy, grid, cluster.shape.L) & (grid["zero"] == z))
    }


def searched_policies(cluster: Cluster, profile: str) -> tuple[Policy, ...]:
    """The recompute choices plan searches for the cluster's model under the profile (plan.policies)."""
    return policies(profile, cluster.shape, cluster.flash_attn)


def policy_inputs(fixed: dict, policy: Policy) -> dict:
    """The estimator's fixed inputs under a recompute choice: n_ac is its --ac-every (1 where not set)."""
    return {**fixed, "n_ac": policy.ac_every or 1}


def search(
    cluster: Cluster,
    limit: float,
    profile: str = DEFAULT_PROFILE,
    hw: Hardware = Hardware(),
    overheads: bool = True,
    zero: tuple[int, ...] = ZERO_STAGES,
    balance: bool = True,
    keep_all: bool = True,
) -> PlanResult:
    """Enumerate the configurations the profile's rules allow (the given ZeRO stages; even stages and, with
    `balance`, near-even and balanced ones, enumerate.SPLITS), evaluate them under every recompute choice (one
    estimator call per (recompute choice, ZeRO stage) pair), mask by `limit` bytes, rank by the proxy. A balanced
    row no wider than the most even split is left out (the even or near-even row stands for it). Without
    `keep_all` the result's rows are those that fit and each pair's lowest peak (what --all and --csv list, in a
    fraction of the memory; the feasible-region plot reads every row)."""
    from ..config.glossary import inputs_for

    t0 = time.perf_counter()
    grid, n_candidates = valid(cluster, profile, zero, balance)
    if len(grid["d"]) == 0 or not searched_policies(cluster, profile):  # nothing to evaluate: the caller explains
        return _nothing(cluster, profile, limit, grid, n_candidates, time.perf_counter() - t0)  # with plan.why_not
    t1 = time.perf_counter()
    estimators = _estimators(cluster, profile, overheads, tuple(int(z) for z in np.unique(grid["zero"])), grid)
    fixed = inputs_for(cluster.shape, reference(cluster, profile))  # shape letters, s, the byte widths
    t2 = time.perf_counter()
    width = int(grid["p"][grid["split"] > 0].max(initial=1))  # columns of the splits: the most stages of an uneven row

    choices = searched_policies(cluster, profile)
    components = _union(est.components for est in estimators.values())
    job = _Job(cluster, profile, limit, hw, keep_all, grid, fixed, width, choices, components)
    # one thread per (recompute, zero) pair, as many at once as there are cores: numpy releases the GIL inside its
    # array operations, and the pairs share nothing but read-only inputs (rows keep the pairs' order)
    workers = min(len(estimators), os.cpu_count() or 1)
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        done = list(pool.map(lambda pair: _evaluate_pair(job, pair), estimators.items()))
    finally:  # on Ctrl-C the pairs not started are dropped at once
        pool.shutdown(wait=False, cancel_futures=True)
    parts, (clock, ranked, evaluated) = [part for part, _ in done], _summed([seconds for _, seconds in done])
    ready = [part for part in parts if "peak" in part]  # merged pair by pair already (not keep_all)
    if ready:
        rows = {name: np.concatenate([part[name] for part in ready]) for name in ready[0]}
    else:
        rows = merged(parts, components, cluster, hw, clock, choices)
    start = time.perf_counter()
    fits = np.flatnonzero(rows["peak"] < limit)  # the verdict of `mem4d estimate`, on the same peak
    order = fits[np.lexsort((rows["peak"][fits], -rows["score"][fits]))]
    t3 = _tick(clock, "rank", start)
    found = (cluster, profile, limit, components, rows, order, n_candidates)
    return result(
        found, estimators, choices, (t0, t1, t2, t3), clock, counts={"ranked": ranked, "evaluated": evaluated}
    )


def result(found: tuple, estimators: dict, choices: tuple, marks: tuple, clock: dict, **more) -> PlanResult:
    """The PlanResult of a search: `found` its cluster, profile, limit, components, rows, order and candidates, the
    components each pair's estimator has, the seconds between the marks (start, enumerated, built, evaluated) and
    of each part of the evaluation, and `more` (counts, complete)."""
    cluster, profile, limit, components, rows, order, n_candidates = found
    t0, t1, t2, t3 = marks
    seconds = {"build": t2 - t1, "enumerate": t1 - t0, "evaluate": t3 - t2}
    seconds.update({f"evaluate.{name}": x for name, x in clock.items()})
    present = {pair: est.components for pair, est in estimators.items()}
    return PlanResult(
        cluster, profile, float(limit), components, rows, order, n_candidates, present, choices, seconds, **more
    )


def _summed(clocks: list[dict]) -> tuple[dict, int, int]:
    """The pairs' clocks summed (thread-seconds of each part), and the rows they ranked and evaluated."""
    clock: dict = {}
    ranked = sum(seconds.pop("valid") for seconds in clocks)
    evaluated = sum(seconds.pop("evaluated") for seconds in clocks)
    for seconds in clocks:
        for name, x in seconds.items():
            clock[name] = clock.get(name, 0.0) + x
    return clock, ranked, evaluated


def _nothing(cluster: Cluster, profile: str, limit: float, grid: dict, n_candidates: int, spent: float) -> PlanResult:
    """A search with nothing to evaluate (no valid row, or no recompute choice searched): no rows, what was spent
    enumerating."""
    grid = {name: x[:0] for name, x in grid.items()}
    rows = {
        **grid,
        "recompute": np.zeros(0, np.int8),
        "stage_layers": np.zeros((0, 1), LAYERS),
        "total": np.zeros(0),
        "peak": np.zeros(0),
        "peak_from": np.zeros(0, np.int8),
        "score": np.zeros(0),
    }
    return PlanResult(
        cluster,
        profile,
        float(limit),
        ("total",),
        rows,
        np.zeros(0, np.int64),
        n_candidates,
        seconds={"build": 0.0, "enumerate": spent, "evaluate": 0.0},
    )


# what each pair's thread reads of a search: the search's arguments and what it derived from them
_Job = namedtuple("_Job", "cluster profile limit hw keep_all grid fixed width choices components")


def _evaluate_pair(job: _Job, pair) -> tuple[dict, dict]:
    """One (recompute choice, ZeRO stage) pair's rows of job.grid evaluated by its estimator, and its clock; without
    job.keep_all, merged and cut to the rows that fit and its lowest peak."""
    (i, z), est = pair
    grid, cluster, choices = job.grid, job.cluster, job.choices
    at, clock = (grid["zero"] == z) & _allowed(job.profile, choices[i], grid, cluster.shape.L), {}
    part = pair_rows(cluster, {name: x[at] for name, x in grid.items()}, est, job.fixed, job.width, choices, i, clock)
    clock["valid"], clock["evaluated"] = int(at.sum()), len(part["d"])
    if not job.keep_all and len(part["d"]):  # its rows that fit, and its lowest peak (the first, on a tie)
        part = merged([part], job.components, cluster, job.hw, clock, choices)
        kept = part["peak"] < job.limit
        kept[np.argmin(part["peak"])] = True
        part = {name: x[kept] for name, x in part.items()}
    return part, clock


def pair_rows(
    cluster: Cluster, sub: dict, est, fixed: dict, width: int, choices: tuple, i: int, clock: dict
) -> dict[str, np.ndarray]:
    """Grid rows `sub` evaluated under recompute choice i (rows._evaluate with its --ac-every), with their recompute
    index and policy columns."""
    policy = choices[i]
    part = _evaluate(
        sub, est, policy_inputs(fixed, policy), cluster.shape.L, width, cluster.shape, clock, accounted_of(cluster)
    )
    n = len(part["d"])
    part.update(recompute=np.full(n, recompute_index(policy), dtype=np.int8), policy=np.full(n, i, dtype=np.int16))
    return part
