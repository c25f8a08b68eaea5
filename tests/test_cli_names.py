"""Names printed as written and output streams that fail: no traceback, no markup read into a model's name, no control
character reaching the terminal, no forged line; `> /dev/full`, `>&-` and an ASCII-only stdout each end in one line.

Source of truth: the CLI contract (docs/commands.md, "Exit status" and "Names"): a name from a config.json
(`_name_or_path`) is printed literally, its control characters as Python escapes (ESC -> \\x1b, newline -> \\n);
an output that cannot be written is one line and exit 2; stdout closed from the start is one line and exit 141.
Exact string checks on the real CLI run in a child process.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "grids" / "models" / "published" / "llama3.2-1b.json"
RUN = ["--seq", "1024", "--gbs", "8"]


def _model(tmp_path: Path, name: str) -> str:
    """llama3.2-1b's config.json named `name` by its `_name_or_path`."""
    config = json.loads(PUBLISHED.read_text())
    config["_name_or_path"] = name
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return str(path)


def _mem4d(*argv: str, env: dict | None = None, **kwargs) -> subprocess.CompletedProcess:
    kwargs = kwargs or {"capture_output": True}
    return subprocess.run(
        [sys.executable, "-m", "symbolic.cli", *argv],
        text=True,
        timeout=120,
        cwd=ROOT,
        check=False,
        env={**os.environ, "MEM4D_NO_COLOR": "1", **(env or {})},
        **kwargs,
    )


@pytest.mark.parametrize(
    "name, shown",
    [
        ("acme/llama-8b [v2]", "acme/llama-8b [v2]"),  # rich markup read it as a style: "acme/llama-8b "
        ("[bold]acme[/bold]", "[bold]acme[/bold]"),
        ("x[/x]", "x[/x]"),  # a closing tag with no opening one: rich raised MarkupError (a traceback)
        ("a\x1b]0;pwned\x07b\x1b[31m", r"a\x1b]0;pwned\x07b\x1b[31m"),  # set the window title, turn the text red
        ("n\nDOES NOT FIT: fake", r"n\nDOES NOT FIT: fake"),  # a forged output line
    ],
)
def test_estimate_prints_the_name_as_written(tmp_path, name, shown):
    done = _mem4d("estimate", "--model", _model(tmp_path, name), *RUN)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(shown + ", "), done.stdout[:200]
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert not any(line.startswith("DOES NOT FIT: fake") for line in done.stdout.splitlines())
    report = json.loads(_mem4d("estimate", "--model", _model(tmp_path, name), *RUN, "--json").stdout)
    assert report["model"] == name  # JSON keeps the name itself (json escapes what it must)


def test_plan_prints_the_name_as_written(tmp_path):
    done = _mem4d("plan", "--model", _model(tmp_path, "[/x] acme\x1b[2J"), "--gpus", "8", *RUN, "--top", "1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(r"[/x] acme\x1b[2J on 8 GPUs"), done.stdout[:200]
    assert "\x1b" not in done.stdout


def test_an_error_line_escapes_control_characters(tmp_path):
    done = _mem4d("estimate", "--model", "no\nsuch\x1b[2J", *RUN)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and "\x1b" not in done.stderr, done.stderr


def test_ascii_stdout_with_a_unicode_name(tmp_path):
    done = _mem4d("estimate", "--model", _model(tmp_path, "lläma"), *RUN, env={"PYTHONIOENCODING": "ascii"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(r"ll\xe4ma, ")


@pytest.mark.parametrize(
    "argv",
    [
        ["estimate", "--model", "tiny", "--json"],
        ["estimate", "--model", "tiny"],
        ["plan", "--model", "tiny", "--gpus", "8", "--seq", "256", "--gbs", "8", "--json"],
    ],
)
def test_a_full_device_is_one_line(argv):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    with open("/dev/full", "w") as full:
        done = _mem4d(*argv, stdout=full, stderr=subprocess.PIPE)
    assert done.returncode == 2
    assert done.stderr == f"mem4d {argv[0]}: error: cannot write the output: No space left on device\n"


@pytest.mark.parametrize(
    "command",
    [
        ["estimate", "--model", "tiny"],
        ["formula"],
        ["plan", "--model", "tiny", "--gpus", "8", "--seq", "256", "--gbs", "8"],
    ],
)
def test_stdout_closed_from_the_start(command):
    """`mem4d ... >&-`: Python starts with sys.stdout None."""
    args = " ".join(command)
    done = subprocess.run(
        ["sh", "-c", f"'{sys.executable}' -m symbolic.cli {args} >&-"],
        capture_output=False,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 141
    assert (
        done.stderr == f"mem4d {command[0]}: error: stdout is closed: nothing to print to (give it a file or "
        f"/dev/null)\n"
    )
