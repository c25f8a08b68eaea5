"""`mem4d`: the command line. Each subcommand lives in its own module, imported only when chosen (no jax on symbolic paths)."""
from __future__ import annotations

import argparse
import importlib
import os
import sys

from ..config.errors import ConfigError

# subcommand -> (module with add_arguments(parser) and run(args) -> int, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "formula": ("symbolic.cli.formula", "print each component's simplified closed form"),
    "estimate": ("symbolic.cli.estimate", "per-GPU memory breakdown and fit verdict for one configuration"),
    "latex": ("symbolic.cli.latex", "write a standalone LaTeX report of the formulas and numbers"),
    "report": ("symbolic.cli.report", "a PDF (or .tex + figures) for a design review: verdict, figures, plan, cross-check, formulas"),
    "compile": ("symbolic.cli.compile", "compile the jax train step on a 4D mesh and print XLA's per-device memory"),
    "plan": ("symbolic.cli.plan", "enumerate every 4D configuration of a cluster, keep those that fit, rank them"),
    "verify": ("symbolic.cli.verify", "symbolic jax profile vs XLA (vs measured) per component, for one configuration"),
    "sweep": ("symbolic.cli.sweep", "verify many configurations from a TOML grid: resumable JSONL, summary, plots"),
}


class _Parser(argparse.ArgumentParser):
    """argparse that reports bad usage as one line and exit 2, without the usage dump."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def _top_parser() -> _Parser:
    parser = _Parser(prog="mem4d", description="Per-GPU memory of 4D-parallel Llama training, derived and verified.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, help_text) in COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        _top_parser().print_help()
        return 0 if argv else 2
    name = argv[0]
    if name not in COMMANDS:
        print(f"mem4d: error: unknown command {name!r} (choose from {', '.join(COMMANDS)})", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[name][0])
    parser = _Parser(prog=f"mem4d {name}", description=COMMANDS[name][1])
    module.add_arguments(parser)
    args = parser.parse_args(argv[1:])
    try:
        rc = int(module.run(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit flush
        return rc
    except BrokenPipeError:
        return _closed_pipe()
    except ConfigError as err:
        print(f"mem4d {name}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"mem4d {name}: interrupted", file=sys.stderr)
        return 130


def _closed_pipe() -> int:
    """The reader of stdout went away (`mem4d ... | head -1`): stop quietly with 128 + SIGPIPE, as a killed Unix tool.

    stdout is pointed at /dev/null so the interpreter's last flush of the unwritten buffer raises nothing."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 141

