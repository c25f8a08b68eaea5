"""mem4d verify: the jax profile against XLA's memory analysis of jaxcheck's compiled step, on both backends.

Sources of truth: XLA's memory_analysis() (argument bytes and output - alias must match exactly: 0 bytes tolerance),
the residuals the pipeline stacks per layer (count and bytes of the profile's per-layer list: exact), and XLA's temp,
which the profile's buffer table approximates with its largest phase: the total must be within 6 % on the micro
shape below (h = 48, where fixed-size buffers the table leaves out weigh most; measured after the head_grad_zeros
row, XLA:GPU for an H100: selective -5.4 %, t2-selective +2.3 %, full -2.2 %; XLA:CPU: +2.4 %, +1.7 %, +4.4 %).
"""

import json
import subprocess
import sys

import pytest

from conftest import skip_if_not_enough_devices
from symbolic.config.shapes import ModelShape
from symbolic.config.training import Training

SHAPE = ModelShape("t", h=48, f=112, a=6, k=2, L=4, v=144)
TOTAL_TOLERANCE = 0.06


def _verify(train: Training, target: str = "h100-80gb", **kw) -> dict:
    from jaxcheck.crosscheck.verify import verify
    from jaxcheck.targets import load

    skip_if_not_enough_devices(train.world)
    return verify(SHAPE, train, target=load(target), **kw)


P2C2 = Training(p=2, c=2, s=32, gbs=4, recompute="full", zero=0)
FULL_ZERO3 = Training(d=2, t=2, p=2, c=2, s=32, gbs=4, recompute="full", zero=3)


@pytest.mark.parametrize(
    "train, target",
    [  # ZeRO-1: test_jax_stages's d2 e2 p2 (XLA:CPU), test_jax_gpt's t2 and
        (P2C2, "cpu"),
        (FULL_ZERO3, "h100-80gb"),
        (FULL_ZERO3, "cpu"),  # the crosscheck notebook (H100); p2 c2 on H100:
    ],
    ids=["p2c2-cpu", "d2t2p2c2-zero3-h100-80gb", "d2t2p2c2-zero3-cpu"],
)  # the ZeRO-3 case's mesh holds it
def test_argument_and_output_bytes_exact(train, target):
    result = _verify(train, target)
    rows = {row["name"]: row for row in result["components"]}
    for name in ("params", "optimizer", "batch", "argument", "output - alias"):
        assert rows[name]["symbolic"] == rows[name]["xla"], name
    x = result["xla"]
    assert x["total_bytes"] == x["argument_bytes"] + x["output_bytes"] + x["temp_bytes"] - x["alias_bytes"]
    assert result["rel_error_total"] == (result["symbolic"]["total"] - x["total_bytes"]) / x["total_bytes"]


# GPipe: the micro shape's tolerances were measured on the GPipe step (the 1F1B table is read from XLA:GPU and XLA:CPU
# dumps of grids/derive-1f1b.toml), and 1F1B's below
T2_SELECTIVE = Training(t=2, s=128, gbs=1, recompute="selective", zero=0, schedule="gpipe")
FULL = Training(s=128, gbs=1, recompute="full", zero=0, schedule="gpipe")


@pytest.mark.parametrize(
    "train, target", [(T2_SELECTIVE, "h100-80gb"), (FULL, "cpu")], ids=["h100-80gb-t2-selective", "cpu-full"]
)
def test_total_within_tolerance(train, target):
    """GPipe, the schedule that is not the default: one policy and layout per backend (the 1F1B ones below; every
    GPipe policy on both backends was measured at the figures in the module's docstring)."""
    assert abs(_verify(train, target)["rel_error_total"]) <= TOTAL_TOLERANCE


_CLI: dict = {}


def _cli_json(capsys) -> dict:
    """`mem4d verify --json` of the tiny model's 1F1B step, t2 p2 s512 gbs8 selective, ZeRO-0, on the default target
    (XLA:GPU for an H100), through its entry point in this process (no second jax start-up); run once for the two
    tests that read it."""
    from symbolic.cli.entry import main

    if not _CLI:
        rc = main(
            "verify --model tiny --dp 1 --tp 2 --pp 2 --cp 1 --seq 512 --gbs 8 --remat selective --zero 0 --json".split()
        )
        captured = capsys.readouterr()
        assert rc == 0, captured.err
        _CLI.update(json.loads(captured.out))
    return _CLI


