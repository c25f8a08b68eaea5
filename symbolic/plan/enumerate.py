"""Enumerate every 4D configuration (d, t, p, c, vpp, b) of a cluster as numpy arrays, with one mask per divisibility rule.

The rules are those of `Training.__post_init__` and `Training.check`, written here as vectorized masks so that a
16k-GPU cluster is enumerated without building one Python object per candidate; tests/test_plan.py checks every
candidate of small cases against `Training(...).check(shape)`, so the two stay the same rules.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..config.errors import ConfigError
from ..config.shapes import ModelShape

GRID = ("d", "t", "p", "c", "vpp", "b", "m")
MAX_SIZE = 2**24  # largest GPU count, sequence length or global batch searched (divisors are found by trial division)  # the swept letters; m = gbs / (b d) follows from the others


@dataclass(frozen=True)
class Cluster:
    """What `mem4d plan` searches over: a model on N GPUs with a fixed sequence length s and global batch gbs."""

    shape: ModelShape
    gpus: int  # N = d * t * p * c
    s: int  # sequence length
    gbs: int  # global batch in sequences
    sp: bool = True  # sequence parallel (adds the s % (t c) rule)
    flash_attn: bool = True
    interleaved: bool = True  # enumerate vpp > 1 (off for profiles that model no interleaved schedule)

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
    vpps = divisors(cluster.shape.L) if cluster.interleaved else np.ones(1, dtype=np.int64)
    mbs = divisors(cluster.gbs)
    n_f, n_v, n_b = len(fac["d"]), len(vpps), len(mbs)
    grid = {name: np.repeat(values, n_v * n_b) for name, values in fac.items()}
    grid["vpp"] = np.tile(np.repeat(vpps, n_b), n_f)
    grid["b"] = np.tile(mbs, n_f * n_v)
    grid["m"] = cluster.gbs // (grid["b"] * grid["d"])
    return grid


# rule name -> (a word from Training's message for the same rule, a template for the explanation)
RULES: dict[str, tuple[str, str]] = {
    "gbs % (b d)": ("global batch", "gbs={gbs} not divisible by mbs x dp = {b}x{d}"),
    "s % 2c": ("2 x context parallel", "s={s} not divisible by 2 x cp = {c2}"),
    "s % (t c)": ("tensor x context parallel", "s={s} not divisible by tp x cp = {tc} (sequence parallel)"),
    "vpp > 1 needs p > 1": ("need pipeline parallel", "vpp={vpp} needs pp > 1"),
    "m % p (vpp > 1)": ("interleaved 1F1B", "interleaved 1F1B needs m={m} divisible by pp={p}"),
    "a % t": ("attention heads", "tp={t} does not divide attention heads a={a}"),
    "k % t": ("KV heads", "tp={t} does not divide KV heads k={k}"),
    "f % t": ("MLP size", "tp={t} does not divide MLP size f={f}"),
    "L % (p vpp)": ("do not divide layers", "pp x vpp = {pv} does not divide layers L={L}"),
}


def masks(grid: dict[str, np.ndarray], cluster: Cluster) -> dict[str, np.ndarray]:
    """One boolean array per rule in RULES (True where the rule holds), in Training's order of checks."""
    shape, s, gbs = cluster.shape, cluster.s, cluster.gbs
    d, t, p, c, vpp, b, m = (grid[name] for name in GRID)
    return {
        "gbs % (b d)": gbs % (b * d) == 0,
        "s % 2c": (c == 1) | (s % (2 * c) == 0),
        "s % (t c)": (not cluster.sp) | (t == 1) | (s % (t * c) == 0),
        "vpp > 1 needs p > 1": (vpp == 1) | (p > 1),
        "m % p (vpp > 1)": (vpp == 1) | (m % p == 0),
        "a % t": shape.a % t == 0,
        "k % t": shape.k % t == 0,
        "f % t": shape.f % t == 0,
        "L % (p vpp)": shape.L % (p * vpp) == 0,
    }


def _least_constrained(cluster: Cluster, fac: dict[str, np.ndarray]) -> tuple[dict, dict[str, np.ndarray]]:
    """The factorisations `fac` with vpp = 1 and b = 1, and the rule masks there."""
    one = np.ones_like(fac["d"])
    grid = {**fac, "vpp": one, "b": one, "m": cluster.gbs // fac["d"]}
    return grid, masks(grid, cluster)


def _pruned_factorisations(cluster: Cluster) -> dict[str, np.ndarray]:
    """The (d, t, p, c) with d | gbs, t | gcd(a, k, f), p | L and d t p c = N: the rules on one letter, applied first."""
    n, x = cluster.gpus, cluster.shape
    ds, ts, ps = (divisors(math.gcd(n, *others)) for others in ((cluster.gbs,), (x.a, x.k, x.f), (x.L,)))
    d, t, p = (a.ravel() for a in np.meshgrid(ds, ts, ps, indexing="ij"))
    keep = n % (d * t * p) == 0
    d, t, p = d[keep], t[keep], p[keep]
    return {"d": d, "t": t, "p": p, "c": n // (d * t * p)}


def valid(cluster: Cluster) -> tuple[dict[str, np.ndarray], int]:
    """The candidates that satisfy every rule, and how many candidates were masked in all.

    Factorisations are built from the divisors each one-letter rule allows, then those that break a rule at
    vpp = 1, b = 1 (the least constrained choice: a larger vpp or b only adds rules) are dropped, and the survivors
    are crossed with every vpp and b and masked again with every rule.
    """
    first, ok = _least_constrained(cluster, _pruned_factorisations(cluster))
    keep = np.logical_and.reduce(list(ok.values()))
    grid = candidates(cluster, {name: first[name][keep] for name in "dtpc"})
    ok = np.logical_and.reduce(list(masks(grid, cluster).values()))
    return {name: values[ok] for name, values in grid.items()}, int(keep.size + ok.size)


def why_not(cluster: Cluster, limit: int | None = None) -> tuple[list[str], int]:
    """One line per factorisation (d, t, p, c) of N (the first `limit` of them) naming every rule it breaks with
    vpp = 1 and b = 1, and how many factorisations there are.

    vpp = 1 and b = 1 are the least constrained choices (a larger vpp or b only adds rules), so a factorisation
    that breaks a rule here has no valid configuration at all.
    """
    fac, ok = _least_constrained(cluster, factorisations(cluster.gpus))
    shape = cluster.shape
    lines = []
    for i in range(min(len(fac["d"]), len(fac["d"]) if limit is None else limit)):
        d, t, p, c = (int(fac[x][i]) for x in "dtpc")
        values = dict(gbs=cluster.gbs, b=1, d=d, s=cluster.s, c2=2 * c, tc=t * c, vpp=1, m=cluster.gbs // d, p=p,
                      t=t, a=shape.a, k=shape.k, f=shape.f, pv=p, L=shape.L)
        broken = [RULES[rule][1].format(**values) for rule, holds in ok.items() if not holds[i]]
        status = "; ".join(broken) if broken else "valid"
        lines.append(f"dp={d} tp={t} pp={p} cp={c}: {status}")
    return lines, len(fac["d"])
