"""Simplified text and LaTeX of component expressions, each Piecewise named and defined once in a "where" clause."""

from __future__ import annotations

import functools

import sympy as sp

from ..config.symbols import LATEX


def _is_indicator(pw: sp.Piecewise) -> bool:
    return len(pw.args) == 2 and pw.args[0].expr == 1 and pw.args[1].expr == 0


def _indicator(cond) -> sp.Piecewise:
    return sp.Piecewise((1, cond), (0, True))


def for_display(expr: sp.Expr) -> sp.Expr:
    """The expression as it is shown: without jaxcheck's float guard inside the experts' capacity ceiling (it moves
    no realistic value), and `x if cond else 0` as x times the Iverson bracket [cond]."""
    from ..recipes.jax.moe import FLOAT_GUARD

    expr = sp.sympify(expr).xreplace({-FLOAT_GUARD: 0, FLOAT_GUARD: 0})
    gated = {
        pw: pw.args[0].expr * _indicator(pw.args[0].cond)
        for pw in expr.atoms(sp.Piecewise)
        if len(pw.args) == 2 and pw.args[1].expr == 0 and pw.args[1].cond is sp.true and pw.args[0].expr != 1
    }
    return expr.xreplace(gated) if gated else expr


def opaque(expr: sp.Expr) -> tuple[sp.Expr, dict[sp.Symbol, sp.Expr], dict[sp.Symbol, str]]:
    """Replace each Piecewise (in-flight micro batches, "group exists" indicators) by a named symbol, so that
    simplification stays fast and the closed form readable; return the new expression, definitions and LaTeX names."""
    expr = for_display(expr)
    defs, names, mapping = {}, {}, {}
    counter = 0
    for pw in sorted(expr.atoms(sp.Piecewise), key=sp.default_sort_key):
        if _is_indicator(pw):
            cond = pw.args[0].cond
            sym = sp.Symbol(f"[{sp.sstr(cond)}]", positive=True)
            names[sym] = rf"[{sp.latex(cond, symbol_names=LATEX)}]"
        else:
            sym = sp.Symbol(f"n_{counter}", positive=True)
            names[sym] = rf"n_{{{counter}}}"
            counter += 1
        mapping[pw] = sym
    # a Piecewise nested in another is named inside the outer one's definition, and only definitions the body reaches
    # (directly or through another definition) are kept: an inner one the outer's name swallowed is not printed
    defs = {sym: pw.xreplace({k: v for k, v in mapping.items() if k != pw}) for pw, sym in mapping.items()}
    body = expr.xreplace(mapping)
    reached, todo = set(), [x for x in body.free_symbols if x in defs]
    while todo:
        sym = todo.pop()
        if sym not in reached:
            reached.add(sym)
            todo += [x for x in defs[sym].free_symbols if x in defs]
    return body, {sym: pw for sym, pw in defs.items() if sym in reached}, names


LONG_SUM = 10  # terms of a sum (a total of components) above which simplify is skipped: measured on the paper
# profile's totals (11 to 21 terms), simplify took 0.4-1.7 s each for a text 5-15 % shorter than factor_terms' alone


@functools.lru_cache(maxsize=None)
def simplified(expr: sp.Expr) -> sp.Expr:
    """A short equivalent form: simplify, then pull common factors out of sums (once per expression: text and
    LaTeX of a formula share it); a sum of more than LONG_SUM terms only has its common factors pulled out."""
    if expr.is_Add and len(expr.args) > LONG_SUM or expr.has(sp.Mod) and expr.has(sp.floor):  # a dealing (layerwise),
        return sp.factor_terms(expr)  # which simplify takes minutes over (283 s for MB-48's optimizer)
    return sp.factor_terms(sp.simplify(expr))


def text(expr: sp.Expr) -> str:
    """One line: the simplified form, then `where name = definition` for each Piecewise."""
    body, defs, _ = opaque(sp.sympify(expr))
    out = sp.sstr(simplified(body))
    for sym, pw in defs.items():
        if not _is_indicator(pw):  # an Iverson bracket [x > 1] reads as its definition
            out += f"   where {sym} = {_text_piecewise(pw)}"
    return out


def _text_piecewise(pw: sp.Piecewise) -> str:
    pieces = [f"{sp.sstr(simplified(e))} if {sp.sstr(cond)}" for e, cond in pw.args if cond is not sp.true]
    default = [sp.sstr(simplified(e)) for e, cond in pw.args if cond is sp.true]
    return " else ".join(pieces + default)


def latex_parts(expr: sp.Expr) -> tuple[sp.Expr, list[str], dict[sp.Symbol, str]]:
    """(simplified body with each Piecewise a named symbol, the LaTeX definition of each name, the names' LaTeX)."""
    body, defs, names = opaque(sp.sympify(expr))
    wheres = [f"{names[sym]} = {_latex_piecewise(pw)}" for sym, pw in defs.items() if not _is_indicator(pw)]
    return simplified(body), wheres, names


def latex(expr: sp.Expr) -> str:
    """LaTeX of the simplified form; each Piecewise is a named symbol defined after a `where`."""
    body, wheres, names = latex_parts(expr)
    out = sp.latex(body, symbol_names={**LATEX, **names})
    if wheres:
        out += r",\quad\text{where } " + r",\; ".join(wheres)
    return out


def _latex_piecewise(pw: sp.Piecewise) -> str:
    rows = []
    for e, cond in pw.args:
        when = r"\text{otherwise}" if cond is sp.true else sp.latex(cond, symbol_names=LATEX)
        rows.append(f"{sp.latex(simplified(e), symbol_names=LATEX)} & {when}")
    return r"\begin{cases} " + r" \\ ".join(rows) + r" \end{cases}"
