"""The config.json files the HF-reading tests use: the published folder, small ones of sizes that all differ, how to
write and read one, a vision tower's refusals; and mem4d's CLI on them, in this process or a fresh one."""

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from symbolic.config import hfconfig
from symbolic.config.errors import ConfigError
from symbolic.config.hfconfig import from_hf_config

PUBLISHED = Path(__file__).resolve().parent.parent / "grids" / "models" / "published"  # the published config.json files

# PRESETS["tiny"] as a config.json (h 256, f 688, a 16 of head width 16, k 4, L 8, v 1024)
LLAMA = {
    "model_type": "llama",
    "hidden_size": 256,
    "intermediate_size": 688,
    "num_attention_heads": 16,
    "num_key_value_heads": 4,
    "num_hidden_layers": 8,
    "vocab_size": 1024,
}
# the attention and MLP sizes of the small hybrids (Nemotron-H, Qwen3-Next): h 256, f 688, a 8 of 32, k 2, v 1000
HYBRID = {
    "hidden_size": 256,
    "intermediate_size": 688,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "head_dim": 32,
    "vocab_size": 1000,
}
# a Nemotron-H of blocks M - M * - M M - * with 16 Mamba-2 heads of 24, a state of 40 in 4 groups, a conv of 3
NEMOTRON_H = {
    "model_type": "nemotron_h",
    **HYBRID,
    "hybrid_override_pattern": "M-M*-MM-*",
    "mamba_num_heads": 16,
    "mamba_head_dim": 24,
    "ssm_state_size": 40,
    "n_groups": 4,
    "conv_kernel": 3,
    "use_conv_bias": True,
    "tie_word_embeddings": False,
}


def write(tmp_path: Path, config: dict, name: str = "config.json") -> Path:
    """config as a JSON file under tmp_path."""
    path = tmp_path / name
    path.write_text(json.dumps(config))
    return path


def read(tmp_path: Path, config: dict, **options):
    """The ModelShape mem4d reads off config written as tmp_path/config.json."""
    return from_hf_config(write(tmp_path, config), **options)


def assert_vision_refused(tmp_path: Path, published: Path, change: dict, needle: str) -> None:
    """The published config.json with change over its vision_config is refused in one line matching needle."""
    raw = json.loads(published.read_text())
    raw["vision_config"].update(change)
    with pytest.raises(ConfigError, match=needle) as err:
        hfconfig.read(write(tmp_path, raw))
    assert "\n" not in str(err.value)


def run(*argv: str) -> tuple[int, str, str]:
    """`mem4d ARGV` in this process: its exit code, stdout and stderr."""
    from symbolic.cli.entry import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def assert_same_answer(mine: dict, *argv: str) -> None:
    """`mem4d ARGV --json` in this process exits 0 with mine, key for key in the same order."""
    code, out, err = run(*argv, "--json")
    assert code == 0, err
    assert json.dumps(mine, indent=2) == json.dumps(json.loads(out), indent=2)


def cli(*argv: str) -> subprocess.CompletedProcess:
    """`python -m symbolic.cli ARGV` in a fresh process (two minutes at most)."""
    return subprocess.run([sys.executable, "-m", "symbolic.cli", *argv], capture_output=True, text=True, timeout=120)


def cli_json(*argv: str) -> dict:
    """The --json answer of `python -m symbolic.cli ARGV`, which must exit 0."""
    done = cli(*argv, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
