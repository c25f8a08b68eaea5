"""`symbolic.plan`: vectorized enumeration against the source of truth, `Training(...).check(shape)`, one candidate at a time.

Tolerance: none. The masks must accept exactly the candidates that Training accepts, and the first rule they report
broken must be the one Training's one-line error names (BrokenRule.rule). A row of an uneven split kind (near-even,
balanced: the split is chosen later) stands for the Training with one valid split of whole chunks (conftest.a_split),
where one can be built.
"""

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
import pytest

from plan_shapes import row_training

from symbolic.config.errors import ConfigError
from symbolic.config.errors import BrokenRule
from symbolic.recipes.registry import select
from symbolic.config.shapes import PRESETS, ModelShape
from symbolic.config.parallel import ZERO_STAGES
from symbolic.plan.enumerate import GRID, SPLITS, Cluster, candidates, divisors, factorisations, masks, valid
from symbolic.plan.why_not import why_not

# all sizes distinct so a swapped letter shows: t must divide a=6, k=3 and f=120; L=6 has divisors 1, 2, 3, 6
ODD = ModelShape("odd", h=48, f=120, a=6, k=3, L=6, v=136)
ODD_MOE = ModelShape("odd-moe", h=48, f=120, a=6, k=3, L=6, v=136, E=6, k_e=2, f_e=30)  # no e > 1 divides all of E

CASES = [
    Cluster(PRESETS["tiny"], gpus=16, s=256, gbs=32),
    Cluster(PRESETS["tiny"], gpus=24, s=96, gbs=12),
    Cluster(PRESETS["tiny"], gpus=8, s=24, gbs=8, sp=False),
    Cluster(ODD, gpus=36, s=36, gbs=18),
    Cluster(ODD, gpus=12, s=60, gbs=24, sp=False),
    Cluster(ODD, gpus=1, s=7, gbs=5),
    Cluster(PRESETS["tiny-moe"], gpus=16, s=256, gbs=32),  # experts: e and t_e searched too
    Cluster(ODD_MOE, gpus=12, s=36, gbs=12),
]
SIX = ("d", "t", "p", "c", "vpp", "b")


def _splittable(L: int, row: dict) -> bool:
    """Whether uneven stages of whole vpp-layer chunks exist: L a multiple of vpp, at least p chunks."""
    return L % row["vpp"] == 0 and row["p"] * row["vpp"] <= L


def _kinds(got: dict) -> tuple[set, ...]:
    """The (d, t, p, c, vpp, b) of each split kind's rows, of one ZeRO stage (every stage has the same)."""
    one = got["zero"] == ZERO_STAGES[0]
    return tuple(set(zip(*(got[x][one & (got["split"] == kind)].tolist() for x in SIX))) for kind in range(len(SPLITS)))


def _brute_force(shape, gpus, s, gbs, sp) -> tuple[set, ...]:
    """Every (d, t, p, c, vpp, b) Training accepts with an even split; with an uneven one where p >= 2 (balanced)
    and p vpp does not divide L (near-even too)."""
    even, near_even, balanced = set(), set(), set()
    fac = factorisations(gpus)
    for d, t, p, c in zip(*(fac[x].tolist() for x in "dtpc")):
        for vpp, b in itertools.product(range(1, shape.L + 1), range(1, gbs + 1)):
            row = dict(d=d, t=t, p=p, c=c, vpp=vpp, b=b)
            for split, out in ((0, even), (2, balanced)):
                if split and (p == 1 or not _splittable(shape.L, row)):
                    continue
                try:
                    row_training(Cluster(shape, gpus, s, gbs, sp), {**row, "split": split}).check(shape)
                except ConfigError:
                    continue
                out.add((d, t, p, c, vpp, b))
                if split and shape.L % (p * vpp):
                    near_even.add((d, t, p, c, vpp, b))
    return even, near_even, balanced


def test_divisors_and_factorisations():
    assert divisors(12).tolist() == [1, 2, 3, 4, 6, 12]
    assert divisors(1).tolist() == [1]
    assert divisors(16384).tolist() == [2**i for i in range(15)]
    fac = factorisations(12)
    rows = set(zip(*(fac[x].tolist() for x in "dtpc")))
    brute = {q for q in itertools.product(range(1, 13), repeat=4) if np.prod(q) == 12}
    assert rows == brute
    assert len(factorisations(2**14)["d"]) == 680  # C(14 + 3, 3) ordered compositions of the exponent


