"""plan.best (the --top K rows, evaluated in the proxy's bound order) against the exhaustive plan.search.

Source of truth: plan.search, which evaluates every valid row and ranks the fitting ones. Tolerance: none. On 24
seeded random (model, cluster, recipe, K, limit) cases (dense, MoE, MLA with dense-first layers, every recipe, limits
from below every peak to above most) best's K rows are search's first K rows, the same JSON row for row (config,
bytes, peak, score), and where best evaluated everything (nothing or few fit) its count of fitting rows is search's.
"""
from pathlib import Path

import numpy as np
import pytest

from symbolic.config.hfconfig import resolve_model
from symbolic.config.shapes import PRESETS
from symbolic.plan.best import best
from symbolic.plan.enumerate import Cluster
from symbolic.plan.search import search

PUBLISHED = Path(__file__).resolve().parents[1] / "grids" / "models" / "published"
# (model, recipes whose rules take it)
MODELS = (("tiny", ("paper", "torchtitan", "deepspeed", "jax")), ("llama3-8b", ("paper", "torchtitan", "jax")),
          ("tiny-moe", ("paper", "jax")), ("mixtral-8x7b", ("paper",)),
          (str(PUBLISHED / "deepseek-v2-lite.json"), ("paper",)))


def _cases(n: int = 24, seed: int = 28):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        model, recipes = MODELS[i % len(MODELS)]
        out.append(dict(model=model, profile=recipes[int(rng.integers(len(recipes)))],
                        gpus=int(rng.choice([4, 6, 8, 12, 16, 24, 32])), s=int(rng.choice([256, 512, 1024, 4096])),
                        gbs=int(rng.choice([8, 12, 16, 32, 64])), top=int(rng.choice([1, 3, 10, 40])),
                        quantile=float(rng.choice([-1.0, 0.002, 0.05, 0.3, 0.9]))))
    return out


CASES = _cases()


def test_cases_span_models_recipes_and_limits():
    assert {c["profile"] for c in CASES} == {"paper", "torchtitan", "deepspeed", "jax"}
    assert {c["model"] for c in CASES} == {m for m, _ in MODELS}
    assert {c["quantile"] for c in CASES} >= {-1.0, 0.9}


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{Path(c['model']).stem}-{c['profile']}-{c['gpus']}-"
                         f"s{c['s']}-gbs{c['gbs']}-k{c['top']}-q{c['quantile']}")
def test_best_k_equal_an_exhaustive_search(case):
    shape = PRESETS.get(case["model"]) or resolve_model(case["model"])
    cluster = Cluster(shape, gpus=case["gpus"], s=case["s"], gbs=case["gbs"])
    probe = search(cluster, np.inf, profile=case["profile"])
    if probe.evaluated == 0:
        pytest.skip("no valid configuration")  # counted below: most cases have some
    peaks = np.sort(probe.rows["peak"])
    limit = peaks[0] * 0.99 if case["quantile"] < 0 else float(np.quantile(peaks, case["quantile"]))
    full = search(cluster, limit, profile=case["profile"])
    got = best(cluster, limit, case["top"], profile=case["profile"])
    want = [full.config(int(i)) for i in full.order[:case["top"]]]
    assert [got.config(int(i)) for i in got.order] == want
    assert got.valid == full.valid
    if got.complete:
        assert got.feasible == full.feasible and got.evaluated == full.evaluated
    if not want:  # nothing fits: the lowest peak is the one search names
        assert got.rows["peak"].min() == full.rows["peak"].min()


def test_most_cases_have_valid_configurations():
    """The skip above is rare: at least 20 of the 24 cases are compared."""
    compared = 0
    for case in CASES:
        shape = PRESETS.get(case["model"]) or resolve_model(case["model"])
        cluster = Cluster(shape, gpus=case["gpus"], s=case["s"], gbs=case["gbs"])
        from symbolic.plan.enumerate import valid

        compared += len(valid(cluster, case["profile"])[0]["d"]) > 0
    assert compared >= 20


def test_best_evaluates_a_fraction_of_a_large_cluster():
    """Where many rows fit, best stops early: on llama3-8b over 64 GPUs under 80 GiB it evaluates under half the rows
    the exhaustive search does, and says it is not complete (feasible unknown)."""
    cluster = Cluster(PRESETS["llama3-8b"], gpus=64, s=4096, gbs=256)
    got = best(cluster, 0.8 * 80 * 2**30, 10)
    full = search(cluster, 0.8 * 80 * 2**30)
    assert not got.complete and got.feasible is None and got.evaluated < full.evaluated / 2
    assert [got.config(int(i)) for i in got.order] == [full.config(int(i)) for i in full.order[:10]]
