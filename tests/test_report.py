"""`mem4d report` and its LaTeX pieces, as a reader and a user meet them.

Sources of truth: pdflatex itself (the document compiles and no line is wider than the text: no "Overfull \\hbox" in
its log), the issue's CLI contract (bad input: one line, exit 2, before any file is written), and exact string checks
of the escaping rules.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import sympy as sp

from symbolic.config.switches import Switches
from symbolic.recipes.megatron import profile as paper
from symbolic.render.tex import LINE, display, escape, inline, prose, visible

ROOT = Path(__file__).resolve().parents[1]
RESULTS = next(iter(sorted((ROOT / "records").glob("*.jsonl"))), None)  # any `mem4d sweep` records of the repo
CONFIG = ["--model", "llama3-70b", "--dp", "8", "--tp", "8", "--pp", "4", "--cp", "2", "--seq", "8192", "--gbs", "1024"]
HAS_PDFLATEX = shutil.which("pdflatex") is not None


def mem4d(*args: str, cwd, env=None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "symbolic.cli", "report", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


def pdflatex(folder: Path, seconds: int) -> subprocess.CompletedProcess:
    """pdflatex on folder/r.tex, stopping at the first error."""
    argv = ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "r.tex"]
    return subprocess.run(argv, cwd=folder, capture_output=True, text=True, timeout=seconds)


def test_escape_prints_every_special_character_as_itself():
    assert escape("~0.5 GiB") == r"$\sim$0.5 GiB"  # never a non-breaking space
    assert escape("5 % of a_b & $x #1 {y} ^z") == r"5 \% of a\_b \& \$x \#1 \{y\} \textasciicircum{}z"
    assert escape("--explain") == "-{}-explain"  # no en dash


def test_prose_sets_the_glossarys_letters_as_math():
    assert prose("B_w bytes per parameter") == "$B_{w}$ bytes per parameter"
    assert prose("sharded over the d*c ranks") == "sharded over the $d c$ ranks"
    assert prose("all m + p - 1 iterations, [m + p - 1, L/p, ...]") == (
        r"all $m + p - 1$ iterations, $[ m + p - 1, L / p, \ldots ]$"
    )
    assert prose("a layer's s x s scores") == r"a layer's $s \times s$ scores"  # "a" and "'s" stay prose
    assert prose("(matrices over t, layers over p)") == "(matrices over $t$, layers over $p$)"


def test_long_expressions_are_broken_at_top_level_sums_not_shrunk():
    """The fragmentation component is the longest paper formula (sympy's LaTeX is over 500 characters)."""
    frag = next(part for part in paper.components(Switches()) if part.name == "fragmentation")
    assert visible(sp.latex(frag.expr)) > 2 * LINE
    block = display(r"\mathrm{fragmentation}", frag.expr)
    rows = block.split("\n")[1:-2]
    assert len(rows) >= 3 and "resizebox" not in block
    assert all(visible(row.split("&", 1)[1]) <= LINE for row in rows)


def test_inline_expressions_use_slashes_not_nested_fractions():
    from symbolic.config.symbols import a, h, k, t

    assert inline(2 * h**2 * (1 + k / a) / t) == "$2 h^2 ( 1 + k / a ) / t$"


def _overfull(log: str) -> list[str]:
    """Overfull boxes wider than 1pt (anything cut off or sticking into the margin)."""
    return [
        m.group(0)
        for m in re.finditer(r"Overfull \\hbox \(([\d.]+)pt too wide\)[^\n]*", log)
        if float(m.group(1)) > 1.0
    ]


PLAN_FROM = ["--plan", "--gpus", "512"] + (["--from", str(RESULTS)] if RESULTS else [])
JAX = "--profile jax --model llama3-8b --dp 2 --tp 2 --pp 2 --cp 2 --seq 1024 --gbs 8 --recompute none".split()


@pytest.fixture(scope="module")
def plan_report(tmp_path_factory):
    """`mem4d report -o r.tex` of CONFIG with its plan and the sweep records' figures, through the entry point in a
    fresh interpreter that then names the heavy modules it imported: (its folder, its exit status and the modules,
    its --json). One report run for the two tests that read it (each takes seconds)."""
    cwd = tmp_path_factory.mktemp("plan-report")
    code = (
        "import sys; from symbolic.cli.entry import main; "
        f"rc = main(['report', '-o', 'r.tex', *{CONFIG + PLAN_FROM!r}, '--json']); "
        "print(rc, sorted(m for m in ('jax', 'jaxlib', 'flax') if m in sys.modules))"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"},
    )
    *written, last = run.stdout.strip().splitlines() or [""]
    return cwd, last, run.stderr, json.loads("\n".join(written) or "null")


def _compiles_without_overfull_lines(folder: Path, extra: list[str]) -> None:
    """r.tex's figures exist (one per section that draws), no shrinking, and pdflatex builds it twice without an
    overfull line."""
    tex = (folder / "r.tex").read_text()
    figures = re.findall(r"\\includegraphics\[[^]]*\]\{([^}]*)\}", tex)
    assert figures and all((folder / f).is_file() for f in figures)
    assert len(figures) == 1 + ("--plan" in extra) + 2 * ("--from" in extra)
    assert "resizebox" not in tex and "~" not in tex.replace(r"\textasciitilde", "")
    if not HAS_PDFLATEX:
        pytest.skip("pdflatex not installed (apt-get install texlive-latex-base)")
    for _ in range(2):
        run = pdflatex(folder, 180)
        assert run.returncode == 0, run.stdout[-2000:]
    assert _overfull((folder / "r.log").read_text(errors="replace")) == []


def test_plan_report_compiles_without_overfull_lines(plan_report):
    cwd, last, err, _ = plan_report
    assert last.split()[:1] == ["0"], err
    _compiles_without_overfull_lines(cwd, CONFIG + PLAN_FROM)


def test_jax_profile_report_compiles_without_overfull_lines(tmp_path):
    out = mem4d("-o", "r.tex", *JAX, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    _compiles_without_overfull_lines(tmp_path, JAX)


def test_a_long_stage_split_is_a_line_of_its_own():
    """--stage-layers of 16 stages in the configuration table stuck 68 pt into the margin (DeepSeek-V3.2 on pp 16):
    a list is written below the table, where it can break."""
    from symbolic.config.shapes import PRESETS
    from symbolic.config.training import Training
    from symbolic.estimator.estimate import estimate
    from symbolic.render.report import _config

    split = (6,) + (8,) * 15  # llama3.1-405b's 126 layers on 16 stages
    lines = _config(
        estimate(PRESETS["llama3.1-405b"], Training(d=2, p=16, s=1024, gbs=32, stage_layers=split)), 80 * 2**30, 0.8
    )
    end = lines.index(r"\end{tabular}")
    assert not any("stage" in line for line in lines[:end])
    assert lines[end + 1] == r"\par\noindent\texttt{stage\_layers}: " + ", ".join(map(str, split))


@pytest.mark.skipif(not HAS_PDFLATEX, reason="pdflatex not installed (apt-get install texlive-latex-base)")
def test_default_report_is_a_pdf(tmp_path):
    """From a clean start, `mem4d report` writes report.pdf and nothing else."""
    out = mem4d(cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.pdf"]
    assert (tmp_path / "report.pdf").read_bytes()[:5] == b"%PDF-"


def test_without_pdflatex_it_writes_the_source_and_says_how_to_build(tmp_path):
    bare = tmp_path / "bin"
    bare.mkdir()
    os.symlink(sys.executable, bare / "python")
    out = mem4d("-o", "x.pdf", cwd=tmp_path, env={"PATH": str(bare)})
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "pdflatex" in out.stderr and "x.tex" in out.stderr
    assert (tmp_path / "x.tex").is_file() and (tmp_path / "x-figures" / "stages.pdf").is_file()


@pytest.mark.parametrize(
    "args",
    [
        ["-o", "r.txt"],
        ["-o", "missing/r.pdf"],
        ["--from", "nope.jsonl"],
        ["--from", "bad.jsonl"],
        ["--plan"],
        ["--tp", "3"],
        ["--profile", "x"],
        ["--threshold", "2"],
    ],
)
def test_bad_input_is_one_line_before_any_file(tmp_path, args):
    (tmp_path / "bad.jsonl").write_text("{not json\n")
    out = mem4d(*args, cwd=tmp_path)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "Traceback" not in out.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]


@pytest.mark.skipif(RESULTS is None, reason="no sweep records in records/")
def test_report_imports_no_jax_and_its_json_names_what_was_written(plan_report):
    """The cross-check figure reads sweep records; the command stays on the symbolic side. Its --json names the
    source and every figure it wrote."""
    cwd, last, err, written = plan_report
    assert last.split() == ["0", "[]"], err
    assert written["tex"] == "r.tex" and written["figures"]
    assert all(Path(cwd, f).is_file() for f in written["figures"])


def test_the_plan_section_counts_what_plan_counts():
    """`mem4d report --plan` (plan.search, every row) and `mem4d plan --top` (plan.best, rows until the K best are
    certain) name the same number of configurations for one cluster: the rows the rules allow, balanced splits the
    even row stands for included (search keeps fewer rows: 6,593 of 8,920 here, so a count of kept rows differs)."""
    from symbolic.config.shapes import PRESETS
    from symbolic.plan.best import best
    from symbolic.plan.enumerate import Cluster
    from symbolic.plan.search import search
    from symbolic.render.sections import plan

    cluster, limit = Cluster(PRESETS["llama3-8b"], gpus=8, s=4096, gbs=32), 64 * 2**30
    every, top = search(cluster, limit), best(cluster, limit, 3)
    assert every.valid == top.valid and every.evaluated < every.valid
    assert f"ZeRO stage: {top.valid:,} configurations" in " ".join(plan(every, 80 * 2**30, 0.8, None))


def test_an_moe_plan_is_read_by_expert_parallelism():
    """For a model with experts the report's plan table has ep and etp columns, its heat map's axes are (ep, pp) at
    the best configuration's tp and cp (plan.plot.axes), each cell the lowest peak of the rows there (source of
    truth: the rows themselves, exact), and the caption says so; a dense model keeps (tp, pp)."""
    import numpy as np

    from symbolic.config.shapes import PRESETS
    from symbolic.plan.enumerate import Cluster
    from symbolic.plan.plot import axes, grid
    from symbolic.plan.search import search
    from symbolic.render.sections import plan

    result = search(Cluster(PRESETS["tiny-moe"], gpus=8, s=512, gbs=16), 64 * 2**30, zero=(1,))
    best = result.config(int(result.order[0]))["config"]
    x, _, held, _ = axes(result, best)
    assert x == "e" and held == {"t": best["tp"]}
    eps, pps, peak = grid(result, best["cp"], x, held)
    r = result.rows
    for (pi, ei), value in np.ndenumerate(peak):
        at = (r["e"] == eps[ei]) & (r["p"] == pps[pi]) & (r["t"] == best["tp"]) & (r["c"] == best["cp"])
        assert (np.isnan(value) and not at.any()) or value == r["peak"][at].min()
    text = " ".join(plan(result, 80 * 2**30, 0.8, "plan.pdf"))
    assert "(ep, pp) at the best configuration's tp and cp" in text and "& ep & etp &" in text
    dense = search(Cluster(PRESETS["llama3-8b"], gpus=8, s=4096, gbs=32), 64 * 2**30, zero=(1,))
    assert axes(dense, dense.config(int(dense.order[0]))["config"])[0] == "t"
