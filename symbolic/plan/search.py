"""`search`: every valid configuration (ZeRO stage and even or balanced stages included) under every recompute policy,
one estimator per (recompute, ZeRO stage) pair, those whose peak fits, ranked by the throughput proxy. Bytes come from
symbolic.estimator, balanced splits from plan.balance, the ranking from plan.proxy."""
from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import numpy as np

from types import SimpleNamespace

from ..config import rules
from ..recipes.registry import DEFAULT_PROFILE, select
from ..config.switches import Switches
from ..config.training import RECIPE_FIELDS, Training
from ..config.parallel import ZERO_STAGES
from ..config.training_checks import RECOMPUTE
from ..estimator.estimate import PEAK_FROM
from .enumerate import Cluster, precision_of, valid
from .policies import Policy, policies, recompute_index, worth_searching
from .proxy import Hardware
from .rows import _evaluate, _tick, _union, accounted_of, merged
from .splits import LAYERS


@dataclass(frozen=True)
class PlanResult:
    """Every evaluated configuration (rows: one array per column) and the feasible ones in rank order."""

    cluster: Cluster
    profile: str
    limit: float  # threshold x GPU memory, bytes
    components: tuple[str, ...]  # estimator outputs in display order, "total" last
    rows: dict[str, np.ndarray]  # d t p c vpp b m recompute zero split (SPLITS), stage_layers [rows, max p], components,
    # peak, proxy terms, score
    order: np.ndarray  # indices of rows whose peak is under the limit, best score first (ties: lower peak first)
    candidates: int  # (d, t, p, c, vpp, b, zero, even or balanced) tuples enumerated before the divisibility masks
    present: dict = field(default_factory=dict)  # (policy index, zero) -> that estimator's components
    policies: tuple = ()  # plan.policies.Policy of each "policy" index: the recompute choices searched
    seconds: dict[str, float] = field(default_factory=dict)  # build, enumerate, evaluate (and evaluate.<part>)
    # plan.best's counts where rows holds only what it shows: rows ranked by its bound, rows evaluated, rows that
    # fit (None unless complete, i.e. every ranked row was evaluated)
    counts: dict = field(default_factory=dict)
    complete: bool = True  # whether every valid row was evaluated (search's always are)

    @property
    def evaluated(self) -> int:
        """Rows whose memory was evaluated."""
        return self.counts.get("evaluated", len(self.rows["d"]))

    @property
    def valid(self) -> int:
        """Rows the rules allow (a configuration under one recompute policy, every split kind searched: a balanced
        row no wider than the most even split among them, though no result lists it)."""
        return self.counts.get("ranked", self.evaluated)

    @property
    def feasible(self) -> int | None:
        """Rows that fit, where every row was evaluated (else None)."""
        return self.counts.get("feasible", len(self.order)) if self.complete else None

    def config(self, i: int) -> dict:
        """Row i in the JSON schema of `mem4d plan --json`: its whole config as `mem4d estimate --json` has it, bytes
        per component, the peak the fit rule judges and the proxy's score."""
        r = self.rows
        names = self.present.get((int(r["policy"][i]), int(r["zero"][i])), self.components)
        parts = {name: as_bytes(r[name][i]) for name in names if name != "total"}
        parts["total"] = sum(parts.values())  # == rows["total"][i]: the sum of the rounded components
        return {"config": self.training(i).as_json(self.cluster.shape), "bytes": parts,
                "peak_bytes": as_bytes(r["peak"][i]), "peak_from": PEAK_FROM[int(r["peak_from"][i])],
                "score": float(r["score"][i])}

    def training(self, i: int) -> Training:
        """Row i as the shared Training config (what `mem4d estimate` would be given)."""
        r = self.rows
        return replace(reference(self.cluster, self.profile), d=int(r["d"][i]), t=int(r["t"][i]), p=int(r["p"][i]),
                       c=int(r["c"][i]), vpp=int(r["vpp"][i]), b=int(r["b"][i]),
                       ep=int(r["e"][i]) if "e" in r else 1, etp=int(r["t_e"][i]) if "t_e" in r else None,
                       **self.policies[int(r["policy"][i])].fields, zero=int(r["zero"][i]),
                       stage_layers=tuple(r["stage_layers"][i, :r["p"][i]].tolist()) if r["split"][i] else None)


def as_bytes(value: float) -> int:
    """An estimator output (float64) as whole bytes, rounded to nearest."""
    return int(round(float(value)))


def reference(cluster: Cluster, profile: str) -> Training:
    """The cluster's fixed part as a Training (s, gbs, sp, flash_attn, its FP8 recipe, its precision over the profile's
    defaults); rows vary the rest."""
    return Training(s=cluster.s, gbs=cluster.gbs, sp=cluster.sp, flash_attn=cluster.flash_attn,
                    moe_capacity=cluster.moe_capacity, fp8=cluster.fp8, fp8_param_gather=cluster.fp8_param_gather,
                    compile=cluster.compile, fp8_all_gather=cluster.fp8_all_gather,
                    image_tokens=cluster.image_tokens, freeze_vision=cluster.freeze_vision,
                    **dict(cluster.held), **precision_of(cluster, profile))


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
    return {(i, z): estimator(profile, Switches.of(replace(base, **policy.fields, zero=z), overheads,
                                                   shape=cluster.shape))
            for i, policy in enumerate(choices) for z in sorted(zero, reverse=True)
            if np.any(_allowed(profile, policy, grid, cluster.shape.L) & (grid["zero"] == z))}


