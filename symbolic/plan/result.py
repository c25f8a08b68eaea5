"""What a plan search returns (PlanResult: every evaluated row, the feasible ones in rank order, each row as a config
and a Training) and the cluster's fixed part as a Training (reference)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..config.training import Training
from ..estimator.estimate import PEAK_FROM
from .enumerate import Cluster, precision_of


@dataclass(frozen=True)
class PlanResult:
    """Every evaluated configuration (rows: one array per column) and the feasible ones in rank order."""

    cluster: Cluster
    profile: str
    limit: float  # threshold x GPU memory, bytes
    components: tuple[str, ...]  # estimator outputs in display order, "total" last
    rows: dict[
        str, np.ndarray
    ]  # d t p c vpp b m recompute zero split (SPLITS), stage_layers [rows, max p], components,
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
        return {
            "config": self.training(i).as_json(self.cluster.shape),
            "bytes": parts,
            "peak_bytes": as_bytes(r["peak"][i]),
            "peak_from": PEAK_FROM[int(r["peak_from"][i])],
            "score": float(r["score"][i]),
        }

    def training(self, i: int) -> Training:
        """Row i as the shared Training config (what `mem4d estimate` would be given)."""
        r = self.rows
        return replace(
            reference(self.cluster, self.profile),
            d=int(r["d"][i]),
            t=int(r["t"][i]),
            p=int(r["p"][i]),
            c=int(r["c"][i]),
            vpp=int(r["vpp"][i]),
            b=int(r["b"][i]),
            ep=int(r["e"][i]) if "e" in r else 1,
            etp=int(r["t_e"][i]) if "t_e" in r else None,
            **self.policies[int(r["policy"][i])].fields,
            zero=int(r["zero"][i]),
            stage_layers=tuple(r["stage_layers"][i, : r["p"][i]].tolist()) if r["split"][i] else None,
        )


def as_bytes(value: float) -> int:
    """An estimator output (float64) as whole bytes, rounded to nearest."""
    return int(round(float(value)))


def reference(cluster: Cluster, profile: str) -> Training:
    """The cluster's fixed part as a Training (s, gbs, sp, flash_attn, its FP8 recipe, its precision over the profile's
    defaults); rows vary the rest."""
    return Training(
        **cluster.shared(), moe_capacity=cluster.moe_capacity, **dict(cluster.held), **precision_of(cluster, profile)
    )
