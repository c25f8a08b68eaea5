"""Enumerate every 4D configuration (d, t, p, c, vpp, b, ZeRO stage, even or balanced stages) of a cluster as numpy
arrays, masked with the rule table (the predicates of Training.check on arrays: no Python object per candidate)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from ..config import rules
from ..config.errors import ConfigError
from ..config.shapes import ModelShape
from ..config.training import RECIPE_FIELDS, Training
from ..config.parallel import ZERO_STAGES
from ..recipes.registry import DEFAULT_PROFILE, select
from .experts import expert_columns, experts, least_constrained
from .grid import cross, divisors

# the swept letters (m = gbs / (b d) follows from the others), the ZeRO stage, and the kind of stage split (SPLITS;
# the uneven ones are chosen by plan.splits after masking); e and t_e: expert parallel and expert tensor parallel,
# columns of a grid for a model with experts only (a dense model's are e = 1 and t_e = t, EXPERT_DEFAULTS)
GRID = ("d", "t", "p", "c", "e", "t_e", "vpp", "b", "m", "zero", "split")


# even: L/p layers each; near_even: p vpp does not divide L, no stage above ceil(L/p) layers, the one holding least;
# balanced: the one whose most loaded stage holds least
SPLITS = ("even", "near_even", "balanced")
MAX_SIZE = 2**24  # largest GPU count, sequence length or global batch searched (divisors are found by trial division)
BLOCK = 2**21  # candidates crossed and masked at once by `valid`


# the Cluster fields Training holds under the same names: the rows' reference Training and the rules' letters read them
SHARED = tuple("s gbs sp flash_attn fp8 fp8_param_gather compile fp8_all_gather image_tokens freeze_vision".split())


@dataclass(frozen=True)
class Cluster:
    """What `mem4d plan` searches over: a model on N GPUs with a fixed sequence length s and global batch gbs."""

    shape: ModelShape
    gpus: int  # N = d * t * p * c
    s: int  # sequence length
    gbs: int  # global batch in sequences
    sp: bool = Training.sp  # sequence parallel (adds the s % (t c) rule); the defaults are Training's
    flash_attn: bool = Training.flash_attn
    moe_capacity: float = Training.moe_capacity  # C_f of a model with experts
    precision: tuple = ()  # (config.precision field, value) pairs over the profile's defaults
    fp8: str = Training.fp8  # Megatron-LM's Transformer Engine FP8 recipe (--fp8), the same for every row
    fp8_param_gather: bool = Training.fp8_param_gather
    compile: bool = Training.compile  # torchtitan's blocks under torch.compile (--compile), every row
    fp8_all_gather: bool = Training.fp8_all_gather  # torchtitan's FSDP2 Float8 all-gather, every row
    image_tokens: int = Training.image_tokens  # n_v: image tokens per sample through a vision tower, every row
    freeze_vision: bool = Training.freeze_vision  # a frozen vision tower, every row
    held: tuple = ()  # (Training recipe field, value) pairs every row holds (a trainer's file: fused SwiGLU, ...)
    ep: int | None = None  # --ep: expert parallel e of every row (None: searched in divisors(E))
    etp: int | None = None  # --etp: expert tensor parallel t_e of every row (None: searched in {1, t})

    def shared(self) -> dict:
        """The fields every row shares that Training holds under the same names (SHARED)."""
        return {name: getattr(self, name) for name in SHARED}

    def __post_init__(self):
        for name in ("gpus", "s", "gbs"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
            if value > MAX_SIZE:
                raise ConfigError(f"{name}={value} is beyond what plan enumerates (at most {MAX_SIZE:,})")
        if self.shape.L >= 2**15:
            raise ConfigError(
                f"model {self.shape.name!r}: L={self.shape.L} layers is beyond what plan splits (fewer than {2**15:,})"
            )


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


def split_choices(balance: bool) -> np.ndarray:
    """The kinds of stage split plan searches (indices into SPLITS): even only, or with `balance` every kind."""
    return np.arange(len(SPLITS) if balance else 1, dtype=np.int8)


def _vpps(cluster: Cluster) -> np.ndarray:
    """The vpp searched: divisors of L, or of L + the accounted units (--account-for-embedding/loss, Cluster.held)."""
    held = dict(cluster.held)
    return divisors(cluster.shape.L + bool(held.get("account_embedding")) + bool(held.get("account_loss")))


def candidates(
    cluster: Cluster,
    fac: dict[str, np.ndarray] | None = None,
    zero: tuple[int, ...] = ZERO_STAGES,
    balance: bool = True,
) -> dict[str, np.ndarray]:
    """The cross product factorisations x expert layouts x vpp in divisors(L) x b in divisors(gbs) x zero x split
    kind; m = gbs // (b d).

    Every valid vpp divides L (p vpp | L, or with uneven stages L % vpp = 0) and every valid b divides gbs (b d | gbs),
    so no valid choice is missed. `fac` restricts the factorisations (default: all of them, with every expert
    layout of `experts`); given, it carries its own e and t_e.
    """
    fac = experts(cluster, factorisations(cluster.gpus)) if fac is None else fac
    grid = cross(
        fac,
        vpp=_vpps(cluster),
        b=divisors(cluster.gbs),
        zero=np.asarray(zero, dtype=np.int8),
        split=split_choices(balance),
    )
    grid["m"] = cluster.gbs // (grid["b"] * grid["d"])
    return grid


def precision_of(cluster: Cluster, profile: str) -> dict:
    """The cluster's precision choices: the profile's defaults, with the cluster's own over them."""
    from ..recipes import widths

    return {**widths(profile), **dict(cluster.precision)}


