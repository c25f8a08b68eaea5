"""plan ranked by the step-time model (plan.ranking.StepTime): best's K rows are the exhaustive search's first K
(source of truth: plan.search over every row; tolerance: none), each row's score is estimate's tokens/s/GPU for the
same configuration (1e-9 relative), and the CLI's --rank-by/--system refuse what they cannot rank in one line."""

import json
from pathlib import Path

import pytest

from symbolic.config.shapes import PRESETS
from symbolic.plan.best import best
from symbolic.plan.enumerate import Cluster
from symbolic.plan.ranking import StepTime
from symbolic.plan.search import search
from symbolic.time.evaluate import step_time
from symbolic.time.systems import system

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "model,gpus,s,gbs,name", [("llama3-8b", 16, 1024, 32, "dgx-h100"), ("tiny-moe", 8, 512, 16, "gb200-nvl72")]
)
def test_best_equals_search_and_estimate(model, gpus, s, gbs, name):
    cluster = Cluster(PRESETS[model], gpus=gpus, s=s, gbs=gbs)
    ranker = StepTime(system(name))
    limit = 0.8 * 80 * 2**30
    full = search(cluster, limit, hw=ranker, zero=(1,))
    top = best(cluster, limit, 5, hw=ranker, zero=(1,))
    want = [full.config(int(i)) for i in full.order[:5]]
    got = [top.config(int(i)) for i in top.order[:5]]
    assert [(w["config"], w["score"]) for w in want] == [(g["config"], g["score"]) for g in got]
    for i in full.order[:3]:
        row = full.config(int(i))
        one = step_time(cluster.shape, full.training(int(i)), system(name))
        assert row["score"] == pytest.approx(one["tokens_per_s_per_gpu"], rel=1e-9)


@pytest.mark.parametrize("model,gpus,s,gbs,first", [("llama3-8b", 16, 1024, 32, 4), ("tiny-moe", 8, 512, 16, 1)])
def test_best_in_small_rounds_prunes_and_stays_exact(model, gpus, s, gbs, first, monkeypatch):
    # a first round of `first` rows (sizes at which a later round has a K-th score to prune by): the K-th score is known early, the (row, recompute) pairs bounded below it are left out,
    # and the 5 rows are still the exhaustive search's first 5
    import symbolic.plan.best as plan_best

    cluster = Cluster(PRESETS[model], gpus=gpus, s=s, gbs=gbs)
    ranker, limit = StepTime(system("dgx-h100")), 0.8 * 80 * 2**30
    full = search(cluster, limit, hw=ranker, zero=(1,))
    monkeypatch.setattr(plan_best, "FIRST_ROUND", first)
    top = best(cluster, limit, 5, hw=ranker, zero=(1,))
    assert top.counts["evaluated"] < full.counts["evaluated"] and "evaluate.pair_bounds" in top.seconds
    assert [full.config(int(i))["config"] for i in full.order[:5]] == [
        top.config(int(i))["config"] for i in top.order[:5]
    ]


PLAN = ["plan", "--model", "tiny", "--gpus", "8", "--seq", "256", "--gbs", "16", "--top", "2"]


def _plan(capsys, *flags) -> tuple[int, str, str]:
    """`mem4d plan` of the tiny model in this process (no interpreter start): exit status, stdout, stderr."""
    from symbolic.cli.entry import main

    rc = main([*PLAN, *flags])
    out, err = capsys.readouterr()
    return rc, out, err


def test_cli_rank_by(capsys):
    rc, out, err = _plan(capsys, "--json", "--system", "dgx-b200")
    assert rc == 0, err
    head = json.loads(out)
    assert (head["rank_by"], head["system"]) == ("time", "dgx-b200")
    rc, _, err = _plan(capsys, "--rank-by", "proxy", "--system", "dgx-b200")
    assert rc == 2 and err.count("\n") == 1 and "--rank-by time" in err
    proxy = json.loads(_plan(capsys, "--json", "--rank-by", "proxy")[1])
    assert proxy["rank_by"] == "proxy" and "system" not in proxy


def test_cli_table_ends_with_the_first_rows_step_time_breakdown(capsys, monkeypatch):
    """Source of truth: plan's own JSON score of row 1 (the step-time model's tokens/s/GPU of that configuration);
    exact to the printed digits."""
    monkeypatch.setenv("COLUMNS", "200")
    head = json.loads(_plan(capsys, "--system", "dgx-b200", "--json")[1])["configs"][0]
    rc, out, err = _plan(capsys, "--system", "dgx-b200")
    assert rc == 0, err
    tail = out.split("the first one's step time (row 1, ", 1)[1]
    assert tail.startswith(f"dp={head['config']['dp']} tp={head['config']['tp']} pp={head['config']['pp']} ")
    assert "step time on dgx-b200 (b200-192gb" in tail and "│ T_lin " in tail
    assert f"\n{head['score']:,.0f} tokens/s/GPU" in tail
    assert "the first one's step time" not in _plan(capsys, "--rank-by", "proxy")[1]  # the proxy ranks: none
