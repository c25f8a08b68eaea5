"""What every command tells a new user: the defaults it assumed (--help), the config it used (titles, --json), the
units of --gpu-mem, the model a config file names; and what it refuses in one line before any work: conflicting
flags, unusable output paths, an empty or non-UTF-8 grid.

Source of truth: the CLI contract of docs/commands.md (exit 2 with one line naming the flag and the value). In-process
through symbolic.cli.entry.main (the same code the `mem4d` script runs).
"""

import argparse
import contextlib
import io
import json

import pytest

from symbolic.cli.entry import COMMANDS, main
from symbolic.cli.parser import Parser
from symbolic.config.hfconfig import from_hf_config


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(argv))
    return rc, out.getvalue(), err.getvalue()


def refused(*argv: str) -> str:
    """The one stderr line of a refused invocation (exit 2)."""
    rc, out, err = run(*argv)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, (rc, err)
    return err


@pytest.mark.parametrize("command", list(COMMANDS))
def test_help_shows_every_default(command):
    """Every option with a default value says it in --help (on/off switches and options without one excepted)."""
    import importlib

    parser = Parser(prog=f"mem4d {command}")
    importlib.import_module(COMMANDS[command][0]).add_arguments(parser)
    text = parser.format_help()
    for action in parser._actions:
        default = action.default
        if not action.option_strings or default in (None, argparse.SUPPRESS, []) or isinstance(default, bool):
            continue
        assert f"(default: {default}" in " ".join(text.split()), (command, action.option_strings, default)


def test_verify_help_shows_its_cross_check_defaults():
    rc, out, _ = run("verify", "--help")
    flat = " ".join(out.split())
    assert rc == 0 and "llama3-8b dp=2 tp=2 pp=2 cp=2" in flat and "seq=1024" in flat and "gbs=8" in flat
    for flag, default in (("--dp DP", "2"), ("--cp CP", "2"), ("--seq SEQ", "1024"), ("--gbs GBS", "8")):
        assert f"{flag} " in out and f"(default: {default})" in flat
    assert "(default: full)" in flat and "(default: h100-80gb)" in flat


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["estimate", "--recompute", "none", "--remat", "full"], "unrecognized arguments: --remat"),  # compile's alias
        (["estimate", "--zero", "0", "--dist-opt"], "--zero 0 and --dist-opt conflict"),
        (["plan", "--gpus", "8", "--seq", "1024", "--gbs", "8", "--zero", "1", "--no-dist-opt"], "conflict"),
        (["formula", "--no-dist-opt", "--zero", "1"], "--no-dist-opt and --zero 1 conflict"),
        (["formula", "--latex", "--json"], "not allowed with argument --latex"),
        (["verify", "--recompute", "full", "--remat", "none"], "--recompute full and --remat none conflict"),
        (["compile", "--zero", "1", "--no-zero1"], "--zero 1 and --no-zero1 conflict"),
        (["sweep", "g.toml", "--json", "--markdown"], "not allowed with argument --json"),
        (["sweep", "g.toml", "--plots", "p", "--no-plots"], "not allowed with argument --plots"),
    ],
)
def test_conflicting_flags_are_refused(argv, needle):
    assert needle in refused(*argv)


def test_agreeing_aliases_pass_and_a_repeated_flag_with_two_values_is_refused():
    rc, out, _ = run("estimate", "--model", "tiny", "--zero", "1", "--dist-opt", "--recompute", "full", "--json")
    assert rc == 0 and json.loads(out)["config"]["zero"] == 1
    assert "--model given twice (--model llama3-8b, then --model tiny)" in refused(
        "estimate", "--model", "llama3-8b", "--model", "tiny", "--json"
    )  # argparse let the last win silently


@pytest.mark.parametrize(
    "value, needle",
    [
        ("1e999GiB", "from 1 byte to 8 EiB"),
        ("0.5", "from 1 byte"),
        ("nan", "cannot parse"),
        ("inf", "cannot parse"),
        ("1e999", "from 1 byte"),
        ("-5GiB", "from 1 byte"),
        ("80XB", "cannot parse"),
    ],
)
def test_memory_sizes_are_finite_and_at_least_a_byte(value, needle):
    for command in (["estimate"], ["plan", "--gpus", "8", "--seq", "1024", "--gbs", "8"], ["latex"]):
        err = refused(*command, f"--gpu-mem={value}")
        assert "--gpu-mem" in err and repr(value) in err and needle in err
    err = refused("estimate", "--overhead", f"cuda_context={value}")
    assert f"--overhead cuda_context={value}" in err


def test_gpu_mem_units_are_echoed():
    """80G is 80 GB = 80e9 bytes (not GiB): the table says so, --json carries the bytes."""
    rc, out, _ = run("estimate", "--model", "tiny", "--gpu-mem", "80G")
    assert rc == 0 and "80,000,000,000 bytes = 74.51 GiB = 80.00 GB" in out
    rc, out, _ = run("estimate", "--model", "tiny", "--gpu-mem", "80G", "--json")
    assert json.loads(out)["gpu_mem_bytes"] == 80 * 10**9
    rc, out, _ = run("plan", "--model", "tiny", "--gpus", "4", "--seq", "256", "--gbs", "8", "--gpu-mem", "8GiB")
    assert rc == 0 and "8,589,934,592 bytes = 8.00 GiB" in " ".join(out.split())
    rc, out, _ = run(
        "plan", "--model", "tiny", "--gpus", "4", "--seq", "256", "--gbs", "8", "--gpu-mem", "8GiB", "--json"
    )
    assert json.loads(out)["gpu_mem_bytes"] == 8 * 2**30


