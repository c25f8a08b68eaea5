"""Output files written whole or not at all: a temporary file beside the target, renamed over it once complete."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from ..config.errors import ConfigError


@contextlib.contextmanager
def replaced(path: str | Path, mode: str = "w", **kwargs):
    """An open file that becomes `path` only once the block completes: written as a hidden temporary file in the same
    folder and renamed over `path` (one atomic step), removed on any exception, Ctrl-C included, so `path` is never
    left half written. A path that is no regular file (/dev/null, a FIFO) is written directly; a symbolic link is
    followed (its target replaced); an OSError is a one-line ConfigError."""
    target = Path(os.path.realpath(path))
    if target.exists() and not target.is_file():
        with _cannot_write(path), open(target, mode, **kwargs) as handle:
            yield handle
        return
    with _cannot_write(path):
        fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    try:
        os.fchmod(fd, stat.S_IMODE(target.stat().st_mode) if target.exists() else 0o666 & ~_umask())
        with _cannot_write(path), os.fdopen(fd, mode, **kwargs) as handle:
            yield handle
        with _cannot_write(path):
            os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


@contextlib.contextmanager
def _cannot_write(path):
    try:
        yield
    except OSError as err:
        raise ConfigError(f"cannot write {path}: {err.strerror or err}") from None


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