def grid_letters(cluster: Cluster, swept: dict, profile: str) -> SimpleNamespace:
    """What the rules read: the swept letters (arrays, or one candidate's ints) and the cluster's fixed values; a row
    of an uneven split kind has uneven stages whose split is not chosen yet (no stage_layers tuple)."""
    chosen = {name: value for name, value in precision_of(cluster, profile).items() if name in rules.PRECISION}
    return SimpleNamespace(
        **swept,
        C_f=cluster.moe_capacity,
        uneven=swept["split"] > 0,
        stage_layers=None,
        **{**RECIPE_FIELDS, **cluster.shared(), **dict(cluster.held)},
        **chosen,
        **rules.model_letters(cluster.shape),
    )


def masks(grid: dict[str, np.ndarray], cluster: Cluster, profile: str = DEFAULT_PROFILE) -> dict[str, np.ndarray]:
    """One boolean array per rule that binds the profile (True where it holds), in the rule table's order."""
    x = grid_letters(cluster, {name: grid[name] for name in GRID if name in grid} | expert_columns(grid), profile)
    return rules.masks(x, select(profile, policy=False), len(grid["d"]))


def least_constrained_grid(
    cluster: Cluster, fac: dict[str, np.ndarray], profile: str, zero: tuple[int, ...], balance: bool
) -> tuple[dict, dict[str, np.ndarray]]:
    """The factorisations `fac` crossed with every ZeRO stage and split, at vpp = 1, b = 1 and e = 1 (t_e = 1 with
    experts, else t; --ep and --etp's where given), and the rule masks."""
    grid = cross(fac, zero=np.asarray(zero, dtype=np.int8), split=split_choices(balance))
    one = np.ones_like(grid["d"])
    grid.update(vpp=one, b=one, m=cluster.gbs // grid["d"], **least_constrained(cluster, one))
    return grid, masks(grid, cluster, profile)


def _pruned_factorisations(cluster: Cluster, balance: bool) -> dict[str, np.ndarray]:
    """The (d, t, p, c) with d | gbs, t | gcd(a, k, f), p | L (p <= L with balanced stages) and d t p c = N: the
    rules on one letter, applied first."""
    n, x = cluster.gpus, cluster.shape
    widths = (x.a, x.k) + ((x.f,) if x.L_e < x.L else ()) + ((x.f_s,) if x.f_s else ())  # what t splits
    ds, ts = (divisors(math.gcd(n, *others)) for others in ((cluster.gbs,), widths))
    ps = divisors(n)[divisors(n) <= x.L] if balance else divisors(math.gcd(n, x.L))
    d, t, p = (a.ravel() for a in np.meshgrid(ds, ts, ps, indexing="ij"))
    keep = n % (d * t * p) == 0
    d, t, p = d[keep], t[keep], p[keep]
    return {"d": d, "t": t, "p": p, "c": n // (d * t * p)}


def valid(
    cluster: Cluster, profile: str = DEFAULT_PROFILE, zero: tuple[int, ...] = ZERO_STAGES, balance: bool = True
) -> tuple[dict[str, np.ndarray], int]:
    """The candidates that satisfy every rule binding the profile, and how many candidates were masked in all.

    Factorisations are built from the divisors each one-letter rule allows, then those that break a rule at
    vpp = 1, b = 1 (the least constrained choice: a larger vpp or b only adds rules) under every ZeRO stage and
    split are dropped, and the survivors are crossed with every vpp, b, ZeRO stage and split and masked again with
    every rule. Rows another split kind stands for are left out: uneven ones at p = 1 (one stage has one split),
    near-even ones where p vpp divides L (the even split is the most even).
    """
    first, ok = least_constrained_grid(cluster, _pruned_factorisations(cluster, balance), profile, zero, balance)
    passed = np.logical_and.reduce(list(ok.values()))
    kept = np.unique(np.stack([first[name] for name in "dtpc"])[:, passed], axis=1)
    fac = experts(cluster, dict(zip("dtpc", kept)))
    vpps, bs, zeros, splits = _vpps(cluster), divisors(cluster.gbs), np.asarray(zero, np.int8), split_choices(balance)
    per_row = len(vpps) * len(bs) * len(zeros) * len(splits)
    rules_ = select(profile, policy=False)
    # a block of factorisations at a time (a highly composite cluster has tens of millions of candidates, few valid),
    # each crossed first with vpp, ZeRO stage and split, masked with the rules that do not read b or m, and only the
    # survivors crossed with the b that divide gbs / d and masked with the rest: the same rows, in the same order,
    # as masking the whole cross product (b between vpp and zero), without building it
    step = max(1, BLOCK // (per_row // len(bs)))
    parts = []
    for start in range(0, len(fac["d"]), step):
        block = {name: x[start : start + step] for name, x in fac.items()}
        block["fac"] = np.arange(start, start + len(block["d"]))
        parts.append(_valid_block(cluster, profile, rules_, block, vpps, bs, zeros, splits))
    if parts:
        out = {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}
    else:
        out = candidates(cluster, {name: x[:0] for name, x in fac.items()}, zero, balance)
    return out, int(passed.size + len(fac["d"]) * per_row)


def _valid_block(cluster: Cluster, profile: str, rules_, block: dict, vpps, bs, zeros, splits) -> dict:
    """The valid rows of a block of factorisations (`block`, with its rows' index "fac"), in candidates' order."""
    outer = cross(block, vpp=vpps, zero=zeros, split=splits)
    divides = cluster.shape.L % (outer["p"] * outer["vpp"]) == 0
    same = ((outer["split"] > 0) & (outer["p"] == 1)) | ((outer["split"] == SPLITS.index("near_even")) & divides)
    x = grid_letters(cluster, {name: outer[name] for name in GRID if name in outer} | expert_columns(outer), profile)
    ok, later = ~same, []
    for rule in rules_:
        try:  # a rule that reads no b or m holds for every b alike
            ok &= np.asarray(rule.holds(x), dtype=bool)
        except AttributeError:
            later.append(rule)
    outer = {name: x[ok] for name, x in outer.items()}
    # the b of each row: those with b d | gbs (the rule gbs % (b d), still checked below with the others)
    d_values, d_index = np.unique(outer["d"], return_inverse=True)
    fits_b = cluster.gbs % (bs[None, :] * d_values[:, None]) == 0  # [distinct d, b]
    rows, b_index = np.nonzero(fits_b[d_index])  # [row, b] pairs, row-major
    grid = {name: x[rows] for name, x in outer.items()}
    grid["b"] = bs[b_index]
    grid["m"] = cluster.gbs // (grid["b"] * grid["d"])
    x = grid_letters(cluster, {name: grid[name] for name in GRID if name in grid} | expert_columns(grid), profile)
    ok = np.logical_and.reduce(
        [np.ones(len(rows), dtype=bool)] + [np.asarray(rule.holds(x), dtype=bool) for rule in later]
    )
    # candidates' order: factorisation, vpp, b, ZeRO stage, split
    zero_index = np.zeros(max(ZERO_STAGES) + 1, dtype=np.int64)
    zero_index[zeros] = np.arange(len(zeros))
    at = np.flatnonzero(ok)
    key = (
        ((grid["fac"][at] * len(vpps) + np.searchsorted(vpps, grid["vpp"][at])) * len(bs) + b_index[at]) * len(zeros)
        + zero_index[grid["zero"][at]]
    ) * len(splits) + grid["split"][at]
    at = at[np.argsort(key, kind="stable")]
    names = [name for name in block if name != "fac"] + ["vpp", "b", "zero", "split", "m"]
    return {name: grid[name][at] for name in names}
