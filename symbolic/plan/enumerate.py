"""Enumerate every 4D configuration (d, t, p, c, vpp, b) of a cluster as numpy arrays, masked with the rule table
(the predicates of Training.check on arrays: no Python object per candidate)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from ..config import rules
from ..config.errors import ConfigError
from ..config.shapes import ModelShape

GRID = ("d", "t", "p", "c", "vpp", "b", "m")  # the swept letters; m = gbs / (b d) follows from the others
MAX_SIZE = 2**24  # largest GPU count, sequence length or global batch searched (divisors are found by trial division)


@dataclass(frozen=True)
class Cluster:
    """What `mem4d plan` searches over: a model on N GPUs with a fixed sequence length s and global batch gbs."""

    shape: ModelShape
    gpus: int  # N = d * t * p * c
    s: int  # sequence length
    gbs: int  # global batch in sequences
    sp: bool = True  # sequence parallel (adds the s % (t c) rule)
    flash_attn: bool = True

    def __post_init__(self):
        for name in ("gpus", "s", "gbs"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
            if value > MAX_SIZE:
                raise ConfigError(f"{name}={value} is beyond what plan enumerates (at most {MAX_SIZE:,})")
        from ..estimator.estimate import check_head_dim

        check_head_dim(self.shape)


def divisors(n: int) -> np.ndarray:
    """Every positive divisor of n, ascending (int64)."""
    small = np.arange(1, int(np.sqrt(n)) + 1, dtype=np.int64)
    small = small[n % small == 0]
    return np.unique(np.concatenate([small, n // small]))


def factorisations(n: int) -> dict[str, np.ndarray]:
    """Every ordered (d, t, p, c) with d * t * p * c = n, as four int64 arrays (pairs (d, t) first, then p)."""
    divs = divisors(n)
    d, t = (x.ravel() for x in np.meshgrid(divs, divs, indexing="ij"))
    keep = n % (d * t) == 0
    d, t = d[keep], t[keep]
    d, p = np.repeat(d, len(divs)), np.tile(divs, len(t))
    t = np.repeat(t, len(divs))
    keep = n % (d * t * p) == 0
    d, t, p = d[keep], t[keep], p[keep]
    return {"d": d, "t": t, "p": p, "c": n // (d * t * p)}


def candidates(cluster: Cluster, fac: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """The cross product factorisations x vpp in divisors(L) x b in divisors(gbs); m = gbs // (b d).

    Every valid vpp divides L (p vpp | L) and every valid b divides gbs (b d | gbs), so no valid choice is missed.
    `fac` restricts the factorisations (default: all of them).
    """
    fac = factorisations(cluster.gpus) if fac is None else fac
    vpps = divisors(cluster.shape.L)
    mbs = divisors(cluster.gbs)
    n_f, n_v, n_b = len(fac["d"]), len(vpps), len(mbs)
    grid = {name: np.repeat(values, n_v * n_b) for name, values in fac.items()}
    grid["vpp"] = np.tile(np.repeat(vpps, n_b), n_f)
    grid["b"] = np.tile(mbs, n_f * n_v)
    grid["m"] = cluster.gbs // (grid["b"] * grid["d"])
    return grid


def _letters(cluster: Cluster, swept: dict) -> SimpleNamespace:
    """What the rules read: the swept letters (arrays, or one candidate's ints) and the cluster's fixed values."""
    return SimpleNamespace(**swept, s=cluster.s, gbs=cluster.gbs, sp=cluster.sp, flash_attn=cluster.flash_attn,
                           **rules.model_letters(cluster.shape))


def masks(grid: dict[str, np.ndarray], cluster: Cluster, profile: str = "paper") -> dict[str, np.ndarray]:
    """One boolean array per rule that binds the profile (True where it holds), in the rule table's order."""
    x = _letters(cluster, {name: grid[name] for name in GRID})
    return rules.masks(x, rules.select(profile), len(grid["d"]))


def _least_constrained(cluster: Cluster, fac: dict[str, np.ndarray], profile: str) -> tuple[dict, dict[str, np.ndarray]]:
    """The factorisations `fac` with vpp = 1 and b = 1, and the rule masks there."""
    one = np.ones_like(fac["d"])
    grid = {**fac, "vpp": one, "b": one, "m": cluster.gbs // fac["d"]}
    return grid, masks(grid, cluster, profile)


def _pruned_factorisations(cluster: Cluster) -> dict[str, np.ndarray]:
    """The (d, t, p, c) with d | gbs, t | gcd(a, k, f), p | L and d t p c = N: the rules on one letter, applied first."""
    n, x = cluster.gpus, cluster.shape
    ds, ts, ps = (divisors(math.gcd(n, *others)) for others in ((cluster.gbs,), (x.a, x.k, x.f), (x.L,)))
    d, t, p = (a.ravel() for a in np.meshgrid(ds, ts, ps, indexing="ij"))
    keep = n % (d * t * p) == 0
    d, t, p = d[keep], t[keep], p[keep]
    return {"d": d, "t": t, "p": p, "c": n // (d * t * p)}


def valid(cluster: Cluster, profile: str = "paper") -> tuple[dict[str, np.ndarray], int]:
    """The candidates that satisfy every rule binding the profile, and how many candidates were masked in all.

    Factorisations are built from the divisors each one-letter rule allows, then those that break a rule at
    vpp = 1, b = 1 (the least constrained choice: a larger vpp or b only adds rules) are dropped, and the survivors
    are crossed with every vpp and b and masked again with every rule.
    """
    first, ok = _least_constrained(cluster, _pruned_factorisations(cluster), profile)
    keep = np.logical_and.reduce(list(ok.values()))
    grid = candidates(cluster, {name: first[name][keep] for name in "dtpc"})
    ok = np.logical_and.reduce(list(masks(grid, cluster, profile).values()))
    return {name: values[ok] for name, values in grid.items()}, int(keep.size + ok.size)


def why_not(cluster: Cluster, profile: str = "paper", limit: int | None = None) -> tuple[list[str], int]:
    """One line per factorisation (d, t, p, c) of N (the first `limit` of them) naming every rule it breaks with
    vpp = 1 and b = 1, and how many factorisations there are.

    vpp = 1 and b = 1 are the least constrained choices (a larger vpp or b only adds rules), so a factorisation
    that breaks a rule here has no valid configuration at all.
    """
    fac, ok = _least_constrained(cluster, factorisations(cluster.gpus), profile)
    grid = {**fac, "vpp": np.ones_like(fac["d"]), "b": np.ones_like(fac["d"]), "m": cluster.gbs // fac["d"]}
    by_name = {rule.name: rule for rule in rules.select(profile)}
    lines = []
    for i in range(min(len(fac["d"]), len(fac["d"]) if limit is None else limit)):
        x = _letters(cluster, {name: int(grid[name][i]) for name in GRID})
        broken = [by_name[name].message(x) for name, holds in ok.items() if not holds[i]]
        lines.append(f"dp={x.d} tp={x.t} pp={x.p} cp={x.c}: {'; '.join(broken) if broken else 'valid'}")
    return lines, len(fac["d"])
