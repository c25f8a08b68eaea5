"""Stage splits for one configuration (`mem4d estimate --balance`), exact: the split that minimises the most loaded
pipeline stage's memory, and the most even split that holds least.

A stage's bytes never fall when it gains a layer, so adding the layers one chunk (vpp layers) at a time, each to the
stage whose total grows to the least, minimises the largest total: the greedy is optimal for a min-max of
nondecreasing functions, with or without a cap on each stage. Every stage keeps at least one chunk.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..config import rules
from ..config.errors import ConfigError
from ..config.glossary import inputs_for
from ..config.kinds import prefixes, shares
from ..config.shapes import ModelShape
from ..config.switches import Switches
from ..config.training import Training
from ..config.stages import STAGES, stage_of
from ..estimator.vectorized import Estimator, estimator
from ..recipes.registry import DEFAULT_PROFILE, select


@dataclass(frozen=True)
class Balance:
    """The balanced split and the most even one, with every rank's total in whole bytes under each."""

    training: Training  # the configuration with the balanced stage_layers
    split: tuple[int, ...]  # layers per rank, balanced: the least most-loaded stage
    totals: tuple[int, ...]  # bytes per rank under the balanced split
    even: tuple[int, ...]  # layers per rank, most even: L/p each, or no stage above ceil(L/p) (least such)
    even_totals: tuple[int, ...]  # bytes per rank under the most even split

    @property
    def peak(self) -> int:
        return max(self.totals)

    @property
    def even_peak(self) -> int:
        return max(self.even_totals)


def even_cap(units, p):
    """Chunks of the widest stage of the most even split: ceil(units / p) (ints or integer arrays)."""
    return -(-units // p)


def greedy(table: np.ndarray, units: int, cap: int | None = None) -> np.ndarray:
    """Chunks per rank minimising max_r table[r, n_r - 1] with sum n_r = units, 1 <= n_r <= cap; table[r, j] is rank
    r's total with j + 1 chunks, nondecreasing in j. Ties go to the lower rank."""
    p, width = table.shape
    cap = width if cap is None else min(cap, width)
    n = np.ones(p, dtype=np.int64)
    ranks = np.arange(p)
    for _ in range(units - p):
        grown = np.where(n < cap, table[ranks, np.minimum(n, width - 1)], np.inf)  # each total with one chunk more
        n[int(np.argmin(grown))] += 1
    return n


def rank_table(est: Estimator, values: dict, p: int, layers: np.ndarray) -> np.ndarray:
    """[p, len(layers)]: each rank's total (whole bytes, as estimate adds them) holding each count of layers."""
    ranks = np.arange(p)
    micro = est.in_flight(**values, r=ranks)
    table = np.empty((p, len(layers)))
    for kind in STAGES:
        at = ranks[[stage_of(rank, p) == kind for rank in ranks]]
        if len(at):
            table[at] = est.stage_total(
                kind, **values, L_r=layers[None, :], m_r=micro[at, None], **shares(values, layers[None, :])
            )
    return table


def _kinds(shape: ModelShape) -> str:
    """The kinds a mixed model's layers are of, for a message."""
    return ", ".join(
        x
        for x, has in (
            ("dense and MoE", shape.moe and shape.dense_layers),
            ("softmax attention and Gated DeltaNet", shape.gdn),
            ("full and sliding-window attention", shape.swa_layers),
        )
        if has
    )


def check_balanceable(shape: ModelShape, training: Training, scope: str = "all") -> None:
    """The rule table as for one of plan's uneven rows: the split not yet chosen (one line, exit 2); a model of dense
    and MoE layers with interleaved stages is refused (its chunks' kinds depend on where each falls)."""
    from ..estimator.estimate import mixed

    if mixed(shape) and training.vpp > 1:
        raise ConfigError(
            f"--balance: {shape.name} has layers of several kinds ({_kinds(shape)}), whose interleaved "
            "chunks (vpp > 1) are not balanced; give --stage-layers (each rank's own layers of each kind "
            "are counted exactly)"
        )
    x = rules.letters(replace(training, stage_layers=None), shape)
    x.uneven = True
    rules.check(x, select(scope))


def balance(
    shape: ModelShape, training: Training, profile: str = DEFAULT_PROFILE, overheads: bool = True, backend: str = "gpu"
) -> Balance:
    """The balanced and the most even split of `training` (its stage_layers ignored), exactly: every rank's total
    is evaluated for every layer count it could hold, then the greedy picks each split."""
    from ..estimator.estimate import mixed

    check_balanceable(shape, training, profile)
    est = estimator(profile, Switches.of(training, overheads, backend=backend, shape=shape))
    if mixed(shape):
        return _balance_mixed(est, shape, training)
    p, vpp = training.p, training.vpp
    units = shape.L // vpp
    layers = vpp * np.arange(1, units - p + 2)  # what one rank may hold: 1 .. units - p + 1 chunks
    table = rank_table(est, inputs_for(shape, training), p, layers)
    ranks = np.arange(p)
    out = []
    for cap in (None, even_cap(units, p)):
        chunks = greedy(table, units, cap)
        out += [tuple(int(x) for x in vpp * chunks), tuple(int(x) for x in table[ranks, chunks - 1])]
    split, totals, even, even_totals = out
    return Balance(replace(training, stage_layers=split).check(shape), split, totals, even, even_totals)


def _balance_mixed(est: Estimator, shape: ModelShape, training: Training) -> Balance:
    """balance for a model of several layer kinds (vpp = 1): rank r holding layers start .. start + n - 1 costs its
    stage total with those layers' own counts of each kind, so the split is found by dynamic programming over (rank, layers
    placed so far), minimising the largest total exactly, with and without the most even split's cap."""
    p, L = training.p, shape.L
    values = inputs_for(shape, training)
    micro = est.in_flight(**values, r=np.arange(p))
    n = np.arange(1, L - p + 2)  # layers one rank may hold
    start = np.arange(L)
    prefix = prefixes(shape)
    out = []
    for cap in (None, even_cap(L, p)):
        best = np.full((p + 1, L + 1), np.inf)
        choice = np.zeros((p + 1, L + 1), dtype=np.int64)
        best[0, 0] = 0.0
        for r in range(p):
            kind = stage_of(r, p)
            stop = np.minimum(start[:, None] + n[None, :], L)  # [start, n]
            held = {name: x[stop] - x[start][:, None] for name, x in prefix.items()}
            cost = np.broadcast_to(est.stage_total(kind, **values, L_r=n[None, :], m_r=micro[r], **held), stop.shape)
            ok = (start[:, None] + n[None, :] <= L) & (n[None, :] <= (cap or L))
            for i in range(L):
                if not np.isfinite(best[r, i]):
                    continue
                for j in np.flatnonzero(ok[i]):
                    end, value = i + n[j], max(best[r, i], cost[i, j])
                    if value < best[r + 1, end]:
                        best[r + 1, end], choice[r + 1, end] = value, n[j]
        split, end = [], L
        for r in range(p, 0, -1):
            split.append(int(choice[r, end]))
            end -= split[-1]
        split = tuple(reversed(split))
        placed = replace(training, stage_layers=split)
        held = placed.kind_layers(shape)
        totals = tuple(
            int(np.rint(est.stage_total(stage_of(r, p), **values, L_r=split[r], m_r=micro[r], **held[r])))
            for r in range(p)
        )
        out += [split, totals]
    split, totals, even, even_totals = out
    return Balance(replace(training, stage_layers=split).check(shape), split, totals, even, even_totals)
