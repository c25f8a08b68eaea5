"""Uneven pipeline stages (--stage-layers) and balanced splits (estimate --balance, plan).

Sources of truth: the paper profile's sympy stage expressions substituted exactly (stage_components with L_r layers
and m_r = in_flight(r) micro batches); brute force over every split of a small model through `estimate` one
configuration at a time; Training's rule table for what is refused. Tolerance: exact (integer bytes), 1e-12
relative for float evaluation against exact rationals.
"""

import dataclasses
import itertools
import json
import subprocess
import sys

import numpy as np
import pytest
import sympy as sp
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from symbolic.config.errors import ConfigError
from symbolic.config.glossary import inputs_for
from symbolic.config.shapes import PRESETS
from symbolic.config.switches import Switches
from symbolic.config.symbols import BY_NAME, r
from symbolic.config.training import Training
from symbolic.config.stages import stage_of
from symbolic.estimator.estimate import estimate
from symbolic.plan.balance import balance
from symbolic.plan.enumerate import Cluster
from symbolic.plan.search import search
from symbolic.recipes import load

TINY = PRESETS["tiny"]  # L = 8
GiB = 2**30


def mem4d(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "symbolic.cli", *argv], capture_output=True, text=True, timeout=120)


def _compositions(total: int, parts: int, step: int = 1):
    """Every tuple of `parts` positive multiples of `step` summing to `total`."""
    for cuts in itertools.combinations(range(1, total // step), parts - 1):
        bounds = (0, *cuts, total // step)
        yield tuple(step * (b - a) for a, b in zip(bounds, bounds[1:]))


@settings(max_examples=20, deadline=None)
@given(
    p=st.integers(2, 6),
    seed=st.integers(0, 10**6),
    zero=st.sampled_from([0, 1, 2, 3]),
    recompute=st.sampled_from(["none", "selective", "full"]),
    vpp=st.sampled_from([1, 2]),
)
def test_each_rank_is_its_stage_expression(p, seed, zero, recompute, vpp):
    """Every rank of an uneven split: exact sympy substitution of its stage kind's components with its own layers
    L_r and m_r = in_flight(r) (1F1B or interleaved), rounded to whole bytes as estimate does."""
    assume(p * vpp <= TINY.L)
    rng = np.random.default_rng(seed)
    split = rng.choice(list(_compositions(TINY.L, p, vpp)))
    m = p * int(rng.integers(1, 4))
    training = Training(
        d=2, p=p, vpp=vpp, s=256, gbs=2 * m, recompute=recompute, zero=zero, stage_layers=tuple(int(x) for x in split)
    )
    result = estimate(TINY, training)
    module = load("paper")
    sw = Switches.of(training, True, TINY.tied)
    values = {BY_NAME[n]: sp.Integer(x) for n, x in inputs_for(TINY, training).items()}
    assert [s["rank"] for s in result.stages] == list(range(p))
    for stage in result.stages:
        micro = module.in_flight(r).xreplace(values).subs(r, stage["rank"])
        parts = module.stage_components(sw, stage_of(stage["rank"], p), sp.Integer(stage["layers"]), micro)
        want = {x.name: int(round(float(x.expr.xreplace(values)))) for x in parts}
        assert {n: v for n, v in stage["bytes"].items() if n != "total"} == want, stage["rank"]
        assert stage["in_flight"] == float(micro)


def test_explicit_even_split_has_the_even_stages():
    """--stage-layers 2,2,2,2 on tiny (L = 8, p = 4): ranks 0, 1, 3 hold what first, middle, last hold without it;
    the verdict is the most loaded stage alone."""
    base = Training(d=2, p=4, s=256, gbs=16)
    even = estimate(TINY, base)
    explicit = estimate(TINY, Training(d=2, p=4, s=256, gbs=16, stage_layers=(2, 2, 2, 2)))
    by_rank = {s["rank"]: s["bytes"] for s in explicit.stages}
    for stage in even.stages:
        assert by_rank[stage["rank"]] == stage["bytes"], stage["stage"]
    assert explicit.bytes == even.bytes
    assert explicit.peak == explicit.most_loaded_stage["bytes"]["total"] and explicit.peak_from != "total"


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["--pp", "3"],
            (
                "pp x vpp = 3x1 = 3 do not divide layers L=8 of tiny: give --stage-layers (pp entries summing "
                "to 8; estimate, latex and report choose one with --balance)"
            ),
        ),
        (
            ["--pp", "2", "--vpp", "3", "--gbs", "4"],
            ("pp x vpp = 2x3 = 6 do not divide layers L=8 of tiny: choose pp and vpp whose product divides 8"),
        ),  # no hint of a split it refuses
        (["--pp", "3", "--stage-layers", "3,5"], "has 2 entries, but pp=3"),
        (["--pp", "3", "--stage-layers", "3,3,3"], "sum to 9, but tiny has L=8 layers"),
        (["--pp", "2", "--vpp", "2", "--gbs", "4", "--stage-layers", "3,5"], "every entry must be a multiple of 2"),
        (["--pp", "2", "--stage-layers", "0,8"], "expected comma-separated positive layer counts"),
        (["--pp", "2", "--stage-layers", "4,x"], "expected comma-separated positive layer counts"),
        (["--pp", "2", "--stage-layers", "4,4", "--balance"], "give it or --stage-layers, not both"),
        (["--pp", "9", "--balance"], "at least pp x vpp = 9"),
        (["--pp", "2", "--stage-layers", "4,4", "--profile", "jax"], "the jax profile alone takes even stages"),
    ],
)
def test_bad_stage_layers_are_one_line_exit_2(argv, message):
    done = mem4d("estimate", "--model", "tiny", "--seq", "256", *argv)
    assert done.returncode == 2, done.stdout
    assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr


