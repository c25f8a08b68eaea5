"""`mem4d`: the command line. Each subcommand lives in its own module, imported only when chosen (no jax on symbolic paths)."""

from __future__ import annotations

import errno
import importlib
import os
import signal
import sys

from ..config.errors import CompileFailed, ConfigError
from . import interrupt
from .parser import Parser

# what writing stdout can fail with besides a closed pipe (`> /dev/full`, a full disk or quota, a file too large)
UNWRITABLE = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO)

# subcommand -> (module with add_arguments(parser) and run(args) -> int, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "formula": ("symbolic.cli.formula", "print each component's simplified closed form"),
    "estimate": ("symbolic.cli.estimate", "per-GPU memory breakdown and fit verdict for one configuration"),
    "latex": ("symbolic.cli.latex", "write a standalone LaTeX report of the formulas and numbers"),
    "report": (
        "symbolic.cli.report",
        "a PDF (or .tex + figures) for a design review: verdict, figures, plan, cross-check, formulas",
    ),
    "compile": ("symbolic.cli.compile", "compile the jax train step on a 4D mesh and print XLA's per-device memory"),
    "plan": ("symbolic.cli.plan", "enumerate every 4D configuration of a cluster, keep those that fit, rank them"),
    "verify": ("symbolic.cli.verify", "symbolic jax profile vs XLA (vs measured) per component, for one configuration"),
    "web": ("symbolic.cli.web", "write the estimator as a static web page (computed in the browser), or serve it"),
    "sweep": ("symbolic.cli.sweep", "verify many configurations from a TOML grid: resumable JSONL, summary, plots"),
}


def _top_parser() -> Parser:
    parser = Parser(prog="mem4d", description="Per-GPU memory of 4D-parallel Llama training, derived and verified.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, help_text) in COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; 0 done, 2 bad input (one line), 3 a step XLA could not compile (one line), 130 interrupted by SIGINT or SIGTERM (one line), 141 closed
    pipe. argv None: this process's command line, and the process is ours to end: once its output is complete it
    ends at once with the exit code (interrupt.leave), so no signal can kill it afterwards."""
    guard = interrupt.install()
    own_process = argv is None
    argv = sys.argv[1:] if argv is None else argv
    prog = f"mem4d {argv[0]}" if argv and argv[0] in COMMANDS else "mem4d"
    _lenient_streams()
    try:
        if sys.stdout is None:  # started with stdout closed (`>&-`): nothing to print to
            raise BrokenPipeError("stdout closed at start")
        rc = _run(argv)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit flush
        if guard.signum is not None:  # raised where something swallowed it: the command still stops here
            raise KeyboardInterrupt
    except BrokenPipeError as err:
        guard.finish()
        rc = _closed_pipe(prog if "at start" in str(err) else None)
    except ConfigError as err:
        guard.finish()
        _error(prog, err)
        rc = 2
    except CompileFailed as err:
        guard.finish()
        _error(prog, err)
        rc = 3
    except OSError as err:
        if err.errno not in UNWRITABLE:
            raise
        guard.finish()
        _error(prog, f"cannot write the output: {err.strerror}")
        rc = _closed_pipe() and 2
    except KeyboardInterrupt as err:
        rc = _interrupted(guard, prog, err)
    except Exception:
        if guard.signum is None:
            raise
        rc = _interrupted(guard, prog, None)  # an interrupt some library turned into its own error
    finally:
        if not own_process:
            guard.uninstall()
    guard.finish(rc if own_process else None)  # a signal from here to `leave` ends the process with rc
    if own_process:
        interrupt.leave(rc)
    return rc


def _run(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        _top_parser().print_help()
        return 0 if argv else 2
    name = argv[0]
    if name not in COMMANDS:
        raise ConfigError(f"unknown command {name!r} (choose from {', '.join(COMMANDS)})")
    module = importlib.import_module(COMMANDS[name][0])
    parser = Parser(prog=f"mem4d {name}", description=COMMANDS[name][1])
    module.add_arguments(parser)
    try:
        args = parser.parse_args(argv[1:])
        from ..flags.files import given  # numpy and the shapes: not before interrupt.install() (a signal at start)

        args.given = given(parser, argv[1:])  # the destinations the command line set (a --megatron file fills the rest)
    except SystemExit as exit:  # --help (0) or a usage error, already printed as one line (2)
        return 0 if exit.code in (0, None) else 2
    return int(module.run(args) or 0)


def _interrupted(guard: interrupt.Guard, prog: str, err: BaseException | None) -> int:
    """One line on the real stderr, exit 130 (main's `leave` then ends a process of our own at once: a compile cut
    short can crash XLA's teardown at interpreter exit, SIGSEGV)."""
    guard.finish()
    backend = sys.modules.get("jaxcheck.backend")
    if backend is not None:
        backend.restore_stderr()  # a signal inside quiet_native_stderr: fd 2 may still point at its temp file
    message = str(err) if isinstance(err, interrupt.Interrupted) and str(err) else f"{prog}: interrupted"
    if guard.signum is not None and guard.signum != signal.SIGINT:
        message += f" ({guard.name})"
    print(message, file=sys.stderr, flush=True)
    return 130


def _closed_pipe(prog: str | None = None) -> int:
    """The reader of stdout went away (`mem4d ... | head -1`): stop quietly with 128 + SIGPIPE, as a killed Unix tool;
    started with stdout closed (`>&-`, `prog` given): the same exit status, and one line saying so.

    stdout is pointed at /dev/null so the interpreter's last flush of the unwritten buffer raises nothing."""
    if prog is not None:
        _error(prog, "stdout is closed: nothing to print to (give it a file or /dev/null)")
        return 141
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
    return 141


def _error(prog: str, err: object) -> None:
    """The one line of an error on stderr, control characters escaped (a name from a config.json cannot forge a
    second line or act on the terminal)."""
    from ..render.console import literal

    if sys.stderr is not None:
        print(f"{prog}: error: {literal(str(err))}", file=sys.stderr)


def _lenient_streams() -> None:
    """A character stdout or stderr cannot encode (`PYTHONIOENCODING=ascii`, a model named in Unicode) is written as
    its backslash escape instead of raising UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):  # a stream that is no TextIOWrapper (pytest's capture), or None
            pass
