"""The docs stay honest: every relative link of README.md and docs/ resolves, and every `mem4d` command in a fenced
block is accepted by that command's own parser; the estimate and formula examples also run; and every fenced block
that shows what a `$ mem4d` command printed either shows what the command prints now (estimate, formula, plan: run
here, each shown line compared) or says, in a `# recorded at COMMIT` line, the commit it was recorded at (commands
that compile with XLA: verify, compile, sweep, and searches too long for the suite).

Source of truth: the files on disk, the CLI's parsers (symbolic.cli.entry.COMMANDS) and its output. Exact: no
tolerance (figures to the printed precision; where a shown line is cut, "..." marks the cut)."""

import contextlib
import functools
import importlib
import io
import os
import re
import shlex
import subprocess
import sys
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
    return [target for target in re.findall(r"\]\(([^)\s]+)\)", text) if not re.match(r"[a-z]+://|mailto:|#", target)]


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_link_resolves(page):
    missing = [target for target in _links(page) if not (page.parent / target.split("#")[0]).exists()]
    assert not missing, f"{page.name}: {missing}"


def test_every_doc_page_is_linked_from_the_index():
    index = (ROOT / "docs" / "README.md").read_text()
    unlinked = [p.name for p in PAGES[1:] if p.name != "README.md" and f"]({p.name})" not in index]
    assert not unlinked, unlinked


SHOWN_RUN = ("estimate", "formula", "plan")  # run and compared; anything else shown must say where it was recorded
RECORDED = re.compile(r"^# recorded at ([0-9a-f]{7,40})\b")
CUT = re.compile(r"^(?:\.\.\.|…)\s*|\s*(?:\.\.\.|…)$")
CLOCK = re.compile(r"\b\d+(?:\.\d+)? s\b")  # a wall-clock reading ("searched in 0.191 s"): never the same twice


def _words(text: str) -> str:
    return " ".join(CLOCK.sub("_ s", text).split())


def _examples() -> list[tuple[str, int, str, list[str], str | None]]:
    """(page, line number, command, the lines shown under it, the commit of its `# recorded at` line or None) of every
    `$ mem4d ...` line in a fenced block that shows output (the lines up to the next `$ ` line or the fence)."""
    out = []
    for page in PAGES:
        lines, fenced, block = page.read_text().splitlines(), False, []
        for number, line in enumerate(lines, 1):
            if line.lstrip().startswith("```"):
                fenced, block = not fenced, []
                continue
            if not fenced:
                continue
            if line.startswith("$ ") or not block:
                block = [(number, line)]
                if line.startswith("$ mem4d "):
                    out.append([page.relative_to(ROOT).as_posix(), number, line, [], None])
                continue
            if out and out[-1][1] == block[0][0]:
                found = RECORDED.match(line)
                if found:
                    out[-1][4] = found.group(1)
                elif line.strip():
                    out[-1][3].append(line)
    return [tuple(x) for x in out if x[3]]


EXAMPLES = _examples()


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in re.split(r"[│┃|]", line.strip().strip("│┃|"))]


def _missing(shown: list[str], printed: str) -> list[str]:
    """The shown lines the output does not hold, in order: a table row (│) as its cells, the first ones of a printed
    row (a row cut with "..." in its last cell); header (┃) and border lines skipped; any other line as its words,
    found in the printed text with its wrapping undone (a terminal's width moves the line breaks)."""
    rows = [_cells(line) for line in printed.splitlines() if line.lstrip().startswith("│")]
    text = " ".join(line.strip() for line in printed.splitlines() if not line.lstrip().startswith(("│", "┃")))
    text = _words(text)
    missing, row_at, text_at = [], 0, 0
    for line in shown:
        stripped = line.strip()
        if stripped.startswith(("┃", "┏", "┡", "├", "└", "━", "─")):
            continue
        if stripped.startswith("│"):
            want = _cells(stripped)
            want = want[:-1] if want[-1] in ("...", "…", "") else want
            hits = [i for i in range(row_at, len(rows)) if rows[i][: len(want)] == want]
            if not hits:
                missing.append(line)
            row_at = hits[0] + 1 if hits else row_at
            continue
        words = _words(CUT.sub("", stripped))
        at = text.find(words, text_at)
        if at < 0:
            missing.append(line)
        text_at = at + len(words) if at >= 0 else text_at
    return missing


def test_the_docs_show_output():
    assert len(EXAMPLES) >= 10 and {x[2].split()[2] for x in EXAMPLES} >= {"estimate", "plan", "verify", "formula"}