@pytest.mark.parametrize(
    "p, vpp, recompute, zero", [(3, 1, "none", 1), (4, 1, "full", 3), (2, 2, "none", 0), (4, 2, "selective", 2)]
)
def test_balance_is_the_best_split_by_brute_force(p, vpp, recompute, zero):
    """tiny (L = 8): the balanced split's most loaded stage equals the least one over every split that estimate
    accepts (each stage's total from estimate, one configuration at a time), and is no worse than the even one."""
    base = Training(d=2, p=p, vpp=vpp, s=512, gbs=4 * p, recompute=recompute, zero=zero)
    bal = balance(TINY, base)
    best = min(
        estimate(TINY, dataclasses.replace(base, stage_layers=split)).peak for split in _compositions(TINY.L, p, vpp)
    )
    assert bal.peak == best == estimate(TINY, bal.training).peak
    assert sum(bal.split) == TINY.L and bal.peak <= bal.even_peak
    cap = -(-TINY.L // (p * vpp)) * vpp  # the most even split: no stage above ceil(L/p) layers, the least such
    evenest = min(
        estimate(TINY, dataclasses.replace(base, stage_layers=split)).peak
        for split in _compositions(TINY.L, p, vpp)
        if max(split) <= cap
    )
    assert bal.even_peak == evenest and max(bal.even) <= cap
    assert list(bal.totals) == [s["bytes"]["total"] for s in estimate(TINY, bal.training).stages]


def test_balance_moves_layers_off_the_first_stage():
    """1F1B keeps p micro batches in flight on rank 0 and one on rank p - 1: without recompute the balanced split
    gives later ranks more layers, and its peak is below the even split's."""
    bal = balance(PRESETS["llama3-8b"], Training(d=8, t=4, p=4, s=8192, gbs=64, zero=1))
    assert bal.split[0] < bal.split[-1] and bal.peak < bal.even_peak
    assert bal.split == tuple(sorted(bal.split))


def test_estimate_balance_cli():
    """estimate --balance: the split, each rank under it and under the even split, the value to pass."""
    argv = ["estimate", "--model", "llama3-8b", "--dp", "8", "--tp", "4", "--pp", "4", "--seq", "8192", "--gbs", "64"]
    done = mem4d(*argv, "--balance", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    bal = report["balance"]
    assert report["config"]["stage_layers"] == bal["stage_layers"] and sum(bal["stage_layers"]) == 32
    assert bal["peak_bytes"] == report["peak_bytes"] == max(bal["stages_bytes"]) < bal["even"]["peak_bytes"]
    assert bal["even"]["stage_layers"] == [8, 8, 8, 8]
    assert [s["bytes"]["total"] for s in report["stages"]] == bal["stages_bytes"]
    even = json.loads(mem4d(*argv, "--json").stdout)
    assert bal["even"]["stages_bytes"][0] == even["stages"][0]["bytes"]["total"]
    text = mem4d(*argv, "--balance").stdout
    assert "--stage-layers " + ",".join(map(str, bal["stage_layers"])) in text and "even GiB" in text


def test_plan_finds_pipeline_sizes_that_do_not_divide_L():
    """tiny (L = 8) on 12 GPUs: pp = 3 and 6 have no even split; plan lists them with the most even split (no stage
    above ceil(L/p) layers) and, where it differs in width, the balanced one (at pp = 6 no balanced split is wider
    than 2 layers), each row as estimate gives it for that --stage-layers (exact bytes and verdict)."""
    cluster = Cluster(TINY, gpus=12, s=256, gbs=24)
    plan = search(cluster, limit=2 * GiB)
    rows = plan.rows
    assert {3, 6} <= set(rows["p"][rows["split"] == 1].tolist()) and 3 in set(rows["p"][rows["split"] == 2].tolist())
    assert not ((rows["split"] == 0) & (TINY.L % rows["p"] != 0)).any()  # even rows only where p divides L
    near = rows["split"] == 1  # no stage above ceil(L/p) layers (in chunks of vpp)
    assert (rows["max_layers"][near] == rows["vpp"][near] * -(-(TINY.L // rows["vpp"][near]) // rows["p"][near])).all()
    for i in np.flatnonzero(rows["split"] > 0)[::37]:
        config = plan.config(int(i))
        assert len(config["config"]["stage_layers"]) == config["config"]["pp"]
        one = estimate(TINY, plan.training(int(i)))
        assert (one.peak, one.peak_from) == (config["peak_bytes"], config["peak_from"])


def test_plan_splits_are_estimate_balance_splits():
    """For llama3.1-405b (a layer holds far more than the 40M-parameter bucket) plan's vectorized split is the exact
    greedy's of estimate --balance, for a sample of balanced rows."""
    cluster = Cluster(PRESETS["llama3.1-405b"], gpus=2048, s=8192, gbs=512)
    plan = search(cluster, limit=64 * GiB)
    for kind in (1, 2):  # near-even: Balance.even; balanced: Balance.split
        rows = np.flatnonzero(plan.rows["split"] == kind)
        assert len(rows) > 100
        for i in rows[:: len(rows) // 8]:
            training = plan.training(int(i))
            bal = balance(cluster.shape, training)
            split, peak = (bal.even, bal.even_peak) if kind == 1 else (bal.split, bal.peak)
            assert split == training.stage_layers and peak == plan.config(int(i))["peak_bytes"], training


def test_plan_json_and_csv_carry_the_split(tmp_path):
    argv = ["plan", "--model", "tiny", "--gpus", "6", "--seq", "256", "--gbs", "12", "--gpu-mem", "2GiB"]
    out = json.loads(mem4d(*argv, "--json", "--all").stdout)
    splits = [c["config"]["stage_layers"] for c in out["configs"]]
    assert None in splits and any(s and len(s) == 3 for s in splits)
    assert {c["config"]["zero"] for c in out["configs"]} == {0, 1, 2, 3}
    path = tmp_path / "plan.csv"
    assert mem4d(*argv, "--csv", str(path)).returncode == 0
    header, *rows = path.read_text().splitlines()
    assert "zero" in header.split(",") and "stage_layers" in header.split(",")
    assert any('"' in row for row in rows)  # a split such as 2,3,3 is one quoted CSV field


def test_training_json_round_trip():
    from symbolic.config.training import training_from_json

    training = Training(p=3, s=256, gbs=3, stage_layers=[2, 3, 3])  # a JSON list becomes a tuple
    config = training.as_json(TINY)
    assert config["stage_layers"] == [2, 3, 3] and training_from_json(config) == training
    assert training.stage_layers == (2, 3, 3)
    assert Training().as_json(TINY)["stage_layers"] is None
    with pytest.raises(ConfigError, match="positive integers"):
        Training(p=2, stage_layers=(4, -4))


def test_latex_and_report_take_balance_as_the_rule_message_says(tmp_path, capsys):
    """The refusal of pp not dividing L names --balance; latex and report take it and write the balanced split's
    numbers (source of truth: estimate --balance --json's split for the same flags)."""
    from symbolic.cli.entry import main

    flags = ["--model", "llama3.1-405b", "--dp", "8", "--tp", "8", "--pp", "16", "--seq", "8192", "--gbs", "1024"]
    assert main(["latex", *flags, "-o", str(tmp_path / "x.tex")]) == 2
    assert "--balance" in capsys.readouterr().err
    assert main(["estimate", *flags, "--balance", "--json"]) == 0
    split = json.loads(capsys.readouterr().out)["config"]["stage_layers"]
    assert sum(split) == 126 and len(split) == 16
    assert main(["latex", *flags, "--balance", "-o", str(tmp_path / "x.tex")]) == 0
    assert main(["report", *flags, "--balance", "--json", "-o", str(tmp_path / "r.tex")]) == 0
    capsys.readouterr()
    tex = (tmp_path / "x.tex").read_text()
    assert r"\texttt{stage\_layers}: " + ", ".join(map(str, split)) in tex  # the configuration's stage split
