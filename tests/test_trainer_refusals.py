"""Runs no trainer can make are refused in one line (estimate) and masked (plan), each rule citing the trainer's code.

Source of truth: DeepSpeed 0.19.8 deepspeed/runtime/pipe/engine.py (PipelineEngine asserts ZeRO stage < 2);
transformers 5.25.0 GPT2Model.wpe and Megatron-Core 0.16.1 LanguageModelEmbedding (an nn.Embedding of n_positions
rows); Transformer Engine 2.20.2 get_attention_backend (FlashAttention 2: padded head_dim % 8 == 0 and <= 256). Exact
messages and exact plan rows (the CSV of every feasible configuration), run in-process.
"""

import csv
import json
from pathlib import Path

import pytest

from symbolic.cli.entry import main

ROOT = Path(__file__).resolve().parents[1]


def _refused(argv, capsys) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


@pytest.mark.parametrize("zero", ["2", "3"])
def test_deepspeed_pipeline_refuses_zero_2_and_3(zero, capsys):
    err = _refused(
        [
            "estimate",
            "--model",
            "tiny",
            "--recipe",
            "deepspeed",
            "--zero",
            zero,
            "--pp",
            "2",
            "--seq",
            "256",
            "--gbs",
            "8",
            "--json",
        ],
        capsys,
    )
    assert f"DeepSpeed's pipeline engine refuses ZeRO-{zero}" in err and "with --pp 2 give --zero 1" in err


def test_deepspeed_plan_masks_pipelines_above_zero_1(tmp_path, capsys):
    out = tmp_path / "plan.csv"
    assert (
        main(
            [
                "plan",
                "--model",
                "tiny",
                "--recipe",
                "deepspeed",
                "--gpus",
                "8",
                "--seq",
                "256",
                "--gbs",
                "32",
                "--csv",
                str(out),
                "--top",
                "1",
            ]
        )
        == 0
    )
    rows = list(csv.DictReader(out.open()))
    assert any(int(r["pp"]) > 1 for r in rows) and any(int(r["zero"]) >= 2 for r in rows)  # both kinds searched
    assert not [r for r in rows if int(r["pp"]) > 1 and int(r["zero"]) >= 2]


def test_learned_positions_bound_the_sequence(capsys):
    err = _refused(["estimate", "--model", "gpt2", "--seq", "2048", "--gbs", "8", "--json"], capsys)
    assert "sequence length s=2048 exceeds the 1024 learned positions of gpt2" in err
    assert main(["estimate", "--model", "gpt2", "--seq", "1024", "--gbs", "8", "--json"]) == 0
    err = _refused(["plan", "--model", "gpt2", "--gpus", "8", "--seq", "2048", "--gbs", "8"], capsys)
    assert "exceeds the 1024 learned positions" in err


@pytest.fixture
def odd_head(tmp_path) -> str:
    config = json.loads((ROOT / "grids/models/published/llama3.2-1b.json").read_text())
    config.update(head_dim=66, _name_or_path="odd-head")
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return str(path)


def test_a_head_dim_no_flash_kernel_takes_is_refused(odd_head, capsys):
    run = ["--model", odd_head, "--seq", "1024", "--gbs", "8"]
    err = _refused(["estimate", *run, "--json"], capsys)
    assert "head_dim=66 of odd-head: no flash attention kernel takes it" in err and "give --no-flash-attn" in err
    assert main(["estimate", *run, "--no-flash-attn", "--json"]) == 0  # unfused: what the trainer runs
    assert main(["estimate", *run, "--profile", "jax", "--json"]) == 0  # XLA's attention is no such kernel
    assert "no flash attention kernel" in _refused(["plan", *run, "--gpus", "8"], capsys)
