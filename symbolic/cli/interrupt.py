"""Ctrl-C and SIGTERM while a command runs: one KeyboardInterrupt, raised again where Python would swallow it."""

from __future__ import annotations

import _thread
import os
import signal
import sys
import threading

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """An interrupt a command has cleaned up after; its message is the one line the CLI prints."""


class Guard:
    """While installed, the first SIGINT or SIGTERM raises KeyboardInterrupt in the main thread; later ones are
    ignored (a second Ctrl-C cannot cut the cleanup short). Where Python swallows the exception (a gc callback such
    as jax's `_xla_gc_callback`, a `__del__`: "Exception ignored in ..."), it is raised again at the next bytecode.
    After `finish()` (the command is done or has reported the interrupt) signals are ignored, or, given an exit code
    (a process of our own whose output is complete), end the process at once with it (no hang in teardown)."""

    def __init__(self):
        self.signum: int | None = None  # the first signal received
        self.finished = False
        self._exit_code: int | None = None
        self._again = False
        self._previous: dict = {}
        self._previous_hook = None

    def _handler(self, signum, frame):
        if self.finished and self._exit_code is not None:
            flush()
            os._exit(self._exit_code)
        if self.finished or (self.signum is not None and not self._again):
            return
        self.signum, self._again = self.signum or signum, False
        raise KeyboardInterrupt

    def _unraisable(self, unraisable):
        if isinstance(unraisable.exc_value, KeyboardInterrupt) and self.signum and not self.finished:
            self._again = True  # the handler raises again, in the main thread, once this hook has returned
            threading.Timer(0.01, _thread.interrupt_main, (self.signum,)).start()
            return
        self._previous_hook(unraisable)

    def install(self) -> "Guard":
        if threading.current_thread() is threading.main_thread():  # signal.signal works only there
            for signum in SIGNALS:
                self._previous[signum] = signal.signal(signum, self._handler)
        self._previous_hook, sys.unraisablehook = sys.unraisablehook, self._unraisable
        return self

    def finish(self, exit_code: int | None = None) -> None:
        """From now on signals are ignored (the handler stays installed until `uninstall`), or end the process with
        `exit_code`."""
        self.finished, self._exit_code = True, exit_code

    def uninstall(self) -> None:
        """Put back the previous handlers (a command run in-process, e.g. by tests); no longer the current guard."""
        global _current
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        if self._previous_hook is not None:
            sys.unraisablehook = self._previous_hook
        if _current is self:
            _current = None

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name if self.signum else "SIGINT"


_current: Guard | None = None


def install() -> Guard:
    """A new guard, installed, and the current one (what `pending` and `finish` refer to)."""
    global _current
    _current = Guard().install()
    return _current


def pending() -> bool:
    """A signal arrived and the command has not reported it yet (for loops that catch broad exceptions)."""
    return _current is not None and _current.signum is not None and not _current.finished


def finish() -> None:
    """The command reports the interrupt itself (e.g. the sweep's resume hint): ignore further signals."""
    if _current is not None:
        _current.finish()


_KEPT: list = []


def keep(*objects) -> None:
    """Objects an interrupted command leaves to the process's end rather than to the unwinding of the interrupt: a
    process of our own ends with os._exit (leave) without freeing them one by one (the millions of dicts of a large
    sweep grid took seconds, longer the longer it had run, between the interrupt's line and the exit)."""
    _KEPT.extend(objects)


def leave(exit_code: int) -> None:
    """A process of our own whose output is complete ends at once with `exit_code` (os._exit), so that no signal can
    kill it afterwards: Python's finalisation puts the default SIGINT / SIGTERM handlers back (CPython
    _PySignal_Fini) before XLA tears its ~50 threads down, a window of about half a second in which one Ctrl-C
    killed the process by the signal itself (exit -2, no line); and an interrupt the command already reported can
    still end the interpreter by SIGINT (CPython's exit for an unhandled KeyboardInterrupt: seen once in 18 loaded
    runs with the signals merely ignored). Everything the command writes is closed or flushed by then."""
    flush()
    os._exit(exit_code)


def flush() -> None:
    """Flush stdout and stderr, whatever state they are in."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