@pytest.mark.parametrize("cluster", CASES, ids=lambda c: f"{c.shape.name}-N{c.gpus}-s{c.s}-gbs{c.gbs}-sp{c.sp}")
def test_masks_agree_with_training_check_on_every_candidate(cluster):
    grid = candidates(cluster)
    ok = masks(grid, cluster)
    assert list(ok) == [rule.name for rule in select("paper", policy=False)]  # every profile's and the paper's
    n = len(grid["d"])
    assert n > 0
    n_valid = 0
    for i in range(n):
        row = {name: int(grid[name][i]) for name in GRID if name in grid}  # e, t_e: a model with experts
        broken = [rule for rule, holds in ok.items() if not holds[i]]
        if row["split"] and not _splittable(cluster.shape.L, row):
            assert "uneven: whole chunks" in broken, row
            continue
        try:
            row_training(cluster, row).check(cluster.shape)
        except BrokenRule as err:
            assert broken, f"Training rejects {row}: {err}, masks accept it"
            assert err.rule == broken[0], f"{row}: masks say {broken[0]!r} first, Training says {err}"
        else:
            assert not broken, f"Training accepts {row}, masks reject it for {broken}"
            assert row["m"] == row_training(cluster, row).m
            divides = cluster.shape.L % (row["p"] * row["vpp"]) == 0
            same = row["split"] and (row["p"] == 1 or (row["split"] == 1 and divides))
            n_valid += not same  # plan leaves out what another split kind stands for
    assert len(valid(cluster)[0]["d"]) == n_valid


@pytest.mark.parametrize("cluster", CASES[:2] + CASES[3:5], ids=lambda c: f"{c.shape.name}-N{c.gpus}")
def test_enumeration_is_complete(cluster):
    """Brute force over every vpp in 1..L and b in 1..gbs: no valid Training is missing from `valid`, with an even
    split or a balanced one, under every ZeRO stage."""
    got = valid(cluster)[0]
    kinds = _kinds(got)
    assert kinds == _brute_force(cluster.shape, cluster.gpus, cluster.s, cluster.gbs, cluster.sp)
    rows = set(zip(*(got[x].tolist() for x in (*SIX, "zero", "split"))))
    assert len(rows) == len(got["d"]) == len(ZERO_STAGES) * sum(map(len, kinds))  # no duplicates


def test_why_not_names_each_broken_rule():
    """7 GPUs, gbs=1024, L=80: dp=7 breaks the batch rule, pp=7 the layer rule (unless stages may be uneven: then it
    is the one valid factorisation), tp=7 the head rules, cp=7 s % 2c."""
    cluster = Cluster(PRESETS["llama3-70b"], gpus=7, s=8192, gbs=1024)
    assert len(valid(cluster, balance=False)[0]["d"]) == 0
    got = valid(cluster)[0]
    assert set(got["p"].tolist()) == {7} and (got["split"] > 0).all()
    assert "dp=1 tp=1 pp=7 cp=1: valid" in why_not(cluster)[0]
    lines, total = why_not(cluster, balance=False)
    assert len(lines) == total == 4
    by_start = {line.split(":")[0]: line for line in lines}
    assert "gbs=1024 not divisible by mbs x dp = 1x7" in by_start["dp=7 tp=1 pp=1 cp=1"]
    assert "pp x vpp = 7x1 = 7 do not divide layers L=80" in by_start["dp=1 tp=1 pp=7 cp=1"]
    hint = "give --stage-layers (pp entries summing to 80; estimate, latex and report choose one with --balance)"
    assert hint in by_start["dp=1 tp=1 pp=7 cp=1"]
    line = by_start["dp=1 tp=7 pp=1 cp=1"]
    assert "attention heads a=64" in line and "KV heads k=8" in line
    assert "MLP size" not in line  # f = 28672 = 7 x 4096
    assert "s=8192 not divisible by tp x cp = 7" in line
    assert "s=8192 not divisible by 2 x cp = 14" in by_start["dp=1 tp=1 pp=1 cp=7"]


