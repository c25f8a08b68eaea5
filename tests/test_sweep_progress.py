"""A large sweep grid on a terminal: its count up front, a progress line while it is expanded and checked, and Ctrl-C
at a random moment of that preparation: exit 130 at once, one line, no results file (the CLI contract).

Source of truth: the contract in docs/commands.md (interrupted: one line, exit 130, promptly, no partial file) and
the grid itself (its count is the product of its lists' lengths). Tolerance: the exit within 1 s of the signal on a
loaded 2-core machine (measured: the line after 0.04-0.07 s, the process gone after 0.1-0.7 s, the kernel freeing a
heap of up to 1 GB; docs/benchmarks.md).
"""

import os
import random
import re
import select
import signal
import threading
import time

import pytest

from pty_child import read_some, spawn

from symbolic.cli import sweep_prepare

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
TEN = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"
# 800,000 configurations: expanding and checking them takes 20 s and more, so every moment drawn below falls in the
# preparation however fast the machine (8,000 took 0.24 s in-process: the signal then met jax's import instead)
GRID = (
    f'[base]\nmodel = "tiny"\nseq = 128\n[grid]\ntp = {TEN}\npp = {TEN}\ncp = {TEN}\ndp = {TEN}\nmbs = {TEN}\n'
    'gbs = [1, 2, 3, 4, 5, 6, 7, 8]\n'
)


def _read_until(fd: int, seen: bytearray, done, deadline: float) -> None:
    while not done(seen) and time.monotonic() < deadline:
        if select.select([fd], [], [], 0.02)[0]:
            if not (chunk := read_some(fd)):
                return
            seen += chunk


def test_ctrl_c_at_a_random_moment_of_a_large_grids_preparation(tmp_path):
    (tmp_path / "g.toml").write_text(GRID)
    out = tmp_path / "r.jsonl"
    argv = ["sweep", str(tmp_path / "g.toml"), "-o", str(out), "--target", "cpu"]
    child, leader = spawn(argv, {**os.environ, "TERM": "xterm"})
    seen = bytearray()
    try:
        _read_until(leader, seen, lambda s: b"configurations\r\n" in s, time.monotonic() + 60)
        assert b"800,000 configurations" in seen, bytes(seen)  # the count, before any expansion
        moment = random.uniform(0.3, 1.2)  # within the preparation
        _read_until(leader, seen, lambda s: False, time.monotonic() + moment)
        assert child.poll() is None, bytes(seen)
        child.send_signal(signal.SIGINT)
        sent = time.monotonic()
        _read_until(leader, seen, lambda s: b"interrupted" in s and s.endswith(b"\n"), sent + 30)
        rc = child.wait(timeout=30)
        took = time.monotonic() - sent
    finally:
        os.close(leader)
        if child.poll() is None:
            child.kill()
    text = ANSI.sub("", seen.decode())
    assert rc == 130 and "Traceback" not in text, text
    assert took < 1.0, f"{took:.2f} s from the signal to the exit (at {moment:.2f} s)"
    progress = [part for part in text.split("\r") if "expanding" in part or "checking configurations" in part]
    assert progress, text  # at least one update of the progress line (every 0.25 s) before the signal
    last = text.rstrip("\r\n").split("\r")[-1].split("\n")[-1]
    assert last == "mem4d sweep: interrupted while preparing the grid; nothing was run or written", text
    assert not out.exists()  # no results file


def test_count_is_the_product_of_the_lists_plus_the_cases(tmp_path):
    grid = tmp_path / "g.toml"
    grid.write_text(GRID + "[[case]]\npp = 2\n[[case]]\npp = 4\n")
    assert sweep_prepare.count(str(grid)) == 800_002
    grid.write_text("not toml [")
    assert sweep_prepare.count(str(grid)) is None  # parse_grid says why, in one line


def test_prepared_raises_the_works_error_here_and_collects_again():
    """An error of the preparation (a ConfigError) reaches the caller as raised; garbage collection, off while it
    runs, is back on."""
    line = sweep_prepare.Line(False)

    def work(line):
        assert threading.current_thread() is not threading.main_thread()
        raise ValueError("bad grid")

    with pytest.raises(ValueError, match="bad grid"):
        sweep_prepare.prepared(work, line)
    assert sweep_prepare.prepared(lambda line: 42, line) == 42
    import gc

    assert gc.isenabled()
