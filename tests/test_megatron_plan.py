"""`plan --megatron FILE` and `report --megatron FILE`: the model and what every row shares from a Megatron-LM argument
file, the rest searched; the report of the file's own run.

Source of truth: `mem4d estimate --megatron` on the same file (the plan row of the file's own configuration must carry
the same bytes, exactly) and the file's arguments themselves. Exact: no tolerance."""

import contextlib
import io
import json
from pathlib import Path

import pytest

from symbolic.cli.entry import main

EXAMPLE = Path(__file__).resolve().parents[1] / "grids" / "megatron" / "llama-1b.args"
OWN = {
    "dp": 1,
    "tp": 2,
    "pp": 2,
    "cp": 1,
    "vpp": 1,
    "mbs": 1,
    "recompute": "selective",
    "zero": 1,
    "stage_layers": None,
}  # the example's configuration on 4 GPUs


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_the_plan_row_of_the_files_own_configuration_is_its_estimate():
    code, out, err = run("plan", "--megatron", str(EXAMPLE), "--gpus", "4", "--zero", "1", "--all", "--json")
    assert code == 0, err
    plan = json.loads(out)
    assert plan["megatron"]["model"] and plan["megatron"]["overridden"] == []
    assert plan["megatron"]["held"]["seq"] == "4096" and plan["megatron"]["held"]["gbs"] == "64"
    assert plan["megatron"]["searched"] == {
        "tp": "2",
        "pp": "2",
        "cp": "1",
        "vpp": "1",
        "mbs": "1",
        "recompute": "selective",
        "recompute_modules": "core_attn",
        "zero": "1",
    }
    assert (plan["gpus"], plan["config"]["seq"], plan["config"]["gbs"], plan["model"]) == (4, 4096, 64, "llama-1b")
    rows = [
        row
        for row in plan["configs"]
        if all(row["config"][key] == value for key, value in OWN.items()) and "recompute_modules" not in row["config"]
    ]  # core_attn, the default, is not listed
    assert len(rows) == 1
    code, out, err = run("estimate", "--megatron", str(EXAMPLE), "--gpus", "4", "--json")
    assert code == 0, err
    estimate = json.loads(out)
    assert (rows[0]["bytes"], rows[0]["peak_bytes"]) == (estimate["bytes"], estimate["peak_bytes"])


def test_plan_says_what_came_from_the_file_and_what_the_command_line_overrode():
    code, out, err = run("plan", "--megatron", str(EXAMPLE), "--gpus", "4", "--seq", "2048", "--top", "1")
    assert code == 0, err
    assert "llama-1b on 4 GPUs, s=2048, gbs=64" in out
    assert (
        f"{EXAMPLE}: the model (llama-1b), transformer_impl=transformer_engine gbs=64 sp=True" in err
        and "searched in its stead: tp=2 pp=2" in err
    )
    assert f"{EXAMPLE}: --seq 2048 from the command line (the file: 4096)" in err


@pytest.mark.parametrize(
    "text,needle",
    [
        ("--no-gradient-accumulation-fusion\n", "plan's rows cannot hold grad_accum_fusion=False"),
        ("--global-batch-size 0\n", "--global-batch-size 0 (must be a positive integer)"),
    ],
)
def test_plan_refuses_in_one_line_what_its_rows_cannot_hold(tmp_path, text, needle):
    path = tmp_path / "run.args"
    path.write_text(EXAMPLE.read_text().replace("--global-batch-size 64", "") + text)
    code, out, err = run("plan", "--megatron", str(path), "--gpus", "4")
    assert (code, out, err.count("\n")) == (2, "", 1) and needle in err, err


def test_plan_without_a_file_still_needs_seq_and_gbs():
    code, out, err = run("plan", "--model", "llama3-8b", "--gpus", "8", "--seq", "4096")
    assert (code, out) == (
        2,
        "",
    ) and err == "mem4d plan: error: the following arguments are required: --gbs (or a trainer's file)\n"


def test_report_reads_the_file_and_says_what_the_command_line_overrode(tmp_path):
    tex = tmp_path / "r.tex"
    code, out, err = run("report", "--megatron", str(EXAMPLE), "--dp", "4", "--tp", "4", "-o", str(tex), "--json")
    assert code == 0, err
    note = "--tp 4 from the command line (the file: 2)"
    assert json.loads(out)["megatron"] == {"file": str(EXAMPLE), "overridden": [note]}
    text = tex.read_text()
    assert "Per-GPU memory of llama-1b" in text and r"\texttt{tp} ($t$) & 4 & \texttt{pp} ($p$) & 2" in text
