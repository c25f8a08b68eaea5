"""A standalone LaTeX document: symbol glossary, the formula of every component, and the numbers of one configuration."""
from __future__ import annotations


from ..config.glossary import inputs_for
from ..config.switches import Switches
from ..config.symbols import ALL, LATEX, MEANING, L_r, m_r, r
from ..estimator.estimate import Estimate
from ..profiles import load
from . import expressions as render
from .formulas import formulas

GIB = 2**30
PUBLISHED = (r"M = \left(6 + \frac{12}{d c}\right)\left[\frac{h v}{t} + \frac{2L}{p} h^{2}\left(\frac{1 + k/a + 1.5 f/h}{t}"
             r" + \frac{1}{h}\right)\right] + \frac{s b h}{t c}\left[\left(12 + \frac{4k}{a} + \frac{8f}{h}\right)L + 8p"
             r" + 4\left(1 + \frac{v}{h}\right)\right]")
_ESCAPES = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
            "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "<": r"$<$", ">": r"$>$"}


def escape(text: str) -> str:
    """Plain text -> LaTeX text mode."""
    return "".join(_ESCAPES.get(ch, ch) for ch in str(text))


def _fit(math: str) -> str:
    """Display math shrunk to the line width when it is wider (graphicx only, so texlive-latex-base suffices)."""
    return (r"\par\noindent\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{$\displaystyle " + math
            + "$}\\par\n")


def _glossary(values: dict[str, float]) -> list[str]:
    lines = [r"\section*{Symbols}", r"\begin{longtable}{l l r}", r"symbol & meaning & value \\ \hline"]
    for sym in ALL:
        lines.append(f"${LATEX.get(sym, sym.name)}$ & {escape(MEANING[sym])} & {values[sym.name]:,} \\\\")
    for sym in (r, L_r, m_r):
        lines.append(f"${LATEX.get(sym, sym.name)}$ & {escape(MEANING[sym])} & per stage \\\\")
    return lines + [r"\end{longtable}"]


def _formulas(profile: str, sw: Switches) -> list[str]:
    lines = [r"\section*{Formulas (bytes per GPU)}"]
    for item in formulas(profile, sw):
        lines.append(r"\subsection*{" + escape(item.name) + "}")
        lines.append(escape(item.doc) + r"\\")
        lines.append(_fit(render.latex(item.expr)))
    return lines


def _stage_rows(result: Estimate) -> list[str]:
    """Every listed rank as a row: its layers, micro batches in flight and total."""
    lines = [r"\begin{longtable}{r l r r r}", r"rank & stage & layers ($L_r$) & in flight ($m_r$) & GiB \\ \hline"]
    for s in result.stages:
        lines.append(f"{s['rank']} & {s['stage']} & {s['layers']} & {s['in_flight']:g} & "
                     f"{s['bytes']['total'] / GIB:,.2f} \\\\")
    return lines + [r"\end{longtable}"]


def _numbers(result: Estimate, gpu: int, threshold: float) -> list[str]:
    stages = [result.most_loaded_stage] if result.uneven else result.stages  # uneven: every rank in _stage_rows
    cols = "l r r" + " r" * len(stages)
    head = "component & bytes & GiB & " + " & ".join(f"{s['stage']} {s['rank']} GiB" for s in stages) + r" \\ \hline"
    lines = [r"\section*{Numbers for this configuration}", r"\begin{longtable}{" + cols + "}", head]
    for name, value in result.bytes.items():
        row = [escape(name), f"{value:,}", f"{value / GIB:,.2f}"] + [f"{s['bytes'].get(name, 0) / GIB:,.2f}" for s in stages]
        lines.append((r"\hline " if name == "total" else "") + " & ".join(row) + r" \\")
    lines.append(r"\end{longtable}")
    if result.uneven:
        lines += _stage_rows(result)
    verdict = "fits" if result.fits(gpu, threshold) else "does not fit"
    source = "the total" if result.peak_from == "total" else f"the exact {escape(result.peak_from)} stage"
    lines.append(f"Total {result.bytes['total'] / GIB:,.2f} GiB; peak {result.peak / GIB:,.2f} GiB ({source}) of "
                 f"{gpu / GIB:,.2f} GiB per GPU: {verdict} under the {threshold * 100:.0f}\\,\\% rule of Fujii et al.")
    return lines


def document(result: Estimate, gpu: int, threshold: float = 0.8) -> str:
    """The whole .tex source for one estimate (its profile, switches, model and training config)."""
    tr = result.training
    sw = Switches.of(tr, result.overheads, result.shape.tied)
    module = load(result.profile)
    config = ", ".join(f"{key}={value}" for key, value in tr.as_json(result.shape).items())
    lines = [
        r"\documentclass[10pt]{article}", r"\usepackage[margin=2cm]{geometry}", r"\usepackage{amsmath}",
        r"\usepackage{graphicx}", r"\usepackage{longtable}", r"\begin{document}",
        r"\section*{mem4d: per-GPU memory of " + escape(result.shape.name) + "}",
        r"\noindent Profile \texttt{" + escape(result.profile) + "}: " + escape(module.TITLE) + ". "
        + escape(module.DESCRIPTION) + r"\par\smallskip",
        r"\noindent Configuration: " + escape(config) + r".\par\smallskip",
        r"\noindent Published closed form (Fujii et al. 2024, arXiv 2411.06465), which the profile's total equals at "
        r"$B_w, B_g, B_o, B_a = 2, 4, 12, 2$, $v_{pp} = 1$, $m \ge p$, without overheads:",
        _fit(PUBLISHED),
    ]
    lines += _glossary(inputs_for(result.shape, tr))
    lines += _formulas(result.profile, sw)
    lines += _numbers(result, gpu, threshold)
    lines.append(r"\end{document}")
    return "\n".join(lines) + "\n"



