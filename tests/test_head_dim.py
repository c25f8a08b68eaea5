"""head_dim != h/a: the symbolic side rejects it with one ConfigError line (exit 2), and accepts head_dim == h/a.

Source of truth: the paper's closed form, whose heads are h/a wide (Q, O: h x h; K, V: h x h*k/a); a model with
another head width would be counted wrongly, so estimate, plan and latex refuse it. ModelShape itself keeps
accepting it (jaxcheck builds such models).
"""
import dataclasses
import json
import subprocess
import sys

import pytest

from symbolic.config.errors import ConfigError
from symbolic.config.shapes import PRESETS
from symbolic.config.training import Training
from symbolic.estimator.estimate import estimate
from symbolic.plan.enumerate import Cluster

TINY = PRESETS["tiny"]  # h=256, a=16: dh = 16
CONFIG = {"hidden_size": 256, "intermediate_size": 688, "num_attention_heads": 16, "num_key_value_heads": 4,
          "num_hidden_layers": 8, "vocab_size": 1024}


@pytest.mark.parametrize("head_dim", [32, 8])
def test_estimate_and_plan_reject_another_head_width(head_dim):
    shape = dataclasses.replace(TINY, head_dim=head_dim)
    with pytest.raises(ConfigError, match=f"head_dim={head_dim} but h/a = 256/16"):
        estimate(shape, Training(s=256, gbs=8))
    with pytest.raises(ConfigError, match="dh = h/a"):
        Cluster(shape, gpus=4, s=256, gbs=8)


def test_head_dim_equal_to_h_over_a_is_the_default_count():
    explicit = dataclasses.replace(TINY, head_dim=16)
    assert estimate(explicit, Training(s=256, gbs=8)).bytes == estimate(TINY, Training(s=256, gbs=8)).bytes


@pytest.mark.parametrize("command", [["estimate"], ["plan", "--gpus", "4"], ["latex"]])
def test_cli_one_line_exit_2(tmp_path, command):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIG | {"head_dim": 32}))
    argv = [sys.executable, "-m", "symbolic.cli", *command, "--model", str(path), "--seq", "256", "--gbs", "8"]
    if command == ["latex"]:
        argv += ["--output", str(tmp_path / "out.tex")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"mem4d {command[0]}: error: model") and "head_dim=32 but h/a = 256/16" in done.stderr


def test_cli_accepts_a_config_that_states_head_dim_equal_to_h_over_a(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIG | {"head_dim": 16}))
    argv = [sys.executable, "-m", "symbolic.cli", "estimate", "--model", str(path), "--seq", "256", "--gbs", "8", "--json"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
