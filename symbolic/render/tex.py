"""LaTeX pieces of the report: text escaped, the glossary's letters in prose set as in the formulas, and long
expressions broken over lines at their top-level sums (never shrunk)."""

from __future__ import annotations

import re

import sympy as sp

from ..config import glossary
from ..config.symbols import LATEX
from .expressions import latex_parts, opaque

_ESCAPES = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"$\sim$",
    "^": r"\textasciicircum{}",
    "<": r"$<$",
    ">": r"$>$",
    "|": r"$|$",
}


def escape(text) -> str:
    """Plain text -> LaTeX text mode: every special character printed as itself ("~" as a tilde, never a space)."""
    return "".join(_ESCAPES.get(ch, ch) for ch in str(text)).replace("--", "-{}-")  # no en dash from "--"


# --- the glossary's letters in prose ---------------------------------------------------------------------------
_LETTER = "|".join(sorted(glossary.NAMES, key=len, reverse=True))
_ATOM = rf"(?:(?<![\w.'])(?:{_LETTER}|\d+(?:\.\d+)?)(?![\w])|\.\.\.|\((?:[^()]|\([^()]*\))*\))"
_OP = r"(?:\s*(?:<=|>=|[*/+\-=<>])\s*|\s+x\s+)"
_RUN = re.compile(rf"\[[^\[\]]*\]|{_ATOM}(?:{_OP}{_ATOM})*")
_OPS_TEX = {"<=": r"\le ", ">=": r"\ge ", "*": "", "x": r"\times "}


def _atoms(run: str) -> list[str]:
    return re.findall(rf"(?<![\w.])(?:{_LETTER})(?!\w)", run)


def _is_math(run: str) -> bool:
    """A run is math when every word in it is a glossary letter and it says something: an operator, a bracket, or a
    letter that is not an English word ("a" alone stays text)."""
    if run.startswith("["):
        inner = [part.strip() for part in run[1:-1].split(",")]
        return bool(inner) and all(
            part == "..." or part.isdigit() or _RUN.fullmatch(part) and _is_math(part) for part in inner
        )
    if run.startswith("(") and run.endswith(")") and _RUN.fullmatch(run[1:-1]):
        return _is_math(run[1:-1])
    words = re.findall(r"[A-Za-z_]\w*", re.sub(r"(?<=[\w)\]])\s+x\s+(?=[\w(\[])", " * ", run))  # x as times
    if not words or any(w not in glossary.NAMES for w in words):
        return False
    has_op = bool(re.search(_OP, run)) or "(" in run
    return has_op or run != "a"


def _math(run: str) -> str:
    """A run of prose math (ASCII, the glossary's names) as LaTeX math: letters as in the formulas, * as
    juxtaposition (a dot before a number), x as times."""
    tokens = re.findall(r"<=|>=|\.\.\.|\d+(?:\.\d+)?|[A-Za-z_]\w*|\S", run)
    out = []
    for i, tok in enumerate(tokens):
        after = tokens[i + 1] if i + 1 < len(tokens) else ""
        if tok == "*":
            out.append(r"\cdot" if after[:1].isdigit() else "")
        else:
            out.append(
                {"x": r"\times", "<=": r"\le", ">=": r"\ge", "...": r"\ldots"}.get(tok, glossary.LATEX.get(tok, tok))
            )
    return " ".join(o for o in out if o).replace(" ,", ",")


def prose(text) -> str:
    """Prose with every formula-like run of the glossary's letters set as math ($B_{w}$, $d c$, $[m + p - 1, L/p]$)
    and everything else escaped; the inside of a bracket that is not math is prose again."""
    text, out, last = str(text), [], 0
    for match in _RUN.finditer(text):
        run = match.group(0).strip()
        if not run:
            continue
        start = match.start() + match.group(0).index(run)
        if _is_math(run):
            piece = f"${_math(run)}$"
        elif run[0] in "([" and run[-1] in ")]":
            piece = escape(run[0]) + prose(run[1:-1]) + escape(run[-1])
        else:
            continue
        out += [escape(text[last:start]), piece]
        last = start + len(run)
    return "".join(out) + escape(text[last:])