def test_one_f_one_b_total_within_tolerance(capsys):
    """The 1F1B step of the tiny model against XLA:GPU (H100) within 6 % (grids/derive-1f1b.toml's tiny t2 p2
    selective m = 8: -2.6 % at 4f091e0)."""
    assert abs(_cli_json(capsys)["rel_error_total"]) <= TOTAL_TOLERANCE


def test_one_f_one_b_total_within_tolerance_on_cpu():
    """The 1F1B step of the tiny model against XLA:CPU within 8 % (issue 27's goal for XLA:CPU; grids/derive-1f1b.toml's
    tiny p4 m = 16 full: -2.96 % with the CPU rows of 1F1B, +92 % to +151 % for the grid's other tiny steps with
    GPipe's CPU rows before them)."""
    from jaxcheck.crosscheck.verify import verify
    from jaxcheck.targets import load
    from symbolic.config.shapes import PRESETS

    train = Training(p=4, s=256, gbs=16, recompute="full", zero=0)
    skip_if_not_enough_devices(train.world)
    assert abs(verify(PRESETS["tiny"], train, target=load("cpu"))["rel_error_total"]) <= 0.08


@pytest.mark.parametrize("recompute,flash_attn", [("none", True), ("selective", True), ("full", True), ("none", False)])
def test_saved_residuals_match_the_profile_tensor_list(recompute, flash_attn):
    """The residuals the pipeline stacks for one layer (jaxcheck.model.pipeline.layer_residuals) == the profile's
    per-layer tensors, in count and bytes."""
    from jaxcheck.crosscheck.explain import residuals
    from jaxcheck.mesh import make_mesh
    from jaxcheck.spec import StepSpec

    train = Training(s=64, gbs=1, recompute=recompute, zero=0, flash_attn=flash_attn)
    res = residuals(StepSpec(SHAPE, train).check(), make_mesh(train))
    assert res["jax_count"] == res["symbolic_count"]
    assert res["jax_bytes"] == res["symbolic_bytes"]


def _cli(*args, timeout=240):
    return subprocess.run(
        [sys.executable, "-m", "symbolic.cli", "verify", *args], capture_output=True, text=True, timeout=timeout
    )


def test_cli_json_schema(capsys):
    """`mem4d verify --json`'s keys and what they say of the run (_cli_json)."""
    out = _cli_json(capsys)
    assert {
        "model",
        "param_count",
        "config",
        "target",
        "symbolic",
        "xla",
        "measured",
        "components",
        "rel_error_total",
        "compile_seconds",
        "explain",
    } <= set(out)
    assert out["target"]["name"] == "h100-80gb" and out["target"]["platform"] == "gpu"  # the default: XLA:GPU
    assert out["target"]["compiled_with_memory_bytes"] > 1000 * out["target"]["memory_bytes"]  # as written
    assert {"argument_bytes", "output_bytes", "alias_bytes", "temp_bytes", "total_bytes"} <= set(out["xla"])
    assert out["config"]["tp"] == 2 and out["config"]["recompute"] == "selective" and out["config"]["zero"] == 0
    assert out["config"]["weight_bytes"] == 4 and out["config"]["schedule"] == "1f1b"
    assert out["measured"] is None and out["explain"] is None
    assert sum(v for k, v in out["symbolic"].items() if k != "total") == out["symbolic"]["total"]
    assert {"name", "symbolic", "xla", "rel_error"} <= set(out["components"][0])


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--model", "tiny", "--tp", "3", "--seq", "768"], "tensor parallel t=3"),
        (["--model", "tiny", "--remat", "some"], "--remat"),
        (["--model", "nope"], "nope"),
        (["--dp", "0"], "positive integer"),
        (["--model", "tiny", "--target", "tpu-v9"], "unknown target 'tpu-v9'"),
        (["--model", "tiny", "--target", "cpu", "--target-config", "x.txtpb"], "conflict"),
        (["--model", "tiny", "--target-config", "/nonexistent.txtpb"], "no such file"),
    ],
)
def test_bad_input_one_line_exit_2(args, needle):
    proc = _cli(*args, timeout=60)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in proc.stderr


def test_missing_cuda_plugin_is_one_line_exit_2(tmp_path):
    """Where jax's CUDA plugin cannot be imported (here: a jax_plugins package that hides it), a GPU target says what
    to install in one line; --target cpu still works."""
    (tmp_path / "jax_plugins").mkdir()
    (tmp_path / "jax_plugins" / "__init__.py").write_text("")
    env = {**__import__("os").environ, "PYTHONPATH": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "symbolic.cli", "verify", "--model", "tiny", "--seq", "128"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "jax[cuda12-local]" in lines[0], proc.stderr