def test_why_not_marks_valid_factorisations():
    lines, _ = why_not(Cluster(PRESETS["tiny"], gpus=2, s=256, gbs=8))
    assert why_not(Cluster(PRESETS["tiny"], gpus=2, s=256, gbs=8), limit=1) == (lines[:1], 4)
    assert sorted(lines) == sorted(
        f"dp={d} tp={t} pp={p} cp={c}: valid" for d, t, p, c in [(2, 1, 1, 1), (1, 2, 1, 1), (1, 1, 2, 1), (1, 1, 1, 2)]
    )


def test_cluster_rejects_bad_sizes():
    with pytest.raises(ConfigError, match="gpus must be a positive integer"):
        Cluster(PRESETS["tiny"], gpus=0, s=8, gbs=8)
    with pytest.raises(ConfigError, match="gpus=16777217 is beyond what plan enumerates"):
        Cluster(PRESETS["tiny"], gpus=2**24 + 1, s=8, gbs=8)


def test_highly_composite_cluster_is_enumerated_whole():
    """14,414,400 GPUs (504 divisors): every valid row multiplies out to N, passes every mask, and appears once."""
    cluster = Cluster(PRESETS["llama3-70b"], gpus=14414400, s=8192, gbs=14414400)
    got, _ = valid(cluster)
    assert len(got["d"]) > 100
    assert np.all(got["d"] * got["t"] * got["p"] * got["c"] == cluster.gpus)
    assert np.logical_and.reduce(list(masks(got, cluster).values())).all()
    rows = set(zip(*(got[x].tolist() for x in (*SIX, "zero", "split"))))
    assert len(rows) == len(got["d"])


@settings(max_examples=40, deadline=None)
@given(
    # smooth GPU counts and sequence lengths (plus the odd prime) so that most draws have valid configurations
    gpus=st.sampled_from([1, 2, 3, 4, 6, 8, 9, 12, 16, 18, 24, 32, 36, 48, 7]),
    s=st.sampled_from([7, 12, 16, 24, 32, 36, 48, 64]),
    gbs=st.integers(1, 24),
    sp=st.booleans(),
    heads=st.sampled_from([(6, 3), (8, 2), (4, 4), (12, 6), (9, 3)]),
    f=st.integers(1, 40),
    L=st.integers(1, 12),
)
def test_valid_equals_brute_force_over_random_clusters(gpus, s, gbs, sp, heads, f, L):
    """Random small clusters: `valid` (pruned, two-pass) == every (d, t, p, c, vpp, b) Training accepts."""
    a, k = heads
    shape = ModelShape("random", h=8 * a, f=f, a=a, k=k, L=L, v=10)  # dh = 8: a flash kernel takes it
    cluster = Cluster(shape, gpus=gpus, s=s, gbs=gbs, sp=sp)
    got = valid(cluster)[0]
    kinds = _kinds(got)
    assert kinds == _brute_force(shape, gpus, s, gbs, sp)
    assert len(got["d"]) == len(ZERO_STAGES) * sum(map(len, kinds))


@settings(max_examples=60, deadline=None)
@given(st.integers(3, 12), st.integers(1, 6), st.integers(0, 2**31 - 1))
def test_candidate_ranks_hold_the_most_of_any_rank(ranks, rows, seed):
    """plan.splits._candidates: for any total that never falls with more layers or micro batches, the largest over
    the candidate ranks equals the largest over every rank, where in-flight micro batches never rise with the rank
    (1F1B's min(m, p - r)); elsewhere every rank is a candidate. Source of truth: the maximum over all ranks."""
    from symbolic.plan.splits import _candidates

    rng = np.random.default_rng(seed)
    held = rng.integers(1, 6, (rows, ranks))
    micro = np.sort(rng.integers(1, 9, (rows, ranks)), axis=1)[:, ::-1]
    total = lambda layers, m: 7.0 * layers + 3.0 * m + 0.5 * layers * m + np.minimum(layers, 2)  # monotone in both
    got_held, got_micro = _candidates(held, micro)
    assert got_held.shape[1] <= ranks
    np.testing.assert_array_equal(total(got_held, got_micro).max(1), total(held, micro).max(1))
    rising = micro[:, ::-1].copy()
    if (np.diff(rising, axis=1) > 0).any():
        assert _candidates(held, rising)[0] is held