# --- long expressions ------------------------------------------------------------------------------------------
LINE = 92  # weighted characters of math that fit on one line of the text width (10pt, A4, 2 cm margins)
_OPERATOR = re.compile(r"[+=<>]|(?<![{(])-|\\cdot|\\times|\\le|\\ge")


def visible(tex: str) -> int:
    """About how wide a LaTeX math string prints, in characters: sizing commands and braces dropped, a fraction as
    wide as its wider part, binary operators and relations three characters (their spacing)."""
    s = re.sub(r"\\(?:left|right|[Bb]igg?[lr]|mathrm|text|operatorname)\b", "", tex)
    for _ in range(3):
        s = re.sub(r"\\frac\{([^{}]*)\}\{([^{}]*)\}", lambda m: max(m.group(1), m.group(2), key=len), s)
    ops = len(_OPERATOR.findall(s))
    return len(re.sub(r"\\[a-zA-Z]+|[{}^_ \\&]", "", s)) + 2 * ops


def _tex(expr: sp.Expr, names: dict) -> str:
    return sp.latex(expr, symbol_names={**LATEX, **names})


def _pieces(expr: sp.Expr, names: dict, width: int, sign: str = "") -> list[str]:
    """Pieces of `expr` to be laid out left to right, each breakable after: the terms of a sum (each with its sign);
    a product whose long factor is a sum as coefficient [ pieces of that sum ], or whose long factor is a min or max
    as coefficient min( pieces of each argument ); anything else whole."""
    if isinstance(expr, sp.Add):
        out = []
        for i, term in enumerate(expr.as_ordered_terms()):
            negative = term.could_extract_minus_sign()
            mark = "- " if negative else ("" if i == 0 else "+ ")
            out += _pieces(-term if negative else term, names, width, mark)
        if sign:
            out[0] = sign + out[0]
        return out
    whole = sign + _tex(expr, names)
    if visible(whole) <= width or not isinstance(expr, (sp.Mul, sp.Min, sp.Max)):
        return [whole]
    numer, denom = sp.fraction(expr)
    long = [f for f in sp.Mul.make_args(numer) if isinstance(f, (sp.Add, sp.Min, sp.Max))]
    if not long:
        return [whole]
    inner = max(long, key=lambda f: visible(_tex(f, names)))
    rest = sp.Mul(*(f for f in sp.Mul.make_args(numer) if f is not inner)) / denom
    coefficient = sign + ("" if rest == 1 else _tex(rest, names))
    if isinstance(inner, sp.Add):
        opening, closing, inside = r"\Bigl[", r"\Bigr]", _pieces(inner, names, width - 4)
    else:
        opening, closing, inside = r"\%s\Bigl(" % type(inner).__name__.lower(), r"\Bigr)", []
        for i, arg in enumerate(sp.ordered(inner.args)):
            parts = _pieces(arg, names, width - 6)
            inside += parts[:-1] + [parts[-1] + ("," if i < len(inner.args) - 1 else "")]
    inside[0] = coefficient + opening + inside[0]
    inside[-1] += closing
    return inside


def _pack(pieces: list[str], width: int) -> list[str]:
    """Join pieces into lines of at most `width` visible characters (a piece wider than that gets a line alone)."""
    lines: list[str] = []
    for piece in pieces:
        if lines and visible(lines[-1]) + visible(piece) <= width:
            lines[-1] += " " + piece
        else:
            lines.append(piece)
    return lines


def equation(lhs: str, lines: list[str], wheres: list[str] = ()) -> list[str]:
    """The rows of one equation in an align*: `lhs &= first line`, continuation lines indented, then its wheres."""
    return (
        [f"{lhs} &= {lines[0]}"]
        + [rf"&\qquad {line}" for line in lines[1:]]
        + [rf"&\text{{where }} {w.replace(chr(92) + 'frac', chr(92) + 'dfrac')}" for w in wheres]
    )


