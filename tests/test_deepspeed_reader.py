"""`--deepspeed DS_CONFIG.json --model config.json`: a DeepSpeed 0.19.8 config read into mem4d's Training under
--recipe deepspeed.

Sources of truth: DeepSpeed 0.19.8's runtime/zero/config.py (DeepSpeedZeroConfig) and runtime/precision_config.py
(DeepSpeedBF16Config, DeepSpeedFP16Config), their fields and aliases read by ast where the package or
MEM4D_DEEPSPEED_SRC (its deepspeed/ folder) is at hand; its engine's batch identity (train_batch_size = micro batch x
gradient_accumulation_steps x data-parallel size); and mem4d's own flags (the example must give exactly their
estimate). Exact: no tolerance."""

import ast
import importlib.util
import json
import os
from pathlib import Path

import pytest

from model_files import assert_same_answer, run

from symbolic.readers.deepspeed import CLASSES, table

EXAMPLE = Path(__file__).resolve().parents[1] / "grids" / "deepspeed" / "zero3-bf16.json"
SECTIONS = {
    "DeepSpeedZeroConfig": ("runtime/zero/config.py", "zero_optimization"),
    "DeepSpeedBF16Config": ("runtime/precision_config.py", "bf16"),
    "DeepSpeedFP16Config": ("runtime/precision_config.py", "fp16"),
}


def _source() -> Path | None:
    if os.environ.get("MEM4D_DEEPSPEED_SRC"):
        return Path(os.environ["MEM4D_DEEPSPEED_SRC"])
    spec = importlib.util.find_spec("deepspeed")
    return Path(spec.origin).parent if spec and spec.origin else None


def _keys(folder: Path) -> set[str]:
    """Every field of the three config classes, and each alias, as section.key."""
    out = set()
    for cls, (path, section) in SECTIONS.items():
        tree = ast.parse((folder / path).read_text())
        node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls)
        for st in node.body:
            if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
                out.add(f"{section}.{st.target.id}")
                if isinstance(st.value, ast.Call):
                    out |= {f"{section}.{k.value.value}" for k in st.value.keywords if k.arg == "alias"}
    return out


@pytest.mark.skipif(
    not (_source() and (_source() / "runtime" / "zero" / "config.py").exists()),
    reason="DeepSpeed 0.19.8's source is absent (pip download --no-deps deepspeed==0.19.8, unpack it "
    "and set MEM4D_DEEPSPEED_SRC to its deepspeed/ folder)",
)
def test_the_table_holds_every_field_of_the_zero_and_precision_configs():
    mine = {key for key in table() if key.split(".")[0] in ("zero_optimization", "bf16", "fp16")}
    assert mine == _keys(_source())


def test_every_key_is_classified_with_a_reason():
    assert all(cls in CLASSES and reason for _, cls, reason in table().values())


def test_the_example_gives_the_estimate_of_the_same_flags():
    code, out, err = run("estimate", "--deepspeed", str(EXAMPLE), "--model", "llama3-8b", "--gpus", "8", "--json")
    assert code == 0, err
    mine = json.loads(out)
    assert mine.pop("deepspeed") == {"file": str(EXAMPLE), "overridden": []}
    flags = "--recipe deepspeed --model llama3-8b --dp 8 --zero 3 --mbs 2 --gbs 64"
    assert_same_answer(mine, "estimate", *flags.split())


def _write(tmp_path, config: dict) -> str:
    path = tmp_path / "ds.json"
    path.write_text(json.dumps(config))
    return str(path)


BASE = {
    "train_micro_batch_size_per_gpu": 2,
    "gradient_accumulation_steps": 4,
    "bf16": {"enabled": True},
    "zero_optimization": {"stage": 2},
}


def test_the_global_batch_follows_from_the_accumulation_steps_and_flags_override(tmp_path):
    code, out, err = run(
        "estimate",
        "--deepspeed",
        _write(tmp_path, BASE),
        "--model",
        "llama3-8b",
        "--gpus",
        "16",
        "--zero",
        "1",
        "--json",
    )
    assert code == 0, err
    report = json.loads(out)
    assert (report["config"]["gbs"], report["config"]["m"], report["config"]["zero"]) == (2 * 4 * 16, 4, 1)
    assert report["deepspeed"]["overridden"] == ["--zero 1 from the command line (the file: 2)"]


