"""What a release derives, shipped with the package (shipped.zip: cache files by their cache names), and the line a
terminal shows while a derivation not in any cache runs.

The archive holds files exactly as the on-disk cache holds them, under the same names (kind, profile, switches and
the content key of the sources, codegen.cache_key): an entry whose sources changed since it was built has a name no
lookup asks for, so it is never used (benchmarks/shipped_cache.py builds the archive; tests/test_shipped_cache.py
fails when an entry's key is no longer current)."""

from __future__ import annotations

import functools
import json
import os
import sys
import threading
import time
import zipfile
from pathlib import Path

ARCHIVE = Path(__file__).resolve().parent / "shipped.zip"
MANIFEST = "MANIFEST.json"  # the archive's list of entries with what keys them (profile, switches, sources, extra)


@functools.lru_cache(maxsize=1)
def _archive() -> zipfile.ZipFile | None:
    """The shipped archive, opened once; None where it is absent, unreadable or turned off (MEM4D_NO_SHIPPED=1,
    what a benchmark of cold derivations sets)."""
    if os.environ.get("MEM4D_NO_SHIPPED") == "1":
        return None
    try:
        return zipfile.ZipFile(ARCHIVE)
    except (OSError, zipfile.BadZipFile):
        return None


def lookup(name: str) -> dict | None:
    """The shipped cache file `name` (a cache file's name: tag and content key), or None."""
    archive = _archive()
    if archive is None or name == MANIFEST:
        return None
    try:
        return json.loads(archive.read(name))
    except (KeyError, OSError, ValueError, zipfile.BadZipFile):
        return None


class _Notice:
    """Once derivations not found in any cache have taken `threshold` seconds in all, one line on stderr when it is a
    terminal, saying what is happening and that it happens once (a timer, so a long derivation is announced while it
    runs)."""

    def __init__(self, threshold: float = 1.0):
        self.threshold, self.spent, self.said, self.timer = threshold, 0.0, False, None

    def _say(self, where: Path) -> None:
        self.said = True
        try:
            import shutil
            import textwrap

            text = (
                f"mem4d: deriving the memory formulas of these settings with sympy (once: later runs read them "
                f"from {where})..."
            )  # wrapped at the terminal's width (an 80-column terminal cut it)
            print(
                textwrap.fill(
                    text,
                    width=max(40, shutil.get_terminal_size().columns),
                    break_long_words=False,
                    break_on_hyphens=False,
                ),
                file=sys.stderr,
                flush=True,
            )
        except (OSError, ValueError, AttributeError):
            pass

    def start(self, where: Path) -> float:
        if not self.said and self.timer is None and _is_terminal():
            self.timer = threading.Timer(max(0.0, self.threshold - self.spent), self._say, (where,))
            self.timer.daemon = True
            self.timer.start()
        return time.perf_counter()

    def stop(self, started: float) -> None:
        self.spent += time.perf_counter() - started
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


def _is_terminal() -> bool:
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (OSError, ValueError, AttributeError):
        return False


NOTICE = _Notice()
