"""`mem4d formula`: each component's simplified closed form (text, LaTeX or JSON)."""
from __future__ import annotations

import argparse
import json
import os

from .args import add_switch_args


def switches_from_args(args: argparse.Namespace):
    """The switches of the Training these flags describe (its other fields at their defaults)."""
    from ..config.switches import Switches
    from ..config.training import training_from_json

    return Switches.of(training_from_json(vars(args)), overheads=args.overheads)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("component", nargs="?", default=None, help="one component (default: all)")
    parser.add_argument("--profile", default="paper", help="memory profile (default: %(default)s)")
    g = parser.add_argument_group("switches")
    add_switch_args(g)
    g.add_argument("--no-overheads", dest="overheads", action="store_false", help="drop the overhead components")
    parser.add_argument("--latex", action="store_true", help="print LaTeX instead of text")
    parser.add_argument("--json", action="store_true", help="print JSON (name, doc, text, latex)")


def run(args: argparse.Namespace) -> int:
    from ..profiles import load
    from ..render import expressions as render
    from ..render.formulas import formulas, select

    load(args.profile)  # unknown profile: one line, exit 2
    switches = switches_from_args(args)
    items = select(formulas(args.profile, switches), args.component)
    if args.json:
        out = [{"name": i.name, "doc": i.doc, "text": render.text(i.expr), "latex": render.latex(i.expr)} for i in items]
        print(json.dumps({"profile": args.profile, "switches": vars(switches), "unit": "bytes per GPU", "formulas": out}, indent=2))
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
    console.print(table)
    return 0
