"""The shipped derivations (symbolic/estimator/shipped.zip): every entry current, a user's first plan of a built-in model
derives nothing, and a derivation a terminal waits for is announced once.

Source of truth: the content key (codegen.cache_key: the sources, sympy's version, profile and switches) recomputed
from this checkout; an entry whose key no longer matches is one a formula change made stale, which the key already
keeps from being read; this test makes the release regenerate it (`python benchmarks/shipped_cache.py build`).
"""

import io
import shutil
import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from symbolic.estimator import shipped

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import shipped_cache  # noqa: E402


def test_every_shipped_entry_is_current():
    if not shipped.ARCHIVE.exists():
        pytest.fail(f"{shipped.ARCHIVE} is missing: run `python benchmarks/shipped_cache.py build`")
    stale = shipped_cache.stale(every=False)  # one key per group of sources: see stale()
    assert not stale, (
        f"{len(stale)} shipped derivations are stale (a formula changed since they were built), e.g. "
        f"{stale[0]}: run `python benchmarks/shipped_cache.py build`"
    )


def test_the_archive_covers_every_model_shipped_cache_plans():
    """Each built-in model and published config.json has entries (the build planned it without a refusal)."""
    with zipfile.ZipFile(shipped.ARCHIVE) as archive:
        manifest = json.loads(archive.read(shipped.MANIFEST))
        names = set(archive.namelist())
    assert {entry["name"] for entry in manifest} | {shipped.MANIFEST} == names
    assert {entry["profile"] for entry in manifest} >= {"paper", "time"}


def test_a_first_plan_reads_the_archive_and_imports_no_sympy(tmp_path):
    """An empty cache dir: plan of a built-in model finds every formula in the archive (sympy, which any derivation
    imports, stays unimported) and writes nothing to the cache dir."""
    code = (
        "import sys; from symbolic.cli import main; rc = main(['plan', '--model', 'llama3-8b', '--gpus', '8', "
        "'--seq', '4096', '--gbs', '1024', '--top', '1', '--json']); assert 'sympy' not in sys.modules; "
        "sys.exit(rc)"
    )
    env = {**os.environ, "MEM4D_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("MEM4D_NO_SHIPPED", None)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["configs"]
    assert not (tmp_path / "cache").exists() or not list((tmp_path / "cache").iterdir())


def test_a_name_the_archive_lacks_is_none():
    """A stale entry is one whose name no lookup asks for: lookup answers None for any name not in the archive."""
    assert shipped.lookup("paper-0-0-deadbeefdeadbeefdeadbeef.json") is None
    assert shipped.lookup(shipped.MANIFEST) is None


def test_a_long_derivation_is_announced_once_on_a_terminal(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(shipped, "_is_terminal", lambda: True)
    notice = shipped._Notice(threshold=0.05)
    for _ in range(3):
        started = notice.start(Path("/tmp/cache"))
        time.sleep(0.1)
        notice.stop(started)
    said = err.getvalue()  # one notice, wrapped at the terminal's width (a line or two)
    assert said.count("mem4d: deriving") == 1 and "deriving the memory formulas" in said and said.endswith("\n")
    assert max(map(len, said.splitlines())) <= max(40, shutil.get_terminal_size().columns)
    quiet = shipped._Notice(threshold=5.0)
    quiet.stop(quiet.start(Path("/tmp/cache")))
    monkeypatch.setattr(shipped, "_is_terminal", lambda: False)
    piped = shipped._Notice(threshold=0.0)
    started = piped.start(Path("/tmp/cache"))
    time.sleep(0.05)
    piped.stop(started)
    assert err.getvalue() == said  # neither the short one nor one off a terminal said anything
