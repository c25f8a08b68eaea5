"""`--torchtitan JOB.toml [--override section.key=value]`: torchtitan 0.2.2's job config read into mem4d's ModelShape
and Training under --recipe torchtitan.

Sources of truth: torchtitan 0.2.2's torchtitan/config/job_config.py (JobConfig's fields, read by ast where the
package or MEM4D_TORCHTITAN_JOB_CONFIG points at it), its llama3 flavours (models/llama3/__init__.py, FeedForward's
hidden size) against mem4d's Llama 3 presets, its pipeline split (generate_llm_fqn_per_model_part, its docstring's
example), and mem4d's own flags (the example file must give exactly their estimate). Exact: no tolerance."""

import ast
import importlib.util
import json
import os
from pathlib import Path

import pytest

from model_files import assert_same_answer, run

from symbolic.config.shapes import PRESETS
from symbolic.readers.torchtitan import flavor_shape, stage_split
from symbolic.readers.torchtitan_table import CLASSES, table

EXAMPLE = Path(__file__).resolve().parents[1] / "grids" / "torchtitan" / "llama3-8b.toml"


def _job_config() -> Path | None:
    if os.environ.get("MEM4D_TORCHTITAN_JOB_CONFIG"):
        return Path(os.environ["MEM4D_TORCHTITAN_JOB_CONFIG"])
    spec = importlib.util.find_spec("torchtitan")
    return Path(spec.origin).parent / "config" / "job_config.py" if spec and spec.origin else None


def _fields(source: str) -> list[tuple[str, str, str]]:
    """JobConfig's keys (section.key, annotation, default) as job_config.py declares them, nested sections dotted."""
    classes = {node.name: node for node in ast.parse(source).body if isinstance(node, ast.ClassDef)}

    def walk(name: str, prefix: str):
        for st in classes[name].body:
            if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
                kind = ast.unparse(st.annotation)
                if kind in classes:
                    yield from walk(kind, f"{prefix}{st.target.id}.")
                else:
                    yield f"{prefix}{st.target.id}", kind, ast.unparse(st.value) if st.value else ""

    return list(walk("JobConfig", ""))


@pytest.mark.skipif(
    not (_job_config() and _job_config().exists()),
    reason="torchtitan 0.2.2's job_config.py is absent (pip download --no-deps torchtitan==0.2.2 and "
    "set MEM4D_TORCHTITAN_JOB_CONFIG to its torchtitan/config/job_config.py)",
)
def test_the_table_holds_every_key_of_the_job_config():
    fields = _fields(_job_config().read_text())
    assert [(k.key, k.type, k.default) for k in table().values()] == fields


def test_every_key_is_classified_with_a_reason_and_a_readable_default():
    assert len(table()) == 149
    for key in table().values():
        assert key.cls in CLASSES and key.reason, key.key
        key.value()


@pytest.mark.parametrize("flavor,preset", [("8B", "llama3-8b"), ("70B", "llama3-70b"), ("405B", "llama3.1-405b")])
def test_the_llama3_flavours_are_the_presets(flavor, preset):
    mine, theirs = flavor_shape(flavor), PRESETS[preset]
    assert (mine.h, mine.f, mine.a, mine.k, mine.L, mine.v, mine.tied) == (
        theirs.h,
        theirs.f,
        theirs.a,
        theirs.k,
        theirs.L,
        theirs.v,
        theirs.tied,
    )


@pytest.mark.parametrize(
    "args,split",
    [
        ((3, 2, 2, 2), (2, 1)),  # the docstring's example: 7 units, 4 + 3
        ((32, 4, 1, 1), (8, 9, 8, 7)),
        ((126, 8, 1, 1), (15, 16, 16, 16, 16, 16, 16, 15)),
        ((8, 2, 0, 0), (4, 4)),
    ],
)
def test_the_pipeline_split_is_torchtitans(args, split):
    assert stage_split(*args) == split and sum(split) == args[0]


def test_the_example_gives_the_estimate_of_the_same_flags():
    code, out, err = run("estimate", "--torchtitan", str(EXAMPLE), "--gpus", "64", "--json")
    assert code == 0, err
    mine = json.loads(out)
    assert mine.pop("torchtitan") == {"file": str(EXAMPLE), "overridden": []}
    assert_same_answer(mine, *"estimate --recipe torchtitan --model llama3-8b --dp 64 --seq 8192 --mbs 1".split())


