"""`mem4d formula`: each component's simplified closed form (text, LaTeX or JSON)."""
from __future__ import annotations

import argparse
import json
import os

from ..config.switches import BACKENDS
from .args import add_switch_args


def switches_from_args(args: argparse.Namespace):
    """The switches of the Training these flags describe (its other fields at their defaults)."""
    from ..config.switches import Switches
    from ..config.training import training_from_json

    return Switches.of(training_from_json(vars(args)), overheads=args.overheads, backend=args.backend)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("component", nargs="?", default=None, help="one component (default: all)")
    parser.add_argument("--profile", default="paper", help="memory profile (default: %(default)s)")
    g = parser.add_argument_group("switches")
    add_switch_args(g)
    g.add_argument("--no-overheads", dest="overheads", action="store_false", help="drop the overhead components")
    g.add_argument("--backend", choices=BACKENDS, default="gpu",
                   help="profile jax: whose compiled program, XLA:GPU's or XLA:CPU's (default: %(default)s)")
    parser.add_argument("--latex", action="store_true", help="print LaTeX instead of text")
    parser.add_argument("--json", action="store_true", help="print JSON (name, doc, text, latex)")


def run(args: argparse.Namespace) -> int:
    from ..profiles import load
    from ..render import expressions as render
    from ..render.formulas import formulas, select

    load(args.profile)  # unknown profile: one line, exit 2
    switches = switches_from_args(args)
    module = load(args.profile)
    items = select(formulas(args.profile, switches), args.component)
    buffers = _buffers(module, switches) if args.component is None else None
    if args.json:
        out = [{"name": i.name, "doc": i.doc, "text": render.text(i.expr), "latex": render.latex(i.expr)} for i in items]
        extra = {} if buffers is None else {"buffers": buffers[0], "phases": buffers[1]}
        print(json.dumps({"profile": args.profile, "switches": vars(switches), "unit": "bytes per GPU",
                          "formulas": out, **extra}, indent=2))
        return 0
    if args.latex:
        for item in items:
            print(f"% {item.name}: {item.doc}\n{render.latex(item.expr)}\n")
        return 0
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(no_color=bool(os.environ.get("MEM4D_NO_COLOR")), width=max(120, Console().width))
    table = Table(title=f"profile {args.profile}: bytes per GPU ({switches.recompute} recompute, sp={switches.sp}, "
                        f"flash={switches.flash_attn}, zero={switches.zero}, overheads={switches.overheads})",
                  title_justify="left")
    table.add_column("component", no_wrap=True)
    table.add_column("closed form")
    table.add_column("what / source")
    for item in items:
        table.add_row(item.name, Text(render.text(item.expr)), Text(item.doc))  # Text: "[c*d > 1]" is not rich markup
    if buffers is not None:
        _print_buffers(console, buffers, switches)
    console.print(table)
    return 0


def _buffers(module, switches):
    """(buffer rows, phase sums) of a profile written as a buffer table (the jax profile), else None."""
    if not hasattr(module, "table"):
        return None
    from ..render import table

    return table.rows(module, switches), table.phases(module, switches)


def _phases(phases: list[str]) -> str:
    """A buffer's phases, short: "all", or their names."""
    from ..components.buffers import PHASES

    return "all" if tuple(phases) == PHASES else ", ".join(phases)


def _print_buffers(console, buffers, switches) -> None:
    """The buffer table: each buffer's per-device shape, bytes per element, phases; then each phase's live bytes."""
    from rich.table import Table
    from rich.text import Text

    rows, phases = buffers
    table = Table(title=f"buffers of one device (XLA:{switches.backend.upper()}), in the phases each is live",
                  title_justify="left")
    for col in ("buffer", "shape (per device)", "bytes/element", "phases", "what"):
        table.add_column(col)
    for row in rows:
        count = f"{row['count']} x " if row["count"] != 1 else ""
        table.add_row(row["name"], Text(count + row["shape"]), Text(row["width"]), _phases(row["phases"]),
                      Text(row["doc"]))
    console.print(table)
    sums = Table(title="live temporaries per phase; XLA's temp is the largest", title_justify="left")
    sums.add_column("phase")
    sums.add_column("bytes")
    for phase in phases:
        sums.add_row(phase["name"], Text(phase["bytes"]))
    console.print(sums)
