"""A profile's expressions under one set of switches as JavaScript: the same expressions and the same common-
subexpression elimination the numpy estimator is generated with (estimator.codegen), printed by sympy's JavaScript
printer; disk-cached beside the numpy code."""

from __future__ import annotations

import re
from pathlib import Path

from ..config.glossary import NAMES, STAGE_NAMES
from ..config.switches import Switches
from ..estimator.codegen import cached

SOURCES = (Path(__file__).resolve(),)


def _printer():
    """sympy's JavaScript printer, strict: a function it cannot print is an error, never a comment in the code."""
    from sympy.printing.jscode import JavascriptCodePrinter

    return JavascriptCodePrinter({"strict": True, "order": "none"})  # codegen.PRINTER's order


def function(exprs: list, args: tuple[str, ...]) -> str:
    """`function(args) {const x0 = ...; return [...];}` of the expressions, after codegen's CSE."""
    from ..estimator.codegen import CSE

    printer = _printer()
    cses, reduced = CSE(tuple(exprs))
    lines = [f"const {symbol} = {printer.doprint(expr)};" for symbol, expr in cses]
    lines.append("return [" + ", ".join(printer.doprint(expr) for expr in reduced) + "];")
    body = re.sub(r"\s*\n\s*", " ", "\n".join(lines))  # Piecewise prints over several lines
    return f"function({', '.join(args)}) {{ {body} }}"


def derive_js(profile: str, switches: Switches) -> dict:
    """The estimator's functions as JavaScript source: "main" (components + total of NAMES), one per stage kind
    (of NAMES + STAGE_NAMES), "in_flight" (of NAMES + r), with their output names: estimator.codegen.derive's set."""
    from ..components import total
    from ..config.kinds import present
    from ..config.symbols import BY_NAME, L_r, Le_r, m_r, r
    from ..config.stages import STAGES
    from ..recipes import load

    module = load(profile)
    parts = module.components(switches)
    stages, docs = {}, {part.name: part.doc for part in parts}
    for stage in STAGES:
        kinds = {name: BY_NAME[name] for name in present(switches)}
        stage_parts = module.stage_components(switches, stage, L_r, m_r, Le_r, **({"kinds": kinds} if kinds else {}))
        docs.update({part.name: part.doc for part in stage_parts if part.name not in docs})
        stages[stage] = {
            "outputs": [part.name for part in stage_parts] + ["total"],
            "source": function([part.expr for part in stage_parts] + [total(stage_parts)], NAMES + STAGE_NAMES),
        }
    return {
        "components": [part.name for part in parts] + ["total"],
        "docs": docs,
        "main": function([part.expr for part in parts] + [total(parts)], NAMES),
        "stages": stages,
        "in_flight": function([module.in_flight(r, switches)], NAMES + ("r",)),
    }


def derived_js(profile: str, switches: Switches) -> dict:
    """derive_js through the estimator's disk cache (kind "js"): a warm build imports no sympy."""
    return cached(profile, switches, lambda: derive_js(profile, switches), kind="js", sources=SOURCES)
