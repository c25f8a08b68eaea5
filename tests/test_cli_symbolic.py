"""`mem4d formula / estimate / latex` through a subprocess, as a user runs them.

Sources of truth: the issue's CLI contract (JSON schema, exit status 2 with one line on bad input, no traceback)
and pdflatex itself for the LaTeX report (skipped when pdflatex is not installed).
"""

import json
import shutil
import subprocess
import sys

import pytest

from test_report import pdflatex

DONE_WHEN = "--model llama3-70b --dp 8 --tp 8 --pp 4 --cp 2 --seq 8192 --mbs 1 --gbs 1024".split()


def mem4d(*args: str, cwd=None) -> subprocess.CompletedProcess:
    exe = shutil.which("mem4d")
    cmd = [exe] if exe else [sys.executable, "-m", "symbolic.cli"]
    return subprocess.run(cmd + list(args), capture_output=True, text=True, cwd=cwd, timeout=120)


def test_estimate_without_arguments_uses_the_default_model():
    out = mem4d("estimate")
    assert out.returncode == 0, out.stderr
    assert "llama3-8b" in out.stdout and "total" in out.stdout and "FIT" in out.stdout


def test_estimate_done_when_configuration_json():
    out = mem4d("estimate", *DONE_WHEN, "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["model"] == "llama3-70b" and report["profile"] == "paper"
    assert report["config"]["m"] == 128 and report["gpu_mem_bytes"] == 80 * 2**30
    assert report["bytes"]["total"] == sum(x for n, x in report["bytes"].items() if n != "total")
    assert [s["stage"] for s in report["stages"]] == ["first", "middle", "last"]
    assert isinstance(report["fits"], bool)


def test_estimate_table_and_overrides():
    out = mem4d("estimate", *DONE_WHEN, "--overhead", "cuda_context=1GiB", "--gpu-mem", "141GB")
    assert out.returncode == 0, out.stderr
    assert "cuda_context" in out.stdout and "first (rank 0)" in out.stdout and "last (rank 3)" in out.stdout
    no_overheads = json.loads(mem4d("estimate", *DONE_WHEN, "--no-overheads", "--json").stdout)
    assert "communicators" not in no_overheads["bytes"]


def test_formula_prints_components():
    out = mem4d("formula", "total", "--json", "--no-overheads")
    assert out.returncode == 0, out.stderr
    formulas = json.loads(out.stdout)["formulas"]
    assert [x["name"] for x in formulas] == ["total"] and "n_0" in formulas[0]["text"]
    table = mem4d("formula", "weights")
    assert table.returncode == 0 and "B_w" in table.stdout


BAD = {
    "tp not dividing heads": (["--tp", "3", "--seq", "3072"], "heads"),
    "tp not dividing KV heads": (["--tp", "16"], "KV heads"),
    "pp not dividing layers": (["--pp", "3"], "layers"),
    "pp x vpp not dividing layers": (["--pp", "4", "--vpp", "3", "--gbs", "8"], "layers"),
    "gbs vs mbs x dp": (["--dp", "2", "--gbs", "3"], "gbs"),
    "seq vs 2 cp": (["--cp", "2", "--seq", "4098"], "context parallel"),
    "seq vs tp with SP": (["--tp", "8", "--seq", "4100"], "sequence parallel"),
    "zero size": (["--dp", "0"], "positive"),
    "negative size": (["--mbs", "-2"], "positive"),
    "unknown preset": (["--model", "llama9"], "llama3-8b"),
    "unparseable gpu memory": (["--gpu-mem", "lots"], "memory size"),
    "bad threshold": (["--threshold", "1.5"], "threshold"),
    "unknown override": (["--overhead", "warp_drive=1GiB"], "cannot override"),
    "unknown profile": (["--profile", "nope"], "profile"),
    "bad recompute": (["--recompute", "some"], "recompute"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_one_line_and_exit_2(case):
    args, needle = BAD[case]
    out = mem4d("estimate", *args)
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert needle in out.stderr


@pytest.mark.parametrize(
    "content, needle",
    [
        (None, "no such file"),
        ("{not json", "malformed"),
        ('{"model_type": "kimi_k2", "hidden_size": 64}', "missing key"),
    ],
)
def test_bad_config_json_names_the_file_and_key(tmp_path, content, needle):
    path = tmp_path / "config.json"
    if content is not None:
        path.write_text(content)
    out = mem4d("estimate", "--model", str(path))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and str(path) in out.stderr and needle in out.stderr


def test_formula_and_latex_bad_input():
    for args in (["formula", "nope"], ["latex", "--tp", "3"], ["formula", "--profile", "x"]):
        out = mem4d(*args)
        assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


def test_latex_report_compiles(tmp_path):
    out = mem4d("latex", "-o", "r.tex", *DONE_WHEN, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    tex = (tmp_path / "r.tex").read_text()
    assert r"\begin{document}" in tex and "llama3-70b" in tex and "embedding" in tex
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex not installed (apt-get install texlive-latex-base)")
    run = pdflatex(tmp_path, 120)
    assert run.returncode == 0, run.stdout[-2000:]
    assert (tmp_path / "r.pdf").stat().st_size > 1000