def test_overrides_and_flags_beside_the_file_are_applied_and_said(tmp_path):
    code, out, err = run(
        "estimate",
        "--torchtitan",
        str(EXAMPLE),
        "--gpus",
        "64",
        "--override",
        "parallelism.pipeline_parallel_degree=4",
        "--override",
        "activation_checkpoint.mode=\"full\"",
        "--seq",
        "4096",
        "--json",
    )
    assert code == 0, err
    report = json.loads(out)
    assert report["config"]["pp"] == 4 and report["config"]["dp"] == 16 and report["config"]["seq"] == 4096
    assert report["config"]["recompute"] == "full" and report["config"]["stage_layers"] == [8, 9, 8, 7]
    assert (report["config"]["gbs"], report["config"]["m"]) == (16, 1)  # global -1: local_batch_size 1 x d 16
    assert report["torchtitan"]["overridden"] == [
        "parallelism.pipeline_parallel_degree = 4 from --override (the file: 1)",
        "activation_checkpoint.mode = 'full' from --override (the file: 'selective')",
        "--seq 4096 from the command line (the file: 8192)",
    ]


@pytest.mark.parametrize(
    "extra,needles",
    [
        (["--override", "training.no_such_key=1"], ["training.no_such_key (not a key of torchtitan 0.2.2's"]),
        (["--override", "training.seq_len=\"long\""], ["training.seq_len = 'long' (takes int)"]),
        (
            ["--override", "training.seq_len=1", "--override", "training.seq_len=2"],
            ["--override training.seq_len (given twice)"],
        ),
        (["--override", "seq_len"], ["--override expects section.key=value"]),
        (
            [
                "--override",
                "training.enable_cpu_offload=true",
                "--override",
                "parallelism.fsdp_reshard_after_forward=\"always\"",
                "--override",
                "compile.enable=true",
            ],
            [
                "3 keys",
                "training.enable_cpu_offload = True",
                "fsdp_reshard_after_forward = 'always'",
                "compile.components",
            ],
        ),
        (
            ["--override", "parallelism.data_parallel_shard_degree=3"],
            [("data_parallel_shard_degree 3 x tp x pp x cp = 3 is not --gpus 64")],
        ),
        (
            ["--override", "training.global_batch_size=100"],
            [("global batch 100 is not a multiple of local_batch_size 1 x data-parallel size 64")],
        ),
        (["--override", "model.flavor=\"1B\""], ["model llama3 1B (mem4d reads the llama3 flavours"]),
        (["--megatron", str(EXAMPLE)], ["--megatron, --torchtitan and --deepspeed each state a whole run"]),
        (["--recipe", "deepspeed"], ["--recipe/--profile deepspeed conflicts"]),
    ],
)
def test_bad_job_files_are_refused_in_one_line(extra, needles):
    code, out, err = run("estimate", "--torchtitan", str(EXAMPLE), "--gpus", "64", *extra)
    assert (code, out, err.count("\n")) == (2, "", 1), err
    for needle in needles:
        assert needle in err, err


def test_malformed_toml_and_a_key_given_twice_are_refused(tmp_path):
    path = tmp_path / "job.toml"
    for text in ("[training]\nseq_len = 1\nseq_len = 2\n", "[training\n"):
        path.write_text(text)
        code, out, err = run("estimate", "--torchtitan", str(path), "--gpus", "8")
        assert (code, out, err.count("\n")) == (2, "", 1) and "malformed TOML" in err, err


def test_plan_holds_the_files_settings_and_its_own_row_is_the_estimate():
    code, out, err = run(
        "plan", "--torchtitan", str(EXAMPLE), "--gpus", "8", "--gbs", "8", "--zero", "3", "--all", "--json"
    )
    assert code == 0, err
    plan = json.loads(out)
    assert plan["torchtitan"]["held"] == {
        "seq": "8192",
        "sp": "True",
        "compile": "False",
        "fp8": "none",
        "fp8_all_gather": "False",
        "optimizer": "adamw",
        "tp_comm_overlap": "False",
    }
    own = {
        "dp": 8,
        "tp": 1,
        "pp": 1,
        "cp": 1,
        "vpp": 1,
        "mbs": 1,
        "recompute": "selective",
        "zero": 3,
        "stage_layers": None,
    }
    rows = [
        row
        for row in plan["configs"]
        if all(row["config"][key] == value for key, value in own.items())
        and "recompute_modules" not in row["config"]
        and "ac_every" not in row["config"]
    ]
    code, out, err = run("estimate", "--torchtitan", str(EXAMPLE), "--gpus", "8", "--json")
    assert code == 0 and len(rows) == 1, err
    estimate = json.loads(out)
    assert (rows[0]["bytes"], rows[0]["peak_bytes"]) == (estimate["bytes"], estimate["peak_bytes"])


def test_report_documents_the_files_run(tmp_path):
    tex = tmp_path / "r.tex"
    code, out, err = run(
        "report",
        "--torchtitan",
        str(EXAMPLE),
        "--dp",
        "8",
        "--override",
        "training.seq_len=4096",
        "-o",
        str(tex),
        "--json",
    )
    assert code == 0, err
    assert json.loads(out)["torchtitan"]["overridden"] == ["training.seq_len = 4096 from --override (the file: 8192)"]
    text = tex.read_text()
    assert r"\texttt{seq} ($s$) & 4096" in text and r"\texttt{zero} & 3" in text and "torchtitan" in text
