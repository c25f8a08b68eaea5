"""mem4d's CLI in a child process on a pseudo-terminal, as a person's terminal runs it: the child, and what it wrote."""

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def spawn(argv: list[str], env: dict, columns: int | None = None) -> tuple[subprocess.Popen, int]:
    """`python -m symbolic.cli ARGV` in ROOT with stdin, stdout and stderr a new pty (`columns` wide where given):
    the child and the pty's leader, to read what it writes."""
    leader, follower = pty.openpty()
    if columns:
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    tty = {"stdin": follower, "stdout": follower, "stderr": follower}
    child = subprocess.Popen([sys.executable, "-m", "symbolic.cli", *argv], **tty, cwd=ROOT, env=env, close_fds=True)
    os.close(follower)
    return child, leader


def read_some(leader: int) -> bytes:
    """What the child wrote since the last read (b"" once it closed the pty)."""
    try:
        return os.read(leader, 65536)
    except OSError:  # EIO: the child closed the pty
        return b""
