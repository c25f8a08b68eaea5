"""The published config.json files, the small ones the HF-reading tests write (sizes that all differ), how to write and read one, and
`python -m symbolic.cli` run on one as a person runs it."""

import json
import subprocess
import sys
from pathlib import Path

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


def cli(*argv: str) -> subprocess.CompletedProcess:
    """`python -m symbolic.cli ARGV` in a fresh process (two minutes at most)."""
    return subprocess.run([sys.executable, "-m", "symbolic.cli", *argv], capture_output=True, text=True, timeout=120)


def cli_json(*argv: str) -> dict:
    """The --json answer of `python -m symbolic.cli ARGV`, which must exit 0."""
    done = cli(*argv, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
