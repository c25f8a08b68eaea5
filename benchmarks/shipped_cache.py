"""Build or check symbolic/estimator/shipped.zip: the derivations `mem4d plan` needs for every built-in model and every
config.json in grids/models/published, under its default recipe and flags, shipped so that a user's first plan
does not wait for sympy.

    python benchmarks/shipped_cache.py build   # regenerate (what is still current is reused; from nothing: 12 min)
    python benchmarks/shipped_cache.py check   # exit 1 naming the entries whose content key is no longer current
                                               # (--quick: one entry of each group of sources, see stale())

Each entry is a cache file under its cache name (codegen.cache_name: the content key of the sources it was derived
from, the sympy version included), so an entry gone stale is never read (no lookup asks for its name); `check`
(tests/test_shipped_cache.py) recomputes every key from the manifest and fails on a formula edited since the build.
Each model's plan runs in-process at 64 and 4,096 GPUs (p and t of every power-of-two cluster up to that), on a cache
holding only the current archive's files, with the archive itself turned off, and records every cache file it asks
for: those make the new archive (an entry no plan asks for any more is dropped).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import zipfile
from contextlib import redirect_stdout
from dataclasses import asdict
from io import StringIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from symbolic.estimator import codegen, shipped  # noqa: E402

PUBLISHED = ROOT / "grids" / "models" / "published"
GPUS = (64, 4096)
SEQS = (4096, 2048, 1024)  # the first the model takes (GPT-2: 1,024 positions)


def models() -> list[str]:
    """Every built-in model's name and every published config.json's path (relative to the repository)."""
    from symbolic.config.shapes import PRESETS

    return sorted(PRESETS) + [str(p.relative_to(ROOT)) for p in sorted(PUBLISHED.glob("*.json"))]


def plan_argv(model: str, gpus: int, seq: int) -> list[str]:
    return ["plan", "--model", model, *f"--gpus {gpus} --seq {seq} --gbs {max(gpus, 1024)} --top 1 --json".split()]


def _plan(model: str, gpus: int) -> int:
    """plan at the first sequence length the model takes (a vision model's language model alone, --text-only, where
    its vision tower is refused); its exit code."""
    from symbolic.cli.entry import main

    for extra in ([], ["--text-only"]):
        for seq in SEQS:
            with redirect_stdout(StringIO()):
                rc = main(plan_argv(model, gpus, seq) + extra)
            if rc != 2:
                return rc
    return rc


def build() -> int:
    """Plan every model from an empty cache, recording the cache files asked for; write them and the manifest."""
    os.environ["MEM4D_NO_SHIPPED"] = "1"
    entries: dict[str, dict] = {}
    original = codegen.cached

    def recording(profile, switches, build, kind="", sources=(), extra=""):
        name = codegen.cache_name(profile, switches, kind, sources, extra)
        entries[name] = {
            "name": name,
            "profile": profile,
            "switches": asdict(switches),
            "kind": kind,
            "sources": [str(Path(p).resolve().relative_to(ROOT)) for p in sources],
            "extra": extra,
        }
        return original(profile, switches, build, kind, sources, extra)

    codegen.cached = recording
    with tempfile.TemporaryDirectory() as cache:
        os.environ["MEM4D_CACHE_DIR"] = cache
        if shipped.ARCHIVE.exists():  # the entries still current are found, not derived again; stale ones never asked
            with zipfile.ZipFile(shipped.ARCHIVE) as archive:
                archive.extractall(cache, [n for n in archive.namelist() if n != shipped.MANIFEST])
        for model in models():
            start = time.perf_counter()
            codes = [_plan(model, gpus) for gpus in GPUS]
            print(f"{model}: exit {codes}, {len(entries)} entries, {time.perf_counter() - start:.1f} s", flush=True)
        tmp = shipped.ARCHIVE.with_suffix(".tmp")
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
            for name in sorted(entries):
                archive.write(Path(cache) / name, name)
            archive.writestr(shipped.MANIFEST, json.dumps(sorted(entries.values(), key=lambda e: e["name"]), indent=0))
        os.replace(tmp, shipped.ARCHIVE)
    print(f"{shipped.ARCHIVE.relative_to(ROOT)}: {len(entries)} entries, {shipped.ARCHIVE.stat().st_size:,} bytes")
    return 0


def stale(every: bool = True) -> list[str]:
    """The manifest's entries whose name no longer matches the content key of their sources (or that are missing).
    Not `every`: one entry of each (profile, sources) group, what a test affords (10 ms a key): the entries of a group
    hash the same files after their own switches, so an edit of any of them changes every key of the group at once,
    and what keys the switches (config/switches.py, codegen.py) is among those files."""
    with zipfile.ZipFile(shipped.ARCHIVE) as archive:
        manifest = json.loads(archive.read(shipped.MANIFEST))
        present = set(archive.namelist())
    if not every:
        groups = {(entry["profile"], tuple(entry["sources"])): entry for entry in manifest}
        manifest = [*groups.values()] + [entry for entry in manifest if entry["name"] not in present]
    out = []
    for entry in manifest:
        key = codegen.key_of(entry["profile"], entry["switches"], [ROOT / p for p in entry["sources"]])
        if not entry["name"].endswith(f"-{key}.json") or entry["name"] not in present:
            out.append(entry["name"])
    return out


def check(every: bool = True) -> int:
    bad = stale(every)
    for name in bad:
        print(f"stale: {name}")
    print(f"{len(bad)} stale entries" + (": run `python benchmarks/shipped_cache.py build`" if bad else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command not in ("build", "check") or sys.argv[2:] not in ([], ["--quick"]):
        sys.exit("usage: python benchmarks/shipped_cache.py build|check [--quick: one entry of each group of sources]")
    sys.exit(build() if command == "build" else check("--quick" not in sys.argv))