def searched_policies(cluster: Cluster, profile: str) -> tuple[Policy, ...]:
    """The recompute choices plan searches for the cluster's model under the profile (plan.policies)."""
    return policies(profile, cluster.shape, cluster.flash_attn)


def policy_inputs(fixed: dict, policy: Policy) -> dict:
    """The estimator's fixed inputs under a recompute choice: n_ac is its --ac-every (1 where not set)."""
    return {**fixed, "n_ac": policy.ac_every or 1}


def search(cluster: Cluster, limit: float, profile: str = DEFAULT_PROFILE, hw: Hardware = Hardware(),
           overheads: bool = True, zero: tuple[int, ...] = ZERO_STAGES, balance: bool = True,
           keep_all: bool = True) -> PlanResult:
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
        grid = {name: x[:0] for name, x in grid.items()}  # with plan.why_not
        rows = {**grid, "recompute": np.zeros(0, np.int8), "stage_layers": np.zeros((0, 1), LAYERS),
                "total": np.zeros(0),
                "peak": np.zeros(0), "peak_from": np.zeros(0, np.int8), "score": np.zeros(0)}
        return PlanResult(cluster, profile, float(limit), ("total",), rows, np.zeros(0, np.int64), n_candidates,
                          seconds={"build": 0.0, "enumerate": time.perf_counter() - t0, "evaluate": 0.0})
    t1 = time.perf_counter()
    estimators = _estimators(cluster, profile, overheads, tuple(int(z) for z in np.unique(grid["zero"])), grid)
    fixed = inputs_for(cluster.shape, reference(cluster, profile))  # shape letters, s, the byte widths
    t2 = time.perf_counter()
    width = int(grid["p"][grid["split"] > 0].max(initial=1))  # columns of the splits: the most stages of an uneven row

    choices = searched_policies(cluster, profile)
    components = _union(est.components for est in estimators.values())

    def evaluate(pair) -> tuple[dict, dict]:
        (i, z), est = pair
        at, clock = (grid["zero"] == z) & _allowed(profile, choices[i], grid, cluster.shape.L), {}
        part = _evaluate({name: x[at] for name, x in grid.items()}, est, policy_inputs(fixed, choices[i]),
                         cluster.shape.L, width, cluster.shape, clock, accounted_of(cluster))
        part.update(recompute=np.full(len(part["d"]), recompute_index(choices[i]), dtype=np.int8),
                    policy=np.full(len(part["d"]), i, dtype=np.int16))
        clock["valid"], clock["evaluated"] = int(at.sum()), len(part["d"])
        if not keep_all and len(part["d"]):  # its rows that fit, and its lowest peak (the first, on a tie)
            part = merged([part], components, cluster, hw, clock, choices)
            kept = part["peak"] < limit
            kept[np.argmin(part["peak"])] = True
            part = {name: x[kept] for name, x in part.items()}
        return part, clock

    # one thread per (recompute, zero) pair, as many at once as there are cores: numpy releases the GIL inside its
    # array operations, and the pairs share nothing but read-only inputs (rows keep the pairs' order)
    workers = min(len(estimators), os.cpu_count() or 1)
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        done = list(pool.map(evaluate, estimators.items()))
    finally:  # on Ctrl-C the pairs not started are dropped at once
        pool.shutdown(wait=False, cancel_futures=True)
    parts, clock = [part for part, _ in done], {}
    ranked = sum(seconds.pop("valid") for _, seconds in done)
    evaluated = sum(seconds.pop("evaluated") for _, seconds in done)
    for _, seconds in done:  # thread-seconds of each part, summed over the pairs
        for name, x in seconds.items():
            clock[name] = clock.get(name, 0.0) + x
    ready = [part for part in parts if "peak" in part]  # merged pair by pair already (not keep_all)
    if ready:
        rows = {name: np.concatenate([part[name] for part in ready]) for name in ready[0]}
    else:
        rows = merged(parts, components, cluster, hw, clock, choices)
    start = time.perf_counter()
    fits = np.flatnonzero(rows["peak"] < limit)  # the verdict of `mem4d estimate`, on the same peak
    order = fits[np.lexsort((rows["peak"][fits], -rows["score"][fits]))]
    t3 = _tick(clock, "rank", start)
    return PlanResult(cluster=cluster, profile=profile, limit=float(limit), components=components, rows=rows,
                      order=order, candidates=n_candidates,
                      present={pair: est.components for pair, est in estimators.items()}, policies=choices,
                      seconds={"build": t2 - t1, "enumerate": t1 - t0, "evaluate": t3 - t2,
                               **{f"evaluate.{name}": x for name, x in clock.items()}},
                      counts={"ranked": ranked, "evaluated": evaluated})
