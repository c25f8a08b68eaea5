"""`mem4d plan` end to end: output formats, bad input, and consistency with `estimate` one configuration at a time.

Source of truth for bytes: `symbolic.estimator.estimate(shape, Training(...))` and `mem4d estimate --json`, the
single-configuration paths. Tolerance: at most 1 byte per component, from float64 rounding of the same lambdified
expression evaluated on arrays vs scalars (in practice the figures are identical).
"""

import csv
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from symbolic.config.shapes import PRESETS
from symbolic.plan.enumerate import Cluster
from symbolic.plan.search import search

GiB = 2**30
SMALL = ["--model", "tiny", "--gpus", "16", "--seq", "256", "--gbs", "32", "--gpu-mem", "2GiB"]


def mem4d(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "symbolic.cli", *argv], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def small_json() -> dict:
    done = mem4d("plan", *SMALL, "--json", "--all")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_json_shows_the_top_rows(small_json):
    """--json prints the --top K rows (the table's), the same as the first K of --all; source: --all's own rows."""
    done = mem4d("plan", *SMALL, "--json", "--top", "3")
    assert done.returncode == 0, done.stderr
    top = json.loads(done.stdout)
    assert top["top"] == 3 and top["shown"] == 3 and small_json["top"] is None
    assert top["configs"] == small_json["configs"][:3]
    assert small_json["shown"] == small_json["feasible"] == len(small_json["configs"])
    assert {k: v for k, v in top.items() if k not in ("configs", "shown", "top", "seconds", "build_seconds")} == {
        k: v for k, v in small_json.items() if k not in ("configs", "shown", "top", "seconds", "build_seconds")
    }


def test_table_for_the_issue_example():
    done = mem4d("plan", "--model", "llama3-70b", "--gpus", "512", "--seq", "8192", "--gbs", "1024", "--top", "5")
    assert done.returncode == 0, done.stderr
    assert "llama3-70b on 512 GPUs" in done.stdout and "memory in GiB" in done.stdout and "tokens/s" in done.stdout
    table, after = done.stdout.split("└", 1)  # plan's table, then the first row's step time
    ranks = [line.split()[1] for line in table.splitlines() if line.startswith("│")]
    assert ranks == ["1", "2", "3", "4", "5"]
    assert "the first one's step time (row 1, " in after and "│ step " in after


def test_json_schema_and_ranking(small_json):
    out = small_json
    assert {"evaluated", "feasible", "seconds", "configs"} <= out.keys()
    assert 0 < out["feasible"] < out["evaluated"]  # the 2 GiB limit must rule some out, or the test shows nothing
    assert len(out["configs"]) == out["feasible"]
    limit = 0.8 * 2 * 2**30
    scores = [c["score"] for c in out["configs"]]
    assert scores == sorted(scores, reverse=True)
    assert out["model"] == "tiny" and out["config"]["seq"] == 256 and out["config"]["gbs"] == 32
    for row in out["configs"]:
        config = row["config"]
        assert set(config) >= {"model", "dp", "tp", "pp", "cp", "vpp", "mbs", "recompute", "zero", "seq", "gbs"}
        assert {"bytes", "peak_bytes", "score"} <= set(row)
        assert config["dp"] * config["tp"] * config["pp"] * config["cp"] == 16
        assert row["peak_bytes"] < limit
        if config["stage_layers"] is None:  # even stages: the peak is at least the paper's closed form
            assert row["bytes"]["total"] <= row["peak_bytes"]
        else:  # balanced: pp entries summing to L, the most loaded stage decides
            assert len(config["stage_layers"]) == config["pp"] and sum(config["stage_layers"]) == 8
            assert row["peak_from"] != "total"
        assert row["score"] > 0  # predicted tokens/s/GPU (--rank-by time, the default); the proxy's is <= 1
    assert out["rank_by"] == "time"
    assert {c["config"]["recompute"] for c in out["configs"]} <= {"none", "selective", "full"}


