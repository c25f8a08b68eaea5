"""plan.best (the --top K rows, evaluated in the proxy's bound order) against the exhaustive plan.search.

Source of truth: plan.search, which evaluates every valid row and ranks the fitting ones. Tolerance: none. On 20
seeded random (model, cluster, recipe, K, limit) cases (dense, MoE, MLA with a dense first layer, every recipe and
its recompute choices, limits from below every peak to above most) best's K rows are search's first K rows, the same
JSON row for row (config, bytes, peak, score), and where best evaluated everything (nothing or few fit) its count of
fitting rows is search's.
"""

import numpy as np
import pytest

from plan_shapes import MLA_MOE
from symbolic.config.shapes import PRESETS, ModelShape
from symbolic.config.parallel import ZERO_STAGES
from symbolic.plan.best import best
from symbolic.plan.enumerate import Cluster, valid
from symbolic.plan.search import search

# (model, recipes whose rules take it, ZeRO stages searched: every stage for the dense models, whose ties across
# stages the order must keep; one for the models with experts, whose 5 and 6 recompute choices would otherwise
# derive 20 and 24 estimators in a cold session)
MODELS = (
    ("tiny", ("paper", "torchtitan", "deepspeed", "jax"), ZERO_STAGES),
    ("tiny-moe", ("paper",), (1,)),
    ("llama3-8b", ("paper", "torchtitan"), ZERO_STAGES),
    ("toy-mla-moe", ("paper",), (1,)),
)


def _shape(name: str) -> ModelShape:
    return MLA_MOE if name == MLA_MOE.name else PRESETS[name]


def _cases(n: int = 20, seed: int = 28):
    """n seeded random cases, the models in turn, each drawn again until its cluster has valid configurations."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        model, recipes, zero = MODELS[len(out) % len(MODELS)]
        case = dict(
            model=model,
            profile=recipes[int(rng.integers(len(recipes)))],
            zero=zero,
            gpus=int(rng.choice([4, 6, 8, 12, 16, 24])),
            s=int(rng.choice([256, 512, 1024, 4096])),
            gbs=int(rng.choice([8, 12, 16, 32])),
            top=int(rng.choice([1, 3, 10, 40])),
            quantile=float(rng.choice([-1.0, 0.002, 0.05, 0.3, 0.9])),
        )
        cluster = Cluster(_shape(model), gpus=case["gpus"], s=case["s"], gbs=case["gbs"])
        if len(valid(cluster, case["profile"], zero)[0]["d"]):
            out.append(case)
    return out


CASES = _cases()


def test_cases_span_models_recipes_and_limits():
    assert {c["profile"] for c in CASES} == {"paper", "torchtitan", "deepspeed", "jax"}
    assert {c["model"] for c in CASES} == {m for m, _, _ in MODELS}
    assert {c["quantile"] for c in CASES} >= {-1.0, 0.9}


@pytest.mark.parametrize(
    "case",
    CASES,
    ids=lambda c: f"{c['model']}-{c['profile']}-{c['gpus']}-s{c['s']}-gbs{c['gbs']}-k{c['top']}-q{c['quantile']}",
)
def test_best_k_equal_an_exhaustive_search(case):
    """search at an infinite limit ranks every row; at a limit its order is that one's rows under the limit (the
    same sort over fewer rows), so one exhaustive search serves as the truth at the case's limit."""
    cluster = Cluster(_shape(case["model"]), gpus=case["gpus"], s=case["s"], gbs=case["gbs"])
    full = search(cluster, np.inf, profile=case["profile"], zero=case["zero"])
    peaks = np.sort(full.rows["peak"])
    limit = peaks[0] * 0.99 if case["quantile"] < 0 else float(np.quantile(peaks, case["quantile"]))
    fits = [int(i) for i in full.order if full.rows["peak"][i] < limit]
    got = best(cluster, limit, case["top"], profile=case["profile"], zero=case["zero"])
    assert [got.config(int(i)) for i in got.order] == [full.config(i) for i in fits[: case["top"]]]
    assert got.valid == full.valid
    if got.complete:
        assert got.feasible == len(fits) and got.evaluated == full.evaluated
    if not fits:  # nothing fits: the lowest peak is the one search names
        assert got.rows["peak"].min() == peaks[0]


def test_best_evaluates_a_fraction_of_a_large_cluster():
    """Where many rows fit, best stops early: on llama3-8b over 64 GPUs under 80 GiB it evaluates under half the rows
    the exhaustive search does, and says it is not complete (feasible unknown)."""
    cluster = Cluster(PRESETS["llama3-8b"], gpus=64, s=4096, gbs=256)
    got = best(cluster, 0.8 * 80 * 2**30, 10)
    full = search(cluster, 0.8 * 80 * 2**30)
    assert not got.complete and got.feasible is None and got.evaluated < full.evaluated / 2
    assert [got.config(int(i)) for i in got.order] == [full.config(int(i)) for i in full.order[:10]]


@pytest.mark.parametrize("limit", [0.8 * 80 * 2**30, 0.8 * 16 * 2**30, 1e3])
def test_search_keeping_only_what_fits_lists_the_same(limit):
    """search(keep_all=False), what --all and --csv run: the same rows in the same order, the same counts and the
    same lowest peak as keeping every row (at three limits: most fit, some fit, none fits)."""
    cluster = Cluster(PRESETS["tiny"], gpus=8, s=1024, gbs=16)
    every, fitting = search(cluster, limit), search(cluster, limit, keep_all=False)
    assert [every.config(int(i)) for i in every.order] == [fitting.config(int(i)) for i in fitting.order]
    assert (every.evaluated, every.feasible, every.valid) == (fitting.evaluated, fitting.feasible, fitting.valid)
    lowest = [int(x.rows["peak"].argmin()) for x in (every, fitting)]
    assert every.config(lowest[0]) == fitting.config(lowest[1])
    assert len(fitting.rows["d"]) <= fitting.feasible + len(fitting.present)
