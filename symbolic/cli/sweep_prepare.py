"""A sweep's preparation, on a terminal not silent and never deaf to Ctrl-C: the grid's count said up front, then one
progress line (four updates a second) while its configurations are expanded and checked, which takes minutes for
millions."""

from __future__ import annotations

import gc
import sys
import threading
import time
import tomllib
from math import prod
from pathlib import Path
from typing import Callable, TypeVar

CHUNK = 2000  # configurations checked between two looks at the progress counter
TICK = 0.25  # seconds between two updates of the progress line
T = TypeVar("T")


def count(grid: str) -> int | None:
    """How many configurations the grid file lists before duplicates are dropped: the product of its [grid] lists'
    lengths, plus its [[case]] tables; None where the file is not a grid parse_grid takes (it says why)."""
    try:
        doc = tomllib.loads(Path(grid).read_text(encoding="utf-8"))
        lists = doc.get("grid", {})
        cases = doc.get("case", [])
        return (prod(len(v) for v in lists.values()) if lists else 0) + len(cases)
    except (OSError, ValueError, TypeError, AttributeError):
        return None


class Line:
    """The progress line on stderr when it is a terminal, rewritten in place at each tick; nothing otherwise."""

    def __init__(self, on: bool):
        self.on, self.text, self.done, self.total = on, "", 0, 0
        self.start, self.cancelled, self.shown = time.monotonic(), False, False

    def say(self, line: str) -> None:
        """A line of its own (the count)."""
        if self.on:
            self._write(f"{line}\n")

    def phase(self, text: str, total: int = 0) -> None:
        self.text, self.done, self.total = text, 0, total

    def tick(self) -> None:
        if self.on and self.text:
            of = f" {self.done:,} of {self.total:,}" if self.total else ""
            self._write(f"\r\x1b[K{self.text}{of} ({time.monotonic() - self.start:.0f} s)")
            self.shown = True

    def close(self) -> None:
        """Clear the progress line (idempotent)."""
        if self.shown:
            self._write("\r\x1b[K")
            self.shown = False

    @staticmethod
    def _write(text: str) -> None:
        try:
            sys.stderr.write(text)
            sys.stderr.flush()
        except (OSError, ValueError, AttributeError):
            pass


def prepared(work: Callable[[Line], T], line: Line) -> T:
    """work(line) in a daemon thread while this thread ticks the progress line and stays interruptible: on Ctrl-C
    the interrupt is raised here at once, the work is left to the process's exit (os._exit) instead of being
    unwound (freeing millions of half-built configurations took a second and more) and, run in-process, stops at its
    next chunk of checks."""
    finished, result = threading.Event(), {}

    def target() -> None:
        try:
            result["value"] = work(line)
        except BaseException as err:  # noqa: BLE001  (raised again in the calling thread)
            result["error"] = err
        finally:
            finished.set()
            if line.cancelled:  # in-process, after an interrupt: collections back once the work has stopped
                gc.enable()

    # millions of dicts of numbers and no cycle among them: a full collection only stalls (an interrupt too, seconds)
    gc.disable()
    threading.Thread(target=target, name="mem4d sweep: prepare", daemon=True).start()
    try:
        while not finished.wait(TICK):
            line.tick()
    except KeyboardInterrupt:
        line.cancelled = True
        if finished.is_set():
            gc.enable()
        raise
    finally:
        line.close()
    gc.enable()
    if "error" in result:
        raise result["error"]
    return result["value"]


def checked(configs: list, line: Line) -> list:
    """sweep.jobs over the configurations, CHUNK at a time, counting them on the progress line."""
    from jaxcheck.crosscheck import sweep

    line.phase("mem4d sweep: checking configurations:", len(configs))
    out = []
    for start in range(0, len(configs), CHUNK):
        if line.cancelled:
            raise KeyboardInterrupt
        out += sweep.jobs(configs[start : start + CHUNK])
        line.done = len(out)
    return out