def test_every_evaluated_configuration_matches_estimate_alone():
    """All rows (fitting or not) of a small search against estimate(shape, Training) one by one."""
    from symbolic.estimator.estimate import estimate

    cluster = Cluster(PRESETS["tiny"], gpus=16, s=256, gbs=32)
    limit = 0.8 * 2 * 2**30
    plan = search(cluster, limit=limit)
    assert plan.evaluated > 1000
    feasible = set(plan.order.tolist())
    worst = 0
    for i in range(plan.evaluated):
        one = estimate(cluster.shape, plan.training(i), profile="paper")
        got = plan.config(i)["bytes"]
        assert set(one.bytes) == set(got), i
        worst = max(worst, max(abs(one.bytes[name] - got[name]) for name in got))
        assert plan.rows["total"][i] == got["total"]
        config = plan.config(i)
        assert (config["peak_bytes"], config["peak_from"]) == (one.peak, one.peak_from), i  # exact: same rounded parts
        assert (i in feasible) == one.fits(2 * 2**30, 0.8)  # the same verdict as `mem4d estimate`
    assert worst <= 1
    assert 0 < np.count_nonzero(plan.rows["peak"] > plan.rows["total"]) < plan.evaluated  # both kinds of peak seen


def test_rows_that_fit_by_total_alone_are_cut_by_the_peak():
    """A limit between the formula's total and the exact p = 1 stage of some rows: plan drops exactly those rows
    whose peak is over it, and `estimate` gives each row the same verdict (source of truth: Estimate.fits)."""
    from symbolic.estimator.estimate import estimate

    cluster = Cluster(PRESETS["tiny"], gpus=16, s=256, gbs=32)
    rows = search(cluster, limit=1.0).rows
    gap = np.flatnonzero(rows["peak"] > rows["total"])
    i = gap[np.argmax(rows["peak"][gap] - rows["total"][gap])]
    limit = (rows["total"][i] + rows["peak"][i]) / 2
    plan = search(cluster, limit=limit)
    in_gap = np.flatnonzero((plan.rows["total"] < limit) & (plan.rows["peak"] >= limit))
    assert i in in_gap and plan.config(i)["peak_from"] in ("only", "last")  # the head's stage: what the total omits
    assert not set(in_gap.tolist()) & set(plan.order.tolist())
    assert np.all(plan.rows["peak"][plan.order] < limit)
    for j in in_gap[:20]:
        one = estimate(cluster.shape, plan.training(int(j)))
        assert one.bytes["total"] < limit and not one.fits(limit, 1.0)


