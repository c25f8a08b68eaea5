"""Flags said once, messages that name the real problem: a flag given twice with two values is refused in one line
(argparse let the last win silently), a list flag repeats, a negative value is the flag's value (not "expected one
argument"), an empty name is called empty.

Source of truth: the CLI contract (docs/commands.md: one line naming the flag, the value and what is allowed, exit 2;
flags that set one option to different values are refused). Exact messages, run in-process (symbolic.cli.entry.main).
"""

import pytest

from symbolic.cli.entry import main

TINY = ["--model", "tiny", "--seq", "256", "--gbs", "8", "--json"]


def _refused(argv, capsys) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["estimate", *TINY, "--dp", "2", "--dp", "4"], "--dp given twice (--dp 2, then --dp 4): give it once"),
        (["estimate", *TINY, "--tp", "2", "--tp", "4"], "--tp given twice (--tp 2, then --tp 4): give it once"),
        (["estimate", *TINY, "--zero", "1", "--zero", "3"], "--zero given twice"),
        (["estimate", *TINY, "--recipe", "megatron", "--recipe", "torchtitan"], "--recipe given twice"),
        (["estimate", *TINY, "--gpu-mem", "80GiB", "--gpu-mem", "40GiB"], "--gpu-mem given twice"),
        (
            ["plan", "--model", "tiny", "--model", "llama3-8b", "--gpus", "8", "--seq", "256", "--gbs", "8"],
            "--model given twice",
        ),
        (
            ["estimate", *TINY, "--overhead", "cuda_context=1GiB", "--overhead", "cuda_context=2GiB"],
            "--overhead cuda_context given twice with different sizes",
        ),
    ],
)
def test_a_flag_given_twice_is_refused(argv, message, capsys):
    assert message in _refused(argv, capsys)


@pytest.mark.parametrize(
    "again",
    [
        ["--dp", "2", "--dp", "2"],
        ["--no-sp", "--no-sp"],
        ["--overhead", "cuda_context=1GiB", "--overhead", "fragmentation=0"],
    ],
)
def test_a_flag_said_twice_alike_or_a_list_flag_passes(again, capsys):
    assert main(["estimate", *TINY, *again]) == 0, capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["estimate", *TINY, "--gpu-mem", "-80GiB"], "argument --gpu-mem: memory size '-80GiB' must be from 1 byte"),
        (
            ["estimate", *TINY, "--pp", "2", "--stage-layers", "-1,9"],
            ("argument --stage-layers: expected comma-separated positive layer counts such as 7,8,8,7, got '-1,9'"),
        ),
        (["estimate", *TINY, "--threshold", "-.5"], "argument --threshold: expected a number in (0, 1], got '-.5'"),
        (["estimate", *TINY, "--overhead", "cuda_context=-1GiB"], "memory size '-1GiB' must be from 1 byte"),
        (["estimate", "--model", "", "--json"], "--model '': an empty name; give a preset or a config.json"),
        (["latex", "--model", "tiny", "-o", ""], "-o/--output '': an empty name; give a file name"),
    ],
)
def test_the_message_names_the_real_problem(argv, message, capsys):
    err = _refused(argv, capsys)
    assert message in err and "expected one argument" not in err


def test_vpp_hint_offers_only_what_is_accepted(capsys):
    """pp x vpp = 6 of L = 8 with vpp = 3: no uneven split helps (L is no multiple of vpp), so the hint names sizes."""
    err = _refused(["estimate", *TINY, "--pp", "2", "--vpp", "3"], capsys)
    assert "choose pp and vpp whose product divides 8" in err and "--balance" not in err


@pytest.mark.parametrize("command", ["compile", "verify"])
def test_compile_and_verify_are_not_offered_a_flag_they_refuse(command, capsys):
    """Their uneven-split hint names --balance only as estimate's, latex's and report's (they do not take it)."""
    err = _refused([command, "--model", "tiny", "--pp", "3", "--seq", "128", "--gbs", "6", "--target", "cpu"], capsys)
    assert "give --stage-layers (pp entries summing to 8; estimate, latex and report choose one with --balance)" in err


def test_a_symbolic_link_that_loops_is_named_so(tmp_path, capsys):
    """Before: "unknown model" (Path.exists() is False for a loop), as if the name were a preset misspelled."""
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    err = _refused(["estimate", "--model", str(tmp_path / "a"), "--json"], capsys)
    assert "cannot read: Too many levels of symbolic links" in err and "unknown model" not in err


def test_a_fifo_model_is_refused_without_waiting_for_a_writer(tmp_path, capsys):
    """Before: open() blocked until killed."""
    import os

    os.mkfifo(tmp_path / "config.json")
    err = _refused(["estimate", "--model", str(tmp_path), "--json"], capsys)
    assert "not a regular file (a pipe, device or socket)" in err
