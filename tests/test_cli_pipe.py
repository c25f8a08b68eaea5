"""`mem4d ... | head -1`: a reader that goes away ends the command quietly (exit 141, no traceback).

Source of truth: Unix convention (a tool killed by SIGPIPE exits 128 + 13 = 141 in the shell, prints nothing).
Every command and output mode, rich tables included (rich's own Console exits 1 without a word; mem4d's passes
the broken pipe on: symbolic/render/console.py).
The read end is closed before the child writes, so every write of the child meets a closed pipe (no timing luck).
"""

import subprocess
import sys

import pytest

TINY = ["--model", "tiny", "--seq", "256", "--gbs", "8"]


PLAN = ["plan", "--model", "tiny", "--gpus", "16", "--seq", "256", "--gbs", "32"]
STEP = ["--model", "tiny", "--pp", "2", "--seq", "128", "--gbs", "4", "--target", "cpu"]


@pytest.mark.parametrize(
    "argv",
    [
        ["estimate", *TINY, "--json"],  # small output: without the fix it fails only at the exit flush
        ["estimate", *TINY],  # rich table
        ["estimate", *TINY, "--stage-layers", "3,5", "--pp", "2"],
        [*PLAN],
        [*PLAN, "--json"],
        [*PLAN, "--json", "--all"],
        [*PLAN, "--explain"],  # streamed with --all
        ["formula"],
        ["formula", "--json"],
        ["formula", "--latex"],
        ["formula", "activations", "--model", "tiny"],
        ["latex", *TINY],
        ["compile", *STEP],  # jax: a compile, then a rich table (verify's JSON is estimate's print path)
    ],
)
def test_closed_stdout_is_quiet(argv):
    child = subprocess.Popen(
        [sys.executable, "-m", "symbolic.cli", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    child.stdout.close()
    _, err = child.communicate(timeout=120)
    assert child.returncode == 141, (child.returncode, err)
    assert err == "", err


def test_shell_pipe_into_head():
    """What a user types: the first line arrives, nothing on stderr (a smoke test: whether the child meets the closed
    pipe depends on timing, which the test above removes)."""
    cmd = f"'{sys.executable}' -m symbolic.cli estimate --model tiny --json | head -1"
    done = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=120)
    assert done.stdout == "{\n" and done.stderr == "", done.stderr
