"""mem4d sweep: grid expansion and validation, append/resume/interrupt, failures recorded (summary and plots:
test_sweep_report.py).

Runner tests inject a run function (the seam cmd_sweep.run(args, run_fn, devices) offers) so they take milliseconds;
the end-to-end test runs the real `mem4d sweep` with jaxcheck.crosscheck.verify on a tiny config.json (XLA:CPU: the sweep's
mechanics are the subject, not a GPU target).
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from jaxcheck.crosscheck import grid, report, sweep
from symbolic.cli import interrupt
from symbolic.cli import sweep as cmd_sweep
from symbolic.cli.interrupt import Interrupted
from symbolic.config.errors import ConfigError
from sweep_fakes import GRID, fake_result, json_lines, sweep_args
from test_jax_distributed import SMALL  # a Llama config.json of the smallest sizes (4 layers: pp 3 is skipped)


def test_grid_expansion(tmp_path):
    """Product of [grid] in file order, then [[case]]; [base] and the CLI defaults fill the rest; duplicates dropped."""
    (tmp_path / "g.toml").write_text(GRID)
    configs = grid.parse_grid(tmp_path / "g.toml")
    assert [(c["tp"], c["recompute"], c["pp"]) for c in configs] == [
        (1, "none", 1),
        (1, "full", 1),
        (2, "none", 1),
        (2, "full", 1),
        (1, "none", 2),
        (1, "none", 3),
    ]
    assert all(c["model"] == "tiny" and c["seq"] == 128 and c["dp"] == 1 for c in configs)
    assert configs[4]["zero"] == 1 and configs[0]["zero"] == 0 and configs[4]["gbs"] == 4 and configs[0]["gbs"] is None
    assert len({grid.config_key(c) for c in configs}) == 6
    # the key does not depend on key order nor on spelling out a default
    assert grid.config_key({"tp": 2, "model": "tiny"} | configs[0]) == grid.config_key(
        dict(reversed(configs[0].items()))
    )
    # uneven stages: a key of their own, in the label; absent or None, the key configs had before the field existed
    uneven = configs[4] | {"stage_layers": [5, 3]}
    assert grid.config_key(uneven) != grid.config_key(configs[4]) and grid.label(uneven).endswith(" layers5,3")
    assert grid.config_key(configs[4] | {"stage_layers": None}) == grid.config_key(
        {k: v for k, v in configs[4].items() if k != "stage_layers"}
    )


@pytest.mark.parametrize(
    "text, needle",
    [
        ("[grid]\ntpp = [1, 2]\n", "unknown key 'tpp'"),
        ("[base]\ntp = \"2\"\n", "tp must be a positive integer"),
        ("[grid]\ndp = [1, 0]\n", "dp must be a positive integer, got 0"),
        ("[base]\nzero = true\n", "zero must be one of 0, 1, 2, 3, got True"),
        ("[base]\nsp = 1\n", "sp must be a bool"),
        ("[grid]\nrecompute = [\"some\"]\n", "recompute must be one of none, selective, full"),
        ("[grid]\ntp = []\n", "tp must be a non-empty list"),
        ("[grid]\ntp = 2\n", "tp must be a non-empty list"),
        ("[base]\nmodel = \"llama9\"\n", "unknown model 'llama9'"),
        ("[bases]\ntp = 2\n", "unknown top-level key 'bases'"),
        ("[[case]]\ndp = 2\nfoo = 1\n", "[[case]] #1: unknown key 'foo'"),
        ("[base\ntp = 2\n", "malformed TOML"),
        ("[[case]]\npp = 2\nstage_layers = [0, 8]\n", "stage_layers must be a list of positive layer counts"),
        ("[[case]]\npp = 2\nstage_layers = 5\n", "stage_layers must be a list of positive layer counts"),
    ],
)
def test_bad_grid_exits_2_with_one_line(tmp_path, text, needle):
    """Source of truth: the CLI contract (one line naming the file and key, exit 2, no traceback)."""
    (tmp_path / "bad.toml").write_text(text)
    proc = subprocess.run(
        [sys.executable, "-m", "symbolic.cli", "sweep", str(tmp_path / "bad.toml"), "-o", str(tmp_path / "r.jsonl")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and needle in proc.stderr and "bad.toml" in proc.stderr, proc.stderr
    assert not (tmp_path / "r.jsonl").exists()


def test_missing_grid_file_exits_2(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "symbolic.cli", "sweep", str(tmp_path / "nope.toml")], capture_output=True, text=True
    )
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "nope.toml not found" in proc.stderr


def test_output_that_is_not_a_results_file_exits_2(tmp_path):
    """-o naming some other file (or a directory) is refused with one line, and the file is left as it was."""
    (tmp_path / "g.toml").write_text(GRID)
    for target, needle in (
        (tmp_path / "g.toml", "line 2 is not a mem4d sweep record"),
        (tmp_path, "cannot read results file"),
    ):
        before = target.read_text() if target.is_file() else None
        proc = subprocess.run(
            [sys.executable, "-m", "symbolic.cli", "sweep", str(tmp_path / "g.toml"), "-o", str(target), "--resume"],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and needle in proc.stderr, proc.stderr
        assert before is None or target.read_text() == before


def test_run_records_ok_failed_skipped(tmp_path):
    """Each config gives one line; a compile error is recorded (one line) and the sweep goes on."""
    (tmp_path / "g.toml").write_text(GRID)
    out = tmp_path / "r.jsonl"

    def run(spec):
        if spec.train.recompute == "full" and spec.train.t == 2:
            raise RuntimeError("XLA ran out of patience\nsecond line of a long trace")
        return fake_result(spec)

    assert cmd_sweep.run(sweep_args(str(tmp_path / "g.toml"), "-o", str(out), "--json", "--no-plots"), run, 16) == 0
    lines = json_lines(out)
    assert [r["status"] for r in lines] == ["ok", "ok", "ok", "failed", "ok", "skipped"]
    assert lines[3]["error"] == "RuntimeError: XLA ran out of patience"
    assert all(r["code"] is None or len(r["code"]) >= 7 for r in lines)  # git commit of the code (None outside git)
    assert all(r["param_count"] == 6_066_432 for r in lines)  # tiny's ModelShape.param_count, skipped ones too
    assert "do not divide layers L=8" in lines[5]["error"]
    summary = json.loads(report.summary_path(out).read_text())
    assert (summary["ok"], summary["failed"], summary["skipped"]) == (4, 1, 1)


def test_too_few_devices_skipped(tmp_path):
    """Configs needing more devices than the backend has (a GPU host) are skipped with the reason."""
    (tmp_path / "g.toml").write_text(GRID)
    out = tmp_path / "r.jsonl"
    cmd_sweep.run(sweep_args(str(tmp_path / "g.toml"), "-o", str(out), "--json", "--no-plots"), fake_result, 1)
    by_tp = {(r["config"]["tp"], r["config"]["pp"]): r for r in json_lines(out)}
    assert by_tp[(2, 1)]["status"] == "skipped" and "needs 2 devices, the backend has 1" in by_tp[(2, 1)]["error"]
    assert by_tp[(1, 1)]["status"] == "ok"


def test_existing_output_needs_resume(tmp_path):
    (tmp_path / "g.toml").write_text(GRID)
    out = tmp_path / "r.jsonl"
    cmd_sweep.run(sweep_args(str(tmp_path / "g.toml"), "-o", str(out), "--json", "--no-plots"), fake_result, 16)
    with pytest.raises(ConfigError, match="--resume"):
        cmd_sweep.run(sweep_args(str(tmp_path / "g.toml"), "-o", str(out)), fake_result, 16)


def test_interrupt_then_resume(tmp_path, capsys):
    """Ctrl-C (KeyboardInterrupt) after two configs: exit 130, both kept, resume hint; a kill's torn line is cut;
    --resume runs only what is missing; at the end every config appears exactly once."""
    (tmp_path / "g.toml").write_text(GRID)
    out = tmp_path / "r.jsonl"
    calls = []

    def interrupted(spec):
        if len(calls) == 2:
            raise KeyboardInterrupt
        calls.append(spec)
        return fake_result(spec)

    with pytest.raises(Interrupted, match="2 of 6 configs are in .* --resume"):  # the CLI prints it, exits 130
        cmd_sweep.run(sweep_args(str(tmp_path / "g.toml"), "-o", str(out), "--no-plots"), interrupted, 16)
    first = json_lines(out)
    assert len(first) == 2
    with open(out, "a") as fh:  # a kill -9 in the middle of a write
        fh.write('{"key": "torn", "status": "o')
    calls.clear()
    assert (
        cmd_sweep.run(
            sweep_args(str(tmp_path / "g.toml"), "-o", str(out), "--resume", "--json", "--no-plots"),
            lambda spec: calls.append(spec) or fake_result(spec),
            16,
        )
        == 0
    )
    assert len(calls) == 3  # 6 configs - 2 done - 1 invalid (skipped without a run)
    lines = json_lines(out)
    keys = [r["key"] for r in lines]
    assert len(keys) == len(set(keys)) == 6 and lines[:2] == first
    assert set(keys) == {grid.config_key(c) for c in grid.parse_grid(tmp_path / "g.toml")}


def test_resume_hint_repeats_the_runs_options():
    """The interrupted sweep's hint is a command that continues the same results file: a results file holds one
    target's records, so the hint names the target (and the shard, workers and plots) it was started with."""
    assert cmd_sweep.resume_command(sweep_args("g.toml", "-o", "r.jsonl")) == "mem4d sweep g.toml -o r.jsonl --resume"
    hint = cmd_sweep.resume_command(
        sweep_args("my grid.toml", "-o", "r.jsonl", "--target", "cpu", "--shard", "1/4", "--jobs", "2", "--no-plots")
    )
    assert hint == "mem4d sweep 'my grid.toml' -o r.jsonl --resume --target cpu --shard 1/4 --jobs 2 --no-plots"


