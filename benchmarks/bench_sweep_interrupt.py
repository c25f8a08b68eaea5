"""Ctrl-C during a large sweep grid's preparation: `mem4d sweep` of an 8,000,000-point grid (the tiny model) on a pty,
SIGINT after each delay; prints the time from the signal to the interrupted line and to the process's exit, the
process's heap (VmRSS) at the signal, and whether a results file was left.

    python benchmarks/bench_sweep_interrupt.py [--after 3 9 20] [--tiny]

Not a test (tests/test_sweep_progress.py is): timings depend on the machine's load; docs/benchmarks.md has them.
"""

from __future__ import annotations

import argparse
import os
import pty
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LISTS = {
    "tp": [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
    "pp": list(range(1, 11)),
    "cp": list(range(1, 11)),
    "dp": list(range(1, 11)),
    "gbs": list(range(1, 9)),
    "mbs": list(range(1, 11)),
    "seq": [128 * i for i in range(1, 11)],
}  # 10 * 10 * 10 * 10 * 8 * 10 * 10 = 8,000,000


def grid_text(points: int) -> str:
    keys = ["tp", "pp", "cp", "dp", "gbs", "mbs", "seq"]
    while len(keys) > 1 and eval("*".join(str(len(LISTS[k])) for k in keys)) > points:  # noqa: S307 (our numbers)
        keys.pop()
    return '[base]\nmodel = "tiny"\n[grid]\n' + "".join(f"{k} = {LISTS[k]}\n" for k in keys)


def once(grid: Path, after: float) -> dict:
    out = grid.with_suffix(".jsonl")
    leader, follower = pty.openpty()
    argv = [sys.executable, "-m", "symbolic.cli", "sweep", str(grid), "-o", str(out), "--target", "cpu"]
    tty = {"stdin": follower, "stdout": follower, "stderr": follower}
    child = subprocess.Popen(argv, **tty, cwd=ROOT, close_fds=True)
    os.close(follower)
    start, seen, sent, line, rss = time.monotonic(), b"", None, None, None
    while True:
        if select.select([leader], [], [], 0.01)[0]:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
            if sent and line is None and b"interrupted" in seen:
                line = time.monotonic() - sent
        if sent is None and time.monotonic() - start > after:
            status = Path(f"/proc/{child.pid}/status").read_text()
            rss = status.split("VmRSS:")[1].split("\n")[0].strip()
            child.send_signal(signal.SIGINT)
            sent = time.monotonic()
        if child.poll() is not None:
            break
    rc = child.wait()
    gone = time.monotonic() - sent
    os.close(leader)
    return {
        "after": after,
        "rc": rc,
        "line": line,
        "exit": gone,
        "rss": rss,
        "file": out.exists(),
        "count": b"configurations\r\n" in seen,
        "progress": seen.count(b"\r\x1b[K"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--after", type=float, nargs="+", default=[3, 9, 20], help="seconds before the SIGINT")
    parser.add_argument("--tiny", action="store_true", help="an 800,000-point grid, one SIGINT after 1 s")
    args = parser.parse_args()
    points, after = (800_000, [1.0]) if args.tiny else (8_000_000, args.after)
    with tempfile.TemporaryDirectory() as tmp:
        grid = Path(tmp) / "big.toml"
        grid.write_text(grid_text(points))
        for seconds in after:
            r = once(grid, seconds)
            line = f"{r['line']:.2f} s" if r["line"] is not None else "none"
            print(
                f"{points:,} points, SIGINT after {seconds:g} s (heap {r['rss']}): exit {r['rc']}, the line after "
                f"{line}, the process gone after {r['exit']:.2f} s; count shown: {r['count']}, progress updates: "
                f"{r['progress']}, results file left: {r['file']}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