def test_listed_configurations_match_mem4d_estimate_json(small_json):
    """Three listed configurations (best, middle, last) through `mem4d estimate --json` in a subprocess."""
    pytest.importorskip("symbolic.cli.estimate", reason="mem4d estimate is another issue's command")
    configs = small_json["configs"]
    for row in (configs[0], configs[len(configs) // 2], configs[-1]):
        config = row["config"]
        argv = ["estimate", "--model", "tiny", "--seq", "256", "--gbs", "32", "--gpu-mem", "2GiB", "--json"]
        for flag in ("dp", "tp", "pp", "cp", "vpp", "mbs"):
            argv += [f"--{flag}", str(config[flag])]
        argv += ["--recompute", config["recompute"], "--zero", str(config["zero"])]
        argv += ["--stage-layers", ",".join(map(str, config["stage_layers"]))] if config["stage_layers"] else []
        argv += ["--recompute-modules", config["recompute_modules"]] if "recompute_modules" in config else []
        done = mem4d(*argv)
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        for name, value in row["bytes"].items():
            assert abs(report["bytes"][name] - value) <= 1, (config, name, report["bytes"][name])
        assert report["peak_bytes"] == row["peak_bytes"] and report["peak_from"] == row["peak_from"]
        assert report["config"] == config  # the same vocabulary and the same values
        assert report["fits"] is True  # every listed configuration fits by `mem4d estimate`'s verdict too


def test_csv_holds_every_feasible_configuration(tmp_path, small_json):
    path = tmp_path / "plan.csv"
    done = mem4d("plan", *SMALL, "--csv", str(path))
    assert done.returncode == 0, done.stderr
    with path.open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == small_json["feasible"]
    assert int(rows[0]["total"]) == small_json["configs"][0]["bytes"]["total"]
    assert int(rows[0]["peak_bytes"]) == small_json["configs"][0]["peak_bytes"]


def test_plot_writes_a_png(tmp_path):
    path = tmp_path / "plan.png"
    done = mem4d("plan", *SMALL, "--plot", str(path), "--top", "1")
    assert done.returncode == 0, done.stderr
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_explain_prints_the_proxy():
    done = mem4d("plan", *SMALL, "--explain", "--top", "2")
    assert done.returncode == 0, done.stderr
    assert "bubble = (p - 1) / (vpp m + p - 1)" in done.stdout and "not a throughput prediction" in done.stdout


def test_no_valid_configuration_explains_each_factorisation():
    """11 GPUs for tiny (L=8): pp=11 leaves a stage without a layer even when stages may be uneven."""
    done = mem4d("plan", "--model", "tiny", "--gpus", "11", "--seq", "256", "--gbs", "1024")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    lines = done.stdout.strip().splitlines()  # the explanation is output; stderr holds the one error line
    assert sum(line.startswith("  dp=") for line in lines) == 4  # (11,1,1,1), (1,11,1,1), (1,1,11,1), (1,1,1,11)
    assert "gbs=1024 not divisible by mbs x dp = 1x11" in done.stdout
    assert "at least pp x vpp = 11" in done.stdout
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("mem4d plan: error: no valid 4D configuration")


def test_nothing_fits_exits_1_naming_the_smallest():
    done = mem4d("plan", "--model", "llama3-70b", "--gpus", "8", "--seq", "8192", "--gbs", "64")
    assert done.returncode == 1
    assert "no configuration fits" in done.stderr and "the smallest needs" in done.stderr


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--gpu-mem", "80XB"], "cannot parse memory size '80XB'"),
        (["--gpu-mem", "lots"], "cannot parse memory size 'lots'"),
        (["--threshold", "1.5"], "expected a number in (0, 1]"),
        (["--gpus", "0"], "expected a positive integer"),
        (["--profile", "nope"], "invalid choice: 'nope'"),
        (["--model", "llama9"], "unknown model 'llama9'"),
    ],
)
def test_bad_input_is_one_line_exit_2(argv, message):
    base = {"--model": "tiny", "--gpus": "4", "--seq": "256", "--gbs": "8"}
    for flag, value in zip(argv[::2], argv[1::2]):
        base[flag] = value
    done = mem4d("plan", *(x for item in base.items() for x in item))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and message in done.stderr and done.stderr.startswith("mem4d plan: error:")


def test_plan_imports_no_jax_no_matplotlib(tmp_path):
    """Never jax, flax or matplotlib (without --plot), nor rich with --json; once the estimator cache is warm
    (second run on the same MEM4D_CACHE_DIR), not even sympy."""
    code = (
        "import sys; from symbolic.cli import main; rc = main(['plan', '--model', 'tiny', '--gpus', '4', "
        "'--seq', '256', '--gbs', '8', '--zero', '1', '--json']); "  # one stage: 5 estimators to derive cold
        "bad = [m for m in sys.argv[1:] if m in sys.modules]; assert not bad, bad; sys.exit(rc)"
    )
    env = {**os.environ, "MEM4D_CACHE_DIR": str(tmp_path / "cache")}
    for run in ("cold", "warm"):
        forbidden = ["jax", "flax", "matplotlib", "rich"] + (["sympy"] if run == "warm" else [])
        done = subprocess.run(
            [sys.executable, "-c", code, *forbidden], capture_output=True, text=True, timeout=120, env=env
        )
        assert done.returncode == 0, (run, done.stderr)
        assert np.isfinite(json.loads(done.stdout)["seconds"])


def test_many_broken_factorisations_are_truncated():
    """gbs=3 on 1024 GPUs: only dp=1 divides gbs, leaving tp*pp*cp = 1024, more than t | 8, p | 16 (p | L=80),
    2c | s=8 allow (8 * 16 * 4 = 512): nothing is valid; 1024 = 2**10 has C(13, 3) = 286 factorisations, 40 listed."""
    done = mem4d("plan", "--model", "llama3-70b", "--gpus", "1024", "--seq", "8", "--gbs", "3")
    assert done.returncode == 2, done.stdout
    assert "... and 246 more factorisations" in done.stdout
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("mem4d plan: error: no valid 4D configuration")
