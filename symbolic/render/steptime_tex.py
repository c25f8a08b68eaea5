"""The report's step time (symbolic.time): a configuration's components in seconds on a system, with tokens/s/GPU and
MFU, and each component's closed form (what `mem4d formula --time --latex` prints)."""

from __future__ import annotations

import sympy as sp

from .tex import align, escape, expression, mathrm


def breakdown(time: dict) -> list[str]:
    """The `time` block of `mem4d estimate --json` as a table: each non-zero component's seconds and share."""
    if "refused" in time:
        return ["Step time: not stated (" + escape(time["refused"]) + ")."]
    lines = [
        (
            f"On {escape(time['system'])} ({escape(time['card'])}, linear layers in {escape(time['precision'])}): "
            f"{time['tokens_per_s_per_gpu']:,.0f} tokens/s/GPU, {time['model_tflops_per_gpu']:,.0f} model "
            f"TFLOP/s/GPU, MFU {100 * time['mfu']:.1f}\\,\\% of the dense BF16 peak."
        ),
        r"\begin{longtable}{@{}l r r@{}}",
        r"component & seconds & \% of step \\ \hline",
    ]
    for name, value in time["breakdown"].items():
        if value:
            lines.append(f"${mathrm(name)}$ & {value:.4f} & {100 * value / time['step_s']:.1f} \\\\")
    return lines + [r"\hline", f"step & {time['step_s']:.4f} & 100.0 \\\\", r"\end{longtable}"]


def section(time: dict, shape, training) -> list[str]:
    """The report's step-time section: the configuration's breakdown and the closed forms it evaluates."""
    lines = [
        r"\subsection*{Step time}",
        (
            "The step-time model (Megatron-Core's step: one GPU of the slowest pipeline stage, forward and twice "
            "the backward per micro batch, the bubble, the exposed data-parallel traffic and the optimizer; every "
            "figure a cited measurement, docs/time.md)."
        ),
    ]
    lines += breakdown(time)
    if "refused" in time:
        return lines
    from ..time.choices import Choices
    from ..time.step import step
    from ..time.symbols import BY_NAME, LATEX, MEANING

    shown = {sym: sp.Symbol(LATEX[name], positive=True) for name, sym in BY_NAME.items()}
    parts = [x._replace(expr=x.expr.xreplace(shown)) for x in step(Choices.of(shape, training))]
    lines.append(
        r"\paragraph{Its components} in seconds per step (\texttt{"
        + escape("mem4d formula --time --latex")
        + "} prints them; the glossary's letters are in the Symbols section):"
    )
    widest = max(len(x.name) for x in parts) + 10
    lines.append(align(*(expression(mathrm(x.name), x.expr, widest) for x in parts)))
    used = {str(x) for part in parts for x in part.expr.free_symbols}
    lines += [r"\begin{longtable}{@{}l >{\raggedright\arraybackslash}p{0.85\linewidth}@{}}"]
    lines += [f"${LATEX[name]}$ & {escape(meaning)} \\\\" for name, meaning in MEANING.items() if LATEX[name] in used]
    return lines + [r"\end{longtable}"]
