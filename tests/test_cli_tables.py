"""Tables a terminal can show: no number is ever cut to "…"; on a terminal (a pty of 80, 120 and 200 columns) every line
fits its width and the columns that gave way are named in a note; into a pipe the table is as wide as it needs.

Source of truth: the CLI contract (docs/commands.md, "Tables"): symbolic/render/console.py fits every table. Exact
checks on the text the real CLI writes (ANSI sequences stripped), in a child process on a pseudo-terminal.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pty_child import read_some, spawn

ROOT = Path(__file__).resolve().parents[1]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
CASES = {
    "plan-moe": ["plan", "--model", "tiny-moe", "--gpus", "64", "--seq", "256", "--gbs", "64"],
    "estimate-stages": "estimate --model tiny --pp 8 --seq 256 --gbs 8 --stage-layers 1,1,1,1,1,1,1,1".split(),
}


def _on_a_terminal(argv: list[str], columns: int) -> str:
    """What the command writes to a pty `columns` wide (stdout and stderr), ANSI sequences stripped."""
    env = {**os.environ, "COLUMNS": str(columns), "MEM4D_NO_COLOR": "1", "TERM": "xterm"}
    child, leader = spawn(argv, env, columns)
    chunks = []
    while chunk := read_some(leader):
        chunks.append(chunk)
    os.close(leader)
    assert child.wait(timeout=120) == 0
    return ANSI.sub("", b"".join(chunks).decode()).replace("\r", "")


@pytest.mark.parametrize("columns", [80, 120, 200])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_terminal_shows_every_number_whole(case, columns):
    out = _on_a_terminal(CASES[case], columns)
    assert "…" not in out, out
    assert max(len(line) for line in out.splitlines()) <= columns, out
    wide = _piped(CASES[case])
    rules = [
        line.rstrip()
        for line in wide.splitlines()  # a table's rules: box-drawing characters alone
        if line.strip() and all(ch == " " or "\u2500" <= ch <= "\u257f" for ch in line)
    ]
    hidden = len(_first_row(out)) < len(_first_row(wide))  # fewer cells in its first row than the whole table's
    if max(map(len, rules)) > columns and hidden:  # the whole table does not fit: the note names what gave way
        said = " ".join(out.split())  # the note as words: a terminal wraps it anywhere
        assert "not shown at" in said and "shows every column" in said, out


def _first_row(text: str) -> list[str]:
    """The cells of a table's first row (its line after the rule under the header), split on runs of spaces."""
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip() and set(line.strip()) <= set("─━┡┩╇┼│┃"))
    return [cell for cell in re.split(r"\s{2,}|[│┃]", lines[at + 1]) if cell.strip()]


def _piped(argv: list[str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "symbolic.cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "MEM4D_NO_COLOR": "1"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_pipe_gets_the_whole_table(case):
    """No terminal: every column, as wide as it needs (the 240 columns plan used to fix cut MoE plans)."""
    out = _piped(CASES[case])
    assert "…" not in out and "not shown at" not in out, out


def test_fit_drops_the_columns_named_to_give_way_first():
    """symbolic.render.console.fit on a table of known widths: borders go, then give_way's columns, never a cut."""
    from rich.console import Console as Plain

    from symbolic.render.console import Table, fit

    console = Plain(width=40, force_terminal=True)
    table = Table()
    for name in ("config", "a", "b", "peak"):
        table.add_column(name)
    table.add_row("dp=8 tp=8", "123456.78", "123456.78", "123456.78")
    table.give_way = [1]
    width, dropped = fit(console, table)
    assert (
        width == 40
        and [c.header for c in dropped] == ["a"]
        and [c.header for c in table.columns] == ["config", "b", "peak"]
    )
