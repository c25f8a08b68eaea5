"""Evaluate every valid configuration under every (recompute, dist_opt) switch pair with the lambdified estimator,
one vectorized call per pair, keep those whose peak is under threshold x GPU memory and rank them by the throughput
proxy. The peak is `mem4d estimate`'s: max(profile total, every exact stage's total), see `estimator.peak_of`.

All bytes come from `symbolic.estimator` (no memory formula lives here); the ranking comes from `symbolic.proxy`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..config.training import RECOMPUTE, Training
from ..estimator.estimate import PEAK_FROM, peak_of
from ..profiles import widths
from .enumerate import Cluster, valid
from .proxy import Hardware, terms

DIST_OPT = (True, False)


@dataclass(frozen=True)
class Plan:
    """Every evaluated configuration (rows: one array per column) and the feasible ones in rank order."""

    cluster: Cluster
    profile: str
    limit: float  # threshold x GPU memory, bytes
    components: tuple[str, ...]  # estimator outputs in display order, "total" last
    rows: dict[str, np.ndarray]  # d t p c vpp b m recompute dist_opt, every component, peak, proxy terms, score
    order: np.ndarray  # indices of rows whose peak is under the limit, best score first (ties: lower peak first)
    candidates: int  # (d, t, p, c, vpp, b) tuples enumerated before the divisibility masks
    present: dict = field(default_factory=dict)  # (recompute index, dist_opt) -> that estimator's components
    seconds: dict[str, float] = field(default_factory=dict)  # build, enumerate, evaluate

    @property
    def evaluated(self) -> int:
        return len(self.rows["d"])

    @property
    def feasible(self) -> int:
        return len(self.order)

    def config(self, i: int) -> dict:
        """Row i in the JSON schema of `mem4d plan --json`."""
        r = self.rows
        names = self.present.get((int(r["recompute"][i]), bool(r["dist_opt"][i])), self.components)
        parts = {name: as_bytes(r[name][i]) for name in names if name != "total"}
        parts["total"] = sum(parts.values())  # == rows["total"][i]: the sum of the rounded components
        return {
            "dp": int(r["d"][i]), "tp": int(r["t"][i]), "pp": int(r["p"][i]), "cp": int(r["c"][i]),
            "vpp": int(r["vpp"][i]), "mbs": int(r["b"][i]), "m": int(r["m"][i]),
            "recompute": RECOMPUTE[int(r["recompute"][i])], "dist_opt": bool(r["dist_opt"][i]),
            "bytes": parts, "total": parts["total"], "peak": as_bytes(r["peak"][i]),
            "peak_from": PEAK_FROM[int(r["peak_from"][i])], "score": float(r["score"][i]),
        }

    def training(self, i: int) -> Training:
        """Row i as the shared Training config (what `mem4d estimate` would be given)."""
        r, x = self.rows, self.cluster
        return Training(d=int(r["d"][i]), t=int(r["t"][i]), p=int(r["p"][i]), c=int(r["c"][i]), vpp=int(r["vpp"][i]),
                        s=x.s, b=int(r["b"][i]), gbs=x.gbs, sp=x.sp, dist_opt=bool(r["dist_opt"][i]),
                        recompute=RECOMPUTE[int(r["recompute"][i])], flash_attn=x.flash_attn, **widths(self.profile))


def as_bytes(value: float) -> int:
    """An estimator output (float64) as whole bytes, rounded to nearest."""
    return int(round(float(value)))


def _estimators(cluster: Cluster, profile: str, overheads: bool) -> dict:
    """The lambdified estimator of each (recompute, dist_opt) pair (lru-cached inside symbolic.estimator)."""
    from ..estimator.vectorized import estimator

    return {(r, o): estimator(profile, recompute=r, dist_opt=o, sp=cluster.sp, flash_attn=cluster.flash_attn,
                              overheads=overheads, tied=cluster.shape.tied) for r in RECOMPUTE for o in DIST_OPT}


def _fixed_inputs(cluster: Cluster, profile: str) -> dict[str, float]:
    """Shape letters, s and the profile's byte widths, by symbol name, from the estimator's own `inputs_for`."""
    from ..config.glossary import inputs_for

    reference = Training(s=cluster.s, gbs=cluster.gbs, sp=cluster.sp, flash_attn=cluster.flash_attn, **widths(profile))
    return inputs_for(cluster.shape, reference)


def search(cluster: Cluster, limit: float, profile: str = "paper", hw: Hardware = Hardware(),
           overheads: bool = True) -> Plan:
    """Enumerate the configurations the profile's rules allow, evaluate them (one estimator call per switch pair),
    mask by `limit` bytes, rank by the proxy."""
    t0 = time.perf_counter()
    grid, n_candidates = valid(cluster, profile)
    n = len(grid["d"])
    if n == 0:  # nothing to evaluate: the caller explains with plan.why_not
        rows = {**grid, "recompute": np.zeros(0, np.int8), "dist_opt": np.zeros(0, bool), "total": np.zeros(0),
                "peak": np.zeros(0), "peak_from": np.zeros(0, np.int8), "score": np.zeros(0)}
        return Plan(cluster, profile, float(limit), ("total",), rows, np.zeros(0, np.int64), n_candidates,
                    {"build": 0.0, "enumerate": time.perf_counter() - t0, "evaluate": 0.0})
    t1 = time.perf_counter()
    estimators = _estimators(cluster, profile, overheads)
    fixed = _fixed_inputs(cluster, profile)
    t2 = time.perf_counter()
    parts = []
    for (recompute, dist_opt), est in estimators.items():
        arrays = {name: grid[name] if name in grid else fixed[name] for name in est.inputs}
        out = est(**arrays)
        part = {name: np.broadcast_to(np.asarray(out[name], dtype=np.float64), (n,)) for name in est.components}
        stage_totals = est.stage_totals(**arrays)
        part.update({f"{stage}.total": np.broadcast_to(x, (n,)) for stage, x in stage_totals.items()})
        part.update(grid, recompute=np.full(n, RECOMPUTE.index(recompute), dtype=np.int8),
                    dist_opt=np.full(n, dist_opt))
        parts.append(part)
    components = _union(est.components for est in estimators.values())
    names = parts[0].keys() | set(components)
    rows = {name: np.concatenate([part.get(name, np.zeros(n)) for part in parts]) for name in names}
    # "total" as `estimate` reports it (the sum of the components rounded to bytes), so both give the same verdict
    rows["total"] = np.sum([np.rint(rows[name]) for name in components[:-1]], axis=0)
    stage_totals = {stage: rows.pop(f"{stage}.total") for stage in PEAK_FROM[1:]}
    rows["peak"], which = peak_of(rows["total"], stage_totals, rows["p"])
    rows["peak_from"] = which.astype(np.int8)
    rows.update(terms(cluster, rows, hw))
    fits = np.flatnonzero(rows["peak"] < limit)  # the verdict of `mem4d estimate`, on the same peak
    order = fits[np.lexsort((rows["peak"][fits], -rows["score"][fits]))]
    t3 = time.perf_counter()
    return Plan(cluster=cluster, profile=profile, limit=float(limit), components=components, rows=rows, order=order,
                candidates=n_candidates, seconds={"build": t2 - t1, "enumerate": t1 - t0, "evaluate": t3 - t2},
                present={(RECOMPUTE.index(r), o): est.components for (r, o), est in estimators.items()})


def _union(groups) -> tuple[str, ...]:
    """Component names of every switch pair, first-seen order, "total" last (switches may add or drop components)."""
    seen: dict[str, None] = {}
    for names in groups:
        seen.update(dict.fromkeys(names))
    seen.pop("total", None)
    return (*seen, "total")