def test_sigterm_is_an_interrupt(tmp_path):
    """`kill` (SIGTERM) during a config ends the sweep like Ctrl-C (under the CLI's guard): the interrupt line,
    finished results kept; the guard puts the previous handler back."""
    (tmp_path / "g.toml").write_text(GRID)
    out = tmp_path / "r.jsonl"
    calls = []

    def killed(spec):
        calls.append(spec)
        if len(calls) == 3:
            os.kill(os.getpid(), signal.SIGTERM)
        return fake_result(spec)

    before = signal.getsignal(signal.SIGTERM)
    guard = interrupt.install()
    try:
        with pytest.raises(Interrupted, match="2 of 6 configs are in"):
            cmd_sweep.run(sweep_args(str(tmp_path / "g.toml"), "-o", str(out), "--no-plots"), killed, 16)
    finally:
        guard.uninstall()
    assert guard.signum == signal.SIGTERM and len(json_lines(out)) == 2
    assert signal.getsignal(signal.SIGTERM) is before


def test_end_to_end_real_verify(tmp_path, capsys):
    """The real `mem4d sweep` with jaxcheck.crosscheck.verify: Ctrl-C (SIGINT) during the second compile exits 130
    keeping the first result; --resume (in this process: no second jax start-up) runs only the rest; one JSON line per
    config with XLA's figures, summary JSON, PNGs. Source of truth: verify()'s own dict (rel_error_total recomputed
    from its totals). SMALL, not the tiny preset, and the resume in-process: 23.2 -> 21.4 CPU-s, 2026-12-07."""
    pytest.importorskip("jaxcheck.crosscheck.verify")
    grid = tmp_path / "g.toml"
    model = tmp_path / "config.json"  # SMALL, not the tiny preset: the sweep's mechanics at the quickest compiles
    model.write_text(json.dumps(SMALL))
    grid.write_text(f'[base]\nmodel = "{model}"\nseq = 64\n[grid]\npp = [1, 2, 3]\n')
    out = tmp_path / "r.jsonl"
    cmd = [sys.executable, "-m", "symbolic.cli", "sweep", str(grid), "-o", str(out), "--json", "--target", "cpu"]
    no_cache = {**os.environ, "JAX_COMPILATION_CACHE_DIR": ""}  # the second compile runs (conftest's session cache)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=no_cache)
    deadline = time.monotonic() + 240
    while not (out.exists() and out.stat().st_size) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "--resume" in err, err[-2000:]
    first = json_lines(out)
    assert 1 <= len(first) <= 2 and first[0]["status"] == "ok"
    import jax

    from symbolic.cli.entry import main

    jax.devices()  # the session's 16 devices started first: verify's start() would start jax with the config's world
    assert main(cmd[3:] + ["--resume"]) == 0
    stdout = capsys.readouterr().out
    lines = json_lines(out)
    assert lines[: len(first)] == first and [r["status"] for r in lines] == ["ok", "ok", "skipped"]
    assert len({r["key"] for r in lines}) == 3
    for res in (r["result"] for r in lines[:2]):
        assert res["xla"]["total_bytes"] > 0 and res["symbolic"]["total"] > 0
        assert res["rel_error_total"] == pytest.approx(
            (res["symbolic"]["total"] - res["xla"]["total_bytes"]) / res["xla"]["total_bytes"], rel=1e-9
        )
    summary = json.loads(stdout)
    assert summary == json.loads(report.summary_path(out).read_text())
    assert (summary["ok"], summary["skipped"]) == (2, 1)
    assert summary["rel_error_total"]["max_abs"] == pytest.approx(
        max(abs(r["result"]["rel_error_total"]) for r in lines[:2])
    )
    assert all(os.path.getsize(p) > 0 for p in summary["plots"])


def test_shard_takes_every_nth_config_and_checks_its_spec():
    configs = list(range(10))
    assert sweep.shard(configs, None) == configs
    assert sweep.shard(configs, "1/4") == [1, 5, 9]
    assert sorted(sum((sweep.shard(configs, f"{i}/3") for i in range(3)), [])) == configs  # the shards cover the grid
    for bad in ("4/4", "x/2", "1", "-1/2", "1/0"):
        with pytest.raises(ConfigError, match="--shard must be I/N"):
            sweep.shard(configs, bad)


def test_a_results_file_holds_one_targets_records(tmp_path):
    sweep.check_target([{"key": "a", "status": "ok", "target": "cpu"}], "cpu", tmp_path / "r.jsonl")
    with pytest.raises(ConfigError, match="computed for target cpu, not h100-80gb"):
        sweep.check_target([{"key": "a", "status": "ok", "target": "cpu"}], "h100-80gb", tmp_path / "r.jsonl")