def align(*equations: list[str]) -> str:
    """An align* block of equations (rows from equation()); a page may break between equations, not inside one."""
    return (
        "\\begin{align*}\n" + " \\\\\n".join(" \\\\*\n".join(rows) for rows in equations if rows) + "\n\\end{align*}\n"
    )


def _room(lhs: str, widest: int | None) -> int:
    """Characters left for the right-hand side when the block's widest left-hand side is `widest` (default: lhs)."""
    return max(LINE - max(visible(lhs), widest or 0) - 4, 40)


def expression(lhs: str, expr: sp.Expr, widest: int | None = None) -> list[str]:
    """`lhs = expr`: simplified, each Piecewise a named symbol defined after "where", lines broken at top-level sums
    (and inside a long factor that is a sum) so that nothing is wider than the text, next to left-hand sides up to
    `widest` characters wide (those of the other equations of its align block)."""
    body, wheres, names = latex_parts(expr)
    width = _room(lhs, widest)
    return equation(lhs, _pack(_pieces(body, names, width), width), wheres)


def names(lhs: str, parts: list[str], function: str = "", widest: int | None = None) -> list[str]:
    """`lhs = part_1 + part_2 + ...` (each a component shown elsewhere), or with `function` (e.g. \\max) the parts as
    its arguments, broken over lines like expression()."""
    width = _room(lhs, widest)
    if not parts:
        return equation(lhs, ["0"])
    if not function:
        return equation(lhs, _pack([mathrm(parts[0])] + ["+ " + mathrm(n) for n in parts[1:]], width))
    pieces = [mathrm(n) + ("," if i < len(parts) - 1 else r"\Bigr)") for i, n in enumerate(parts)]
    pieces[0] = function + r"\Bigl(" + pieces[0]
    return equation(lhs, _pack(pieces, width))


def display(lhs: str, expr: sp.Expr) -> str:
    """One expression as its own align* block."""
    return align(expression(lhs, expr))


def names_sum(lhs: str, parts: list[str], function: str = "") -> str:
    """One sum of named parts as its own align* block."""
    return align(names(lhs, parts, function))


def inline(expr: sp.Expr) -> str:
    """A short expression as inline math in one line of symbols, which TeX may break after a + or -: products as
    juxtaposition, quotients with a slash (h(1 + k/a)/t, never a nested fraction), letters as in the formulas."""
    body, defs, names = opaque(sp.sympify(expr))
    brackets = {}  # an Iverson bracket [L - L_e > 0] as a placeholder word until the letters are set
    for i, sym in enumerate(defs):
        brackets[f"IVERSON{i}"] = names[sym]
        body = body.xreplace({sym: sp.Symbol(f"IVERSON{i}", positive=True)})
    text = _ceilings(sp.sstr(body)).replace("Min(", "min(").replace("Max(", "max(")
    text = re.sub(r"\*\*(\d+)", r"^\1", text)
    out = _math(text).replace("min", r"\min").replace("max", r"\max").replace(" ^ ", "^")
    out = out.replace("LCEIL (", r"\lceil ").replace("LCEIL(", r"\lceil ").replace("RCEIL", r"\rceil")
    for word, tex in brackets.items():
        out = out.replace(word, tex)
    return "$" + out + "$"


def _ceilings(text: str) -> str:
    """ceiling(x) in sympy's text as LCEIL(x RCEIL, so that the brackets survive the letters' setting."""
    while "ceiling(" in text:
        start = text.index("ceiling(")
        depth, i = 0, start + len("ceiling")
        for i in range(start + len("ceiling"), len(text)):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            if depth == 0:
                break
        text = text[:start] + "LCEIL(" + text[start + len("ceiling(") : i] + " RCEIL" + text[i + 1 :]
    return text


def breakable(name: str) -> str:
    """A name such as attn_norm_normed32 as text that may break after its underscores (narrow table columns)."""
    return escape(name).replace(r"\_", r"\_\allowbreak{}")


def mathrm(name: str) -> str:
    """A component or buffer name as upright text in math: \\mathrm{embed\\_grad}."""
    return r"\mathrm{" + name.replace("_", r"\_") + "}"
