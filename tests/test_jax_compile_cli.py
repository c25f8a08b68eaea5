"""`mem4d compile` and `mem4d verify` on the command line: a compile XLA refuses is one line and exit 3, `--json` of a
program over its card, bad input one line and exit 2, and the command module importing no jax.

Sources of truth: the CLI contract (docs/commands.md: exit 2 with one line on bad input, 3 when XLA cannot compile);
for `--json`, XLA's memory_analysis() of the same step (its figures printed unchanged, tolerance none).
"""

import json
import re
import subprocess
import sys

import pytest

from test_jax_distributed import SMALL  # a Llama config.json of the smallest sizes d2 t2 p2 takes


def test_cli_compile_failure_is_one_line_exit_3(monkeypatch, capsys):
    """The CLI prints a CompileFailed as one line and exits 3 (docs/commands.md); nothing on stdout."""
    import jax

    import jaxcheck.compile
    from symbolic.cli.entry import main
    from symbolic.config.errors import CompileFailed

    def refuse(*args, **kwargs):
        raise CompileFailed(
            "XLA could not compile tiny d1 t1 p1 c1 s16 b1 gbs1 full zero0 1f1b: INTERNAL: Couldn't "
            "find output tile sizes"
        )

    monkeypatch.setattr(jaxcheck.compile, "compile_step", refuse)
    jax.devices()  # the session's 16 devices started first: verify's start() would start jax with 1, for the worker
    rc = main("verify --model tiny --dp 1 --tp 1 --pp 1 --cp 1 --seq 16 --gbs 1 --target cpu".split())
    captured = capsys.readouterr()
    assert rc == 3 and captured.out == ""
    assert captured.err.strip().splitlines() == [
        "mem4d verify: error: XLA could not compile tiny d1 t1 p1 c1 s16 b1 gbs1 "
        "full zero0 1f1b: INTERNAL: Couldn't find output tile sizes"
    ]


def _mem4d(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "symbolic.cli", "compile", *args], capture_output=True, text=True, timeout=300
    )


def test_cli_json_of_a_program_over_the_card(capsys, tmp_path):
    """`mem4d compile --json` of a step that needs more than its card holds: SMALL under GPipe (every micro batch
    held) compiled by XLA:GPU, without a GPU, for an H100 posing with 1 MiB of memory (its target config with
    device_memory_size changed), so XLA's rematerialization is tried and reported beside the program as written. In
    this process (the `mem4d` entry point, without a second jax start-up). The same path at real shapes (llama3-8b
    d2 t2 p2 s4096 gbs16 under GPipe: 116 GiB on the 80 GiB card) took 15 s of two compiles, measured 2026-12-04;
    SMALL, not the tiny preset (h 256, L 8, v 1,024): the same two compiles, 27.3 -> 24.6 CPU-s, 2026-12-07."""
    from jaxcheck.targets import HERE
    from symbolic.cli.entry import main
    from symbolic.config.hfconfig import resolve_model

    card, model = tmp_path / "h100-1mib.txtpb", tmp_path / "config.json"
    small = 2**20
    model.write_text(json.dumps(SMALL))
    card.write_text(
        re.sub(r"device_memory_size:\s*\d+", f"device_memory_size: {small}", (HERE / "h100-80gb.txtpb").read_text())
    )
    rc = main(
        [
            "compile",
            "--model",
            str(model),
            "--dp",
            "2",
            "--tp",
            "2",
            "--pp",
            "2",
            "--cp",
            "1",
            "--seq",
            "64",
            "--mbs",
            "1",
            "--gbs",
            "4",
            "--schedule",
            "gpipe",
            "--target-config",
            str(card),
            "--json",
        ]
    )
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    out = json.loads(captured.out)
    assert set(out) == {
        "model",
        "param_count",
        "config",
        "mesh",
        "devices",
        "compile_seconds",
        "xla",
        "arguments",
        "measured",
        "target",
        "xla_as_written",
        "fit",
    }
    assert out["target"]["name"] == "h100-1mib" and out["target"]["devices"] == "deviceless"
    fit = out["fit"]
    assert fit["memory_bytes"] == small and fit["needed_bytes"] == out["xla_as_written"]["total_bytes"] > small
    assert fit["reached_bytes"] == out["xla"]["total_bytes"] and fit["fits"] == (fit["reached_bytes"] <= small)
    assert out["model"] == SMALL["_name_or_path"] and out["config"]["dp"] == 2 and out["config"]["seq"] == 64
    assert out["config"]["zero"] == 0 and out["config"]["param_dtype"] == "float32"
    assert out["config"]["schedule"] == "gpipe"
    assert out["devices"] == 8 and out["param_count"] == resolve_model(str(model)).param_count
    assert {"argument_bytes", "output_bytes", "alias_bytes", "temp_bytes", "total_bytes"} <= set(out["xla"])
    assert sum(out["arguments"].values()) == out["xla"]["argument_bytes"]
    assert out["measured"] is None  # nothing ran: deviceless (never 0)


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--model", "tiny", "--tp", "3", "--seq", "48"], "does not divide attention heads"),
        (["--model", "tiny", "--remat", "fancy"], "argument --remat: invalid choice: 'fancy'"),
        (["--model", "tiny", "--pp", "3"], "do not divide layers"),
        (
            "--model tiny --dp 4 --coordinator 127.0.0.1:1 --num-processes 1 --process-id 0 --local-devices 2 --seq 64".split(),
            "needs 4 devices, jax sees 2 cpu device(s)",
        ),
    ],
)
def test_cli_bad_input_is_one_line_exit_2(args, needle):
    proc = _mem4d(*args)
    assert proc.returncode == 2, proc.stderr
    assert needle in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_vocab_not_divisible_by_tp(tmp_path):
    config = {
        "model_type": "llama",
        "hidden_size": 64,
        "intermediate_size": 176,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "num_hidden_layers": 2,
        "vocab_size": 1001,
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    proc = _mem4d("--model", str(tmp_path / "config.json"), "--tp", "2", "--seq", "16")
    assert proc.returncode == 2 and "does not divide vocabulary v=1001" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_cli_module_does_not_import_jax():
    code = "import sys, symbolic.cli.compile, symbolic.cli.verify, symbolic.cli.sweep; print('jax' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "False", proc.stderr
