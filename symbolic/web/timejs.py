"""The step-time model's components (symbolic/time/step.py) as JavaScript, one function per component of one set of
Choices: the same expressions and the same common-subexpression elimination (sympy's cse, lambdify's cse=True) and
term order (the printers' default) that time.evaluate's numpy code is generated with, so the page's predicted
tokens/s/GPU is plan's; disk-cached beside it."""

from __future__ import annotations

import re
from pathlib import Path

from ..config.switches import Switches
from ..estimator.codegen import cached
from ..time.choices import Choices

TIME = Path(__file__).resolve().parents[1] / "time"
SOURCES = (Path(__file__).resolve(), *sorted(TIME.glob("*.py")))


def _function(expr, args: list[str]) -> str:
    """`function(args) {const x0 = ...; return ...;}` after lambdify's cse, printed by sympy's JavaScript printer."""
    import sympy as sp
    from sympy.printing.jscode import JavascriptCodePrinter

    printer = JavascriptCodePrinter({"strict": True})  # lambdify's NumPyPrinter keeps the default order too
    cses, reduced = sp.cse(expr, list=False)
    lines = [f"const {symbol} = {printer.doprint(sub)};" for symbol, sub in cses]
    lines.append(f"return {printer.doprint(reduced)};")
    body = re.sub(r"\s*\n\s*", " ", "\n".join(lines))
    return f"function({', '.join(args)}) {{ {body} }}"


def derive_time_js(ch: Choices) -> dict:
    """[name, argument names, JavaScript source] of every step component (time.step.step's order: plan sums them
    so), its arguments sorted by name as time.evaluate._sources passes them."""
    from ..time.step import step

    parts = []
    for part in step(ch):
        symbols = sorted(part.expr.free_symbols, key=str)
        parts.append([part.name, [str(x) for x in symbols], _function(part.expr, [str(x) for x in symbols])])
    return {"parts": parts}


def time_js(ch: Choices) -> dict:
    """derive_time_js through the estimators' disk cache (kind "timejs"): a warm build imports no sympy."""
    return cached("time", Switches(), lambda: derive_time_js(ch), kind="timejs", sources=SOURCES, extra=repr(ch))
