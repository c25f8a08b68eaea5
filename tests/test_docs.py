"""The docs stay honest: every relative link of README.md and docs/ resolves, and every `mem4d` command in a fenced
block is accepted by that command's own parser; the estimate and formula examples also run.

Source of truth: the files on disk and the CLI's parsers (symbolic.cli.entry.COMMANDS). Exact: no tolerance."""
import contextlib
import importlib
import io
import re
import shlex
from pathlib import Path

import pytest

from symbolic.cli.entry import COMMANDS, main
from symbolic.cli.parser import Parser

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUN = ("estimate", "formula")  # fast, no jax: run them, not only parse them (plan examples search big clusters)


def _commands() -> list[tuple[str, str, str | None]]:
    """(page, command line, the error line shown under it or None) of every `mem4d ...` line inside a fenced block;
    `$ ` prompts, trailing comments, an annotation after two spaces ("  (excerpt)") and what follows `&&` or `|`
    dropped; lines that elide flags with `...` skipped."""
    out = []
    for page in PAGES:
        fenced, lines = False, page.read_text().splitlines()
        for i, line in enumerate(lines):
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            text = line.strip().removeprefix("$ ")
            if not fenced or not text.startswith("mem4d ") or "..." in text or re.match(r"mem4d \S+: error:", text):
                continue
            text = re.split(r"\s+(?:#|&&|\|)\s*|\s{2,}\(", text)[0]
            shown = lines[i + 1].strip() if i + 1 < len(lines) else ""
            error = shown if shown.startswith(f"mem4d {text.split()[1]}: error:") else None
            out.append((page.relative_to(ROOT).as_posix(), text, error))
    return out


COMMAND_LINES = _commands()


def test_the_docs_show_commands():
    assert len(COMMAND_LINES) >= 15, COMMAND_LINES
    assert {line.split()[1] for _, line, _ in COMMAND_LINES} >= {"estimate", "plan", "verify", "compile", "formula"}


@pytest.mark.parametrize("page,line,error", COMMAND_LINES, ids=[f"{p}:{x[:60]}" for p, x, _ in COMMAND_LINES])
def test_every_command_parses(page, line, error):
    argv = shlex.split(line)[1:]
    assert argv[0] in COMMANDS, f"{page}: unknown command in {line!r}"
    parser = Parser(prog=f"mem4d {argv[0]}")
    importlib.import_module(COMMANDS[argv[0]][0]).add_arguments(parser)
    try:
        parser.parse_args(argv[1:])
    except SystemExit as exit:
        pytest.fail(f"{page}: {line!r} is refused by its parser (exit {exit.code})")


FAST = [case for case in COMMAND_LINES if case[1].split()[1] in RUN]


@pytest.mark.parametrize("page,line,error", FAST, ids=[f"{p}:{x[:60]}" for p, x, _ in FAST])
def test_the_fast_examples_run(page, line, error):
    """Exit 0, or where the page shows the command's one-line error under it, exit 2 with that very line."""
    argv = [arg for arg in shlex.split(line)[1:] if arg not in ("--latex",)] + ["--json"]
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(argv)
    if error is None:
        assert code == 0, f"{page}: {line!r} exited {code}: {err.getvalue().strip()}"
    else:
        assert (code, err.getvalue().strip()) == (2, error), f"{page}: {line!r} no longer prints what the page shows"


def _links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return [target for target in re.findall(r"\]\(([^)\s]+)\)", text)
            if not re.match(r"[a-z]+://|mailto:|#", target)]


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_link_resolves(page):
    missing = [target for target in _links(page) if not (page.parent / target.split("#")[0]).exists()]
    assert not missing, f"{page.name}: {missing}"


def test_every_doc_page_is_linked_from_the_index():
    index = (ROOT / "docs" / "README.md").read_text()
    unlinked = [p.name for p in PAGES[1:] if p.name != "README.md" and f"]({p.name})" not in index]
    assert not unlinked, unlinked
