"""`mem4d formula`: each component's simplified closed form (text, LaTeX or JSON)."""
from __future__ import annotations

import argparse
import json
import os

from ..config.training import RECOMPUTE


def add_switch_args(parser: argparse.ArgumentParser) -> None:
    """--profile and the switches that change the form of the expressions."""
    parser.add_argument("--profile", default="paper", help="memory profile (default: %(default)s)")
    g = parser.add_argument_group("switches")
    g.add_argument("--recompute", default="none", metavar="{none,selective,full}", help="activation recomputation")
    g.add_argument("--no-sp", dest="sp", action="store_false", help="disable sequence parallelism")
    g.add_argument("--no-flash-attn", dest="flash_attn", action="store_false", help="keep attention scores/softmax")
    g.add_argument("--no-dist-opt", dest="dist_opt", action="store_false", help="replicate optimizer states")
    g.add_argument("--no-overheads", dest="overheads", action="store_false", help="drop the overhead components")


def switches_from_args(args: argparse.Namespace):
    from ..components import Switches
    from ..config.errors import ConfigError

    if args.recompute not in RECOMPUTE:
        raise ConfigError(f"--recompute must be one of {', '.join(RECOMPUTE)}, got {args.recompute!r}")
    return Switches(recompute=args.recompute, flash_attn=args.flash_attn, sp=args.sp, dist_opt=args.dist_opt,
                    overheads=args.overheads)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("component", nargs="?", default=None, help="one component (default: all)")
    add_switch_args(parser)
    parser.add_argument("--latex", action="store_true", help="print LaTeX instead of text")
    parser.add_argument("--json", action="store_true", help="print JSON (name, doc, text, latex)")


def run(args: argparse.Namespace) -> int:
    from ..profiles import load
    from ..render import expressions as render
    from ..render.formulas import formulas, select

    load(args.profile)  # unknown profile: one line, exit 2
    sw = switches_from_args(args)
    items = select(formulas(args.profile, sw), args.component)
    if args.json:
        out = [{"name": i.name, "doc": i.doc, "text": render.text(i.expr), "latex": render.latex(i.expr)} for i in items]
        print(json.dumps({"profile": args.profile, "switches": vars(sw), "unit": "bytes per GPU", "formulas": out}, indent=2))
        return 0
    if args.latex:
        for item in items:
            print(f"% {item.name}: {item.doc}\n{render.latex(item.expr)}\n")
        return 0
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(no_color=bool(os.environ.get("MEM4D_NO_COLOR")), width=max(120, Console().width))
    table = Table(title=f"profile {args.profile}: bytes per GPU ({sw.recompute} recompute, sp={sw.sp}, "
                        f"flash={sw.flash_attn}, dist_opt={sw.dist_opt}, overheads={sw.overheads})", title_justify="left")
    table.add_column("component", no_wrap=True)
    table.add_column("closed form")
    table.add_column("what / source")
    for item in items:
        table.add_row(item.name, Text(render.text(item.expr)), Text(item.doc))  # Text: "[c*d > 1]" is not rich markup
    console.print(table)
    return 0