@pytest.mark.parametrize(
    "change,needles",
    [
        ({"no_such_key": 1}, ["no_such_key (not a key of DeepSpeed 0.19.8's config"]),
        (
            {"train_batch_size": 100},
            [("train_batch_size 100 is not micro batch 2 x gradient_accumulation_steps 4 x data-parallel size 8 = 64")],
        ),
        (
            {"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}, "reduce_bucket_size": 1e6}},
            ["2 keys", "zero_optimization.offload_optimizer", "zero_optimization.reduce_bucket_size = 1000000.0"],
        ),
        (
            {"bf16": {"enabled": False}, "fp16": {"enabled": True}},
            ["fp16.enabled = true (the deepspeed recipe models bf16"],
        ),
        ({"train_micro_batch_size_per_gpu": "auto"}, ["\"auto\" (the Hugging Face Trainer fills it in"]),
        ({"optimizer": {"type": "Lamb"}}, ["optimizer.type = \"Lamb\" (Adam and AdamW are modelled)"]),
        ({"train_micro_batch_size_per_gpu": 0}, ["train_micro_batch_size_per_gpu = 0 (must be a positive integer)"]),
    ],
)
def test_bad_configs_are_refused_in_one_line(tmp_path, change, needles):
    code, out, err = run(
        "estimate", "--deepspeed", _write(tmp_path, {**BASE, **change}), "--model", "llama3-8b", "--gpus", "8"
    )
    assert (code, out, err.count("\n")) == (2, "", 1), err
    for needle in needles:
        assert needle in err, err


@pytest.mark.parametrize(
    "text,argv,needle",
    [
        ('{"bf16": {"enabled": true}, "bf16": {"enabled": false}}', ["--model", "llama3-8b"], "bf16 given twice"),
        ('{"bf16": ', ["--model", "llama3-8b"], "malformed JSON"),
        ("[1, 2]", ["--model", "llama3-8b"], "a DeepSpeed config is a JSON object"),
        (json.dumps(BASE), [], "names no model: give --model config.json"),
        (
            json.dumps(BASE),
            ["--model", "llama3-8b", "--recipe", "torchtitan"],
            "--recipe/--profile torchtitan conflicts",
        ),
    ],
)
def test_malformed_duplicated_and_contradicting_input_is_refused(tmp_path, text, argv, needle):
    path = tmp_path / "ds.json"
    path.write_text(text)
    code, out, err = run("estimate", "--deepspeed", str(path), "--gpus", "8", *argv)
    assert (code, out, err.count("\n")) == (2, "", 1) and needle in err, err


def test_plan_holds_the_files_settings_and_its_own_row_is_the_estimate():
    code, out, err = run(
        "plan",
        "--deepspeed",
        str(EXAMPLE),
        "--model",
        "llama3-8b",
        "--gpus",
        "8",
        "--seq",
        "4096",
        "--zero",
        "3",
        "--gpu-mem",
        "141GiB",
        "--all",
        "--json",
    )  # the run itself needs 69 GiB
    assert code == 0, err
    plan = json.loads(out)
    assert plan["deepspeed"]["held"] == {"grad_dtype": "bf16", "optimizer": "adamw", "gbs": "64"}
    assert plan["deepspeed"]["searched"] == {"mbs": "2", "zero": "3"}
    own = {"dp": 8, "tp": 1, "pp": 1, "cp": 1, "vpp": 1, "mbs": 2, "recompute": "none", "zero": 3, "stage_layers": None}
    rows = [row for row in plan["configs"] if all(row["config"][key] == value for key, value in own.items())]
    code, out, err = run("estimate", "--deepspeed", str(EXAMPLE), "--model", "llama3-8b", "--gpus", "8", "--json")
    assert code == 0 and len(rows) == 1, err
    estimate = json.loads(out)
    assert (rows[0]["bytes"], rows[0]["peak_bytes"]) == (estimate["bytes"], estimate["peak_bytes"])
