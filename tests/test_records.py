"""The evaluation records' room: records/README.md is what `python -m jaxcheck.crosscheck.records` makes of the
records (grid, target, profile commit, compiled, median and max |error| of each file), no figure is committed, and no
folder or file is named after a commit (the commit is inside each record, its "code").

Source of truth: the files under records/ and jaxcheck.crosscheck.report.summarize. Exact: text equality."""

import re
import subprocess
from pathlib import Path

from jaxcheck.crosscheck import records

ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_is_the_commands_output():
    assert (records.RECORDS / "README.md").read_text() == records.readme(), (
        "records/README.md is stale: run `python -m jaxcheck.crosscheck.records --write`"
    )


def test_every_record_file_has_a_row_with_its_figures():
    text = records.readme()
    sweeps = [path for path, rows in records.files() if records.is_sweep(rows)]
    assert len(sweeps) >= 80
    for path in sweeps:
        name = path.relative_to(records.RECORDS).as_posix()
        line = next(line for line in text.splitlines() if line.startswith(f"| [{name}]"))
        assert re.search(r"\| \d+ of \d+ \| (\d+\.\d\d %|-) \| (\d+\.\d\d %|-) \|$", line), line


def test_the_first_holdout_row_is_what_docs_accuracy_quotes():
    """docs/accuracy.md's first evaluation at 2e81ea2 on the H100 target: 33 of 34, median 0.65 %, max 14.29 %."""
    line = next(x for x in records.readme().splitlines() if x.startswith("| [earlier/holdout-first-h100-80gb.jsonl]"))
    assert line.endswith("| grids/holdout.toml | h100-80gb | 2e81ea2 | 33 of 34 | 0.65 % | 14.29 % |"), line


def test_no_figure_and_no_commit_in_a_name():
    listed = subprocess.run(["git", "ls-files", "records"], cwd=ROOT, capture_output=True, text=True, check=False)
    tracked = listed.stdout.split()
    if not tracked:  # not a git checkout: the files on disk
        tracked = [p.relative_to(ROOT).as_posix() for p in records.RECORDS.rglob("*") if p.is_file()]
    assert not [p for p in tracked if p.endswith(".png")], "figures are drawn on demand (--figures), not committed"
    named = [p for p in tracked if re.search(r"(^|[-/])[0-9a-f]{7}([-/.]|$)", p.removeprefix("records/golden/"))]
    assert not named, named


def test_figures_are_drawn_on_demand(tmp_path):
    made = records.figures(tmp_path, ["kimi-k2-pp8-h100-80gb"])
    assert [p.name for p in made] == ["kimi-k2-pp8-h100-80gb.scatter.png", "kimi-k2-pp8-h100-80gb.components.png"]
    assert all(p.stat().st_size > 1000 for p in made)