@pytest.mark.parametrize("page,number,line,shown,recorded", EXAMPLES, ids=[f"{x[0]}:{x[1]}" for x in EXAMPLES])
def test_shown_output_is_printed_or_recorded(page, number, line, shown, recorded, monkeypatch):
    """An example a user can run here prints what its page shows, line for line to the printed precision; one that
    compiles with XLA (or searches for minutes) names the existing commit it was recorded at."""
    command = re.split(r"\s+(?:#|&&|\|)\s*|\s{2,}\(", line.removeprefix("$ "))[0]
    argv = shlex.split(command)[1:]
    if argv[0] not in SHOWN_RUN or recorded:
        assert recorded, f"{page}:{number}: {argv[0]} is not run by this test: add `# recorded at COMMIT` to the block"
        known = subprocess.run(
            ["git", "cat-file", "-e", f"{recorded}^{{commit}}"], cwd=ROOT, capture_output=True, check=False
        )
        assert known.returncode == 0 or not (ROOT / ".git").exists(), f"{page}:{number}: no commit {recorded}"
        return
    monkeypatch.delenv("COLUMNS", raising=False)  # a pipe's width: each command's own minimum, as the pages show
    monkeypatch.setenv("MEM4D_NO_COLOR", "1")
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        main(argv)
    missing = _missing(shown, out.getvalue())
    assert not missing, (
        f"{page}:{number}: `{command}` no longer prints:\n" + "\n".join(missing) + "\n--- it prints:\n" + out.getvalue()
    )


def _plan_405b() -> dict[str, str]:
    """docs/plan.md's figures of `mem4d plan --model llama3.1-405b --gpus 16384 --seq 8192 --gbs 2048` (every row
    evaluated, as --all does), keyed by what each says."""
    r = _search("llama3.1-405b", 16384, 8192, 2048)
    rows, rank = r.rows, {int(i): n for n, i in enumerate(r.order, 1)}
    pp16 = [int(i) for i in r.order if rows["p"][i] == 16]
    paper = [int(i) for i in r.order if (rows["d"][i], rows["t"][i], rows["p"][i], rows["c"][i]) == (128, 8, 16, 1)]
    first = r.config(pp16[0])
    c = first["config"]
    split = c["stage_layers"]
    return {
        "counts": f"finds {r.feasible:,} of {r.valid:,} configurations under 64 GiB, {len(pp16):,} of them with "
        f"pp = 16",
        "first pp16": f"(the first at rank {rank[pp16[0]]}: dp {c['dp']}, tp {c['tp']}, cp {c['cp']}, "
        f"vpp {c['vpp']}, "
        f"{c['recompute']} {c.get('recompute_modules', '')}, ZeRO-{c['zero']}, "
        f"{split[0]},{split[1]},…,{split[-1]} at "
        f"{first['peak_bytes'] / 2**30:.2f} GiB)",
        "paper": f"fits in {len(paper)} rows; the proxy ranks it low (rank {rank[paper[0]]:,} at best)",
        "section": f"it finds {r.feasible:,} of {r.valid:,} configurations, pp = 16 among them",
    }


def test_plan_md_figures_are_the_search_s():
    """The 405B plan figures docs/plan.md quotes in prose: the same search as `mem4d plan --all`, rerun."""
    page = " ".join((ROOT / "docs" / "plan.md").read_text().split())
    missing = {key: text for key, text in _plan_405b().items() if text not in page}
    assert not missing, f"docs/plan.md no longer shows what the search finds: {missing}"


@functools.cache
def _search(model: str, gpus: int, s: int, gbs: int):
    from symbolic.config.hfconfig import resolve_model
    from symbolic.plan.enumerate import Cluster
    from symbolic.plan.search import search

    return search(Cluster(resolve_model(model), gpus=gpus, s=s, gbs=gbs), 0.8 * 80 * 2**30)


@pytest.mark.parametrize("model,gpus,s,gbs", [("llama3.1-405b", 16384, 8192, 2048), ("llama3-70b", 512, 8192, 1024)])
def test_benchmarks_md_plan_counts_are_the_search_s(model, gpus, s, gbs):
    """docs/benchmarks.md's re-measured plan counts (what bench_plan.py prints of the same search)."""
    r = _search(model, gpus, s, gbs)
    page = " ".join((ROOT / "docs" / "benchmarks.md").read_text().split())
    want = f"{r.valid:,} configurations ({r.evaluated:,} evaluated"
    assert want in page and f"{r.feasible:,} fit" in page, f"docs/benchmarks.md: {want}, {r.feasible:,} fit"


def test_comparison_md_mem4d_rows_are_what_peers_py_prints():
    """docs/comparison.md's table: each mem4d row (case, states, activations, total) is a row benchmarks/peers.py
    prints now (the seconds are a clock); the other tools' rows are recorded at the commit the page names."""
    page = (ROOT / "docs" / "comparison.md").read_text()
    shown = [line for line in page.splitlines() if "  mem4d  " in line]
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "peers.py")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    printed = {line[:100] for line in done.stdout.splitlines() if "  mem4d  " in line}
    assert len(shown) == 3 and {line[:100] for line in shown} <= printed, (shown, done.stdout, done.stderr)