def test_estimate_title_carries_model_parameters_and_config():
    rc, out, _ = run("estimate", "--model", "tiny", "--tp", "2", "--recompute", "selective")
    flat = " ".join(out.split())
    assert rc == 0 and "tiny, 6,066,432 parameters: dp=1 tp=2" in flat and "recompute=selective" in flat
    assert "weight_bytes=2" in flat and "profile=paper" in flat and "most loaded GPU GiB" in flat


def test_estimate_labels_follow_the_profile():
    rc, out, _ = run("estimate", "--model", "tiny", "--profile", "jax")
    assert rc == 0 and "each device (SPMD) GiB" in out and "(paper)" not in out and "paper's total" not in out


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["latex", "-o", "/nonexistent/x.tex"], "folder /nonexistent does not exist"),
        (["latex", "-o", "."], "is a directory"),
        (["plan", "--gpus", "512", "--seq", "8192", "--gbs", "1024", "--plot", "p.txt"], "unknown format '.txt'"),
        (["plan", "--gpus", "512", "--seq", "8192", "--gbs", "1024", "--plot", "p"], "unknown format"),
        (["plan", "--gpus", "8", "--seq", "1024", "--gbs", "8", "--csv", "/proc/x.csv"], "cannot write there"),
        (["plan", "--gpus", "8", "--seq", "1024", "--gbs", "8", "--plot", "/nonexistent/p.png"], "does not exist"),
    ],
)
def test_unusable_output_paths_are_refused_first(argv, needle, tmp_cwd):
    err = refused(*argv)
    assert needle in err and argv[-1] in err
    assert list(tmp_cwd.iterdir()) == []  # nothing written


@pytest.mark.parametrize(
    "content, needle",
    [
        (b"# nothing to see\n", "nothing to sweep"),
        (b'[base]\nmodel = "tiny"\n', "nothing to sweep"),
        (b'[base]\nmodel = "caf\xe9"\n', "not UTF-8"),
    ],
)
def test_empty_or_undecodable_grid_is_refused(tmp_path, content, needle):
    (tmp_path / "g.toml").write_bytes(content)
    err = refused("sweep", str(tmp_path / "g.toml"), "-o", str(tmp_path / "r.jsonl"))
    assert needle in err and "g.toml" in err and not (tmp_path / "r.jsonl").exists()


@pytest.mark.parametrize("plots", ["a_file", "/proc/plots"])
def test_unusable_plot_folder_is_refused_before_any_compile(tmp_path, plots):
    (tmp_path / "a_file").write_text("x")
    (tmp_path / "g.toml").write_text('[base]\nmodel = "tiny"\nseq = 128\n[grid]\ntp = [1, 2]\n')
    target = str(tmp_path / plots) if plots == "a_file" else plots
    err = refused("sweep", str(tmp_path / "g.toml"), "-o", str(tmp_path / "r.jsonl"), "--plots", target)
    assert "--plots" in err and target in err and not (tmp_path / "r.jsonl").exists()


@pytest.mark.parametrize(
    "name, content, expected",
    [
        ("config.json", {"_name_or_path": "meta-llama/Llama-3.2-1B", "model_type": "llama"}, "meta-llama/Llama-3.2-1B"),
        ("config.json", {"model_type": "mistral"}, "mistral"),
        ("my-model.json", {"model_type": "llama"}, "my-model"),
    ],
)
def test_model_name_of_a_config_file(tmp_path, name, content, expected):
    """_name_or_path, else the file's own name (unless the generic config.json), else model_type; never the folder."""
    folder = tmp_path / "some-folder"
    folder.mkdir()
    shape = {
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "num_hidden_layers": 2,
        "vocab_size": 100,
    }
    (folder / name).write_text(json.dumps({**content, **shape}))
    assert from_hf_config(folder / name).name == expected


def test_plan_explains_no_valid_configuration_on_stdout_and_errs_in_one_line():
    rc, out, err = run("plan", "--model", "tiny", "--gpus", "11", "--seq", "256", "--gbs", "1024")  # L = 8
    assert rc == 2 and err.count("\n") == 1 and "no valid 4D configuration" in err
    assert sum(line.startswith("  dp=") for line in out.splitlines()) == 4


@pytest.mark.parametrize(
    "flags",
    [
        ("--model", "llama3-8b", "--recompute", "selective", "--recompute-modules", "moe_act"),
        ("--recipe", "torchtitan", "--zero", "1"),
        ("--recipe", "deepspeed", "--zero", "0"),
        ("--recipe", "megatron", "--schedule", "gpipe"),
        ("--recipe", "deepspeed", "--model", "mixtral-8x7b"),
    ],
)
def test_formula_refuses_what_estimate_refuses(flags):
    """One rule table, checked once: formula names the same broken rule as estimate, word for word (source of truth:
    estimate's own message)."""
    line = lambda err: err.split(": error: ", 1)[1]  # noqa: E731  (past the command's name)
    assert line(refused("formula", *flags)) == line(refused("estimate", *flags))
