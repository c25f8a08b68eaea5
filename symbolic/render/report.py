"""The LaTeX report of one configuration (`mem4d latex`, `mem4d report`): what it holds and whether it fits, its
numbers per component and stage, optionally a cluster's plan and a sweep's cross-check with XLA, then the symbols
and the profile's formulas. Figures are files made by the caller (symbolic.render.figures), named in `figures`."""

from __future__ import annotations

import json
from pathlib import Path

from ..config.glossary import inputs_for
from ..config.switches import Switches
from ..estimator.estimate import Estimate, stages_of
from ..recipes import load
from . import formulas_tex
from .tex import escape, prose

GIB = 2**30
PREAMBLE = [
    r"\documentclass[10pt,a4paper]{article}",
    r"\usepackage[T1]{fontenc}",
    r"\usepackage{lmodern}",
    r"\usepackage[margin=2cm]{geometry}",
    r"\usepackage{amsmath}",
    r"\usepackage{graphicx}",
    r"\usepackage{longtable}",
    r"\usepackage{array}",
    r"\allowdisplaybreaks",
    r"\setlength{\parindent}{0pt}",
    r"\setlength{\parskip}{4pt}",
    r"\emergencystretch=2em",
    r"\begin{document}",
]
LETTERS = {
    "dp": "d",
    "tp": "t",
    "pp": "p",
    "cp": "c",
    "vpp": "v_{pp}",
    "seq": "s",
    "mbs": "b",
    "m": "m",
    "weight_bytes": "B_{w}",
    "grad_bytes": "B_{g}",
    "opt_bytes": "B_{o}",
    "act_bytes": "B_{a}",
}


def gib(n: float) -> str:
    return f"{n / GIB:,.2f}"


def figure(path: str, caption: str, width: float = 1.0) -> list[str]:
    """A figure at the text width, where it is named (not floated away from its section): the image and its caption
    kept together on one page. Drawn at that width, its type prints at its own size."""
    return [
        r"\refstepcounter{figure}",
        r"\par\smallskip\noindent\begin{minipage}{\linewidth}\centering",
        rf"\includegraphics[width={width:g}\linewidth]{{{path}}}",
        r"\par\smallskip{\small Figure \thefigure: " + caption + r"}\end{minipage}\par\medskip",
    ]


def _config(result: Estimate, gpu: int, threshold: float) -> list[str]:
    """The configuration as a table of flag = value (with its letter), three pairs a row; a list (the stage split)
    on a line of its own below it, where it can break."""
    cells, lists = [], []
    for key, value in result.training.as_json(result.shape).items():
        if key == "model":
            continue
        if isinstance(value, (list, tuple)):
            lists.append(r"\par\noindent\texttt{" + escape(key) + "}: " + ", ".join(map(str, value)))
            continue
        letter = f" (${LETTERS[key]}$)" if key in LETTERS else ""
        cells.append(r"\texttt{" + escape(key) + "}" + letter + " & " + escape(value))
    cells.append(r"GPU memory & " + f"{gib(gpu)} GiB")
    cells.append(r"fit rule & " + f"{100 * threshold:.0f}\\,\\%")
    cells += [" & "] * (-len(cells) % 3)
    rows = [" & ".join(cells[i : i + 3]) + r" \\" for i in range(0, len(cells), 3)]
    return [r"\begin{tabular}{@{}l r @{\qquad} l r @{\qquad} l r@{}}"] + rows + [r"\end{tabular}"] + lists


def _verdict(result: Estimate, gpu: int, threshold: float) -> str:
    fits = result.fits(gpu, threshold)
    source = (
        "the profile's total"
        if result.peak_from == "total"
        else f"the exact {escape(result.peak_from)} stage, above the profile's total of {gib(result.bytes['total'])} GiB"
    )
    return (
        r"\textbf{" + ("Fits" if fits else "Does not fit") + f": peak {gib(result.peak)} GiB of {gib(gpu)} GiB per "
        f"GPU = {100 * result.peak / gpu:.1f}\\,\\%" + "} "
        f"(rule: under {100 * threshold:.0f}\\,\\% = {gib(threshold * gpu)} GiB, the rule that never ran out of "
        f"memory in the 454 runs of Fujii et al.). The peak is {source}: "
        f"{gib(result.memory['allocated_bytes'])} GiB allocated (the tensors live then, "
        r"\texttt{torch.cuda.max\_memory\_allocated}), " + f"{gib(result.memory['reserved_bytes'])} GiB reserved "
        r"(with the allocator's fragmentation, \texttt{max\_memory\_reserved}), the rest the CUDA context and "
        r"NCCL's buffers outside PyTorch's pool."
    )


def numbers(result: Estimate, gpu: int) -> list[str]:
    """Bytes per component: the profile's most loaded GPU and each pipeline stage, GiB, and the share of the card."""
    stages = [result.most_loaded_stage] if result.uneven else result.stages  # uneven: every rank in _stage_rows
    head = (
        r"component & bytes & GiB & \% of GPU & "
        + " & ".join(f"{escape(s['stage'])} {s['rank']} GiB" for s in stages)
        + r" \\ \hline \endhead"
    )
    lines = [r"\begin{longtable}{@{}l r r r" + " r" * len(stages) + "@{}}", head]
    extra = [n for st in stages for n, x in st["bytes"].items() if n not in result.bytes and x]  # exact stages' own
    for name in [n for n in dict.fromkeys([*result.bytes, *extra]) if n != "total"] + ["total"]:
        value = result.bytes.get(name)
        row = [prose(name)] + (["--"] * 3 if value is None else [f"{value:,}", gib(value), f"{100 * value / gpu:.1f}"])
        row += [gib(s["bytes"].get(name, 0)) for s in stages]
        lines.append((r"\hline " if name == "total" else "") + " & ".join(row) + r" \\")
    peak = [r"\textbf{peak}", f"{result.peak:,}", gib(result.peak), f"{100 * result.peak / gpu:.1f}"]
    peak += [gib(result.peak) if s["stage"] == result.peak_from else "" for s in stages]
    lines.append(" & ".join(peak) + r" \\")
    lines.append(r"\end{longtable}")
    return lines + (_stage_rows(result) if result.uneven else [])


def _stage_rows(result: Estimate) -> list[str]:
    """Uneven stages: every rank as a row, its layers, micro batches in flight and total."""
    lines = [r"\begin{longtable}{r l r r r}", r"rank & stage & layers ($L_r$) & in flight ($m_r$) & GiB \\ \hline"]
    for s in result.stages:
        lines.append(
            f"{s['rank']} & {escape(s['stage'])} & {s['layers']} & {s['in_flight']:g} & {gib(s['bytes']['total'])} \\\\"
        )
    return lines + [r"\end{longtable}"]


_HERE = Path(__file__).resolve().parent
SOURCES = tuple(
    _HERE / name for name in ("report.py", "formulas_tex.py", "tex.py", "expressions.py", "formulas.py", "table.py")
)


def _formulas(module, profile: str, sw: Switches, values: dict[str, int], p: int) -> list[str]:
    """formulas_tex.section through the disk cache (simplifying the expressions is most of a report's time): keyed
    by the profile, its switches and what else the section shows, the stages of this p (paper) or the buffer
    table's bytes at these values (jax)."""
    from ..estimator.codegen import cached

    extra = json.dumps(values if hasattr(module, "table") else [stage for stage, _ in stages_of(p)], sort_keys=True)
    return cached(
        profile,
        sw,
        lambda: {"lines": formulas_tex.section(module, profile, sw, values, p)},
        kind="report",
        sources=SOURCES,
        extra=extra,
    )["lines"]


def document(
    result: Estimate,
    gpu: int,
    threshold: float = 0.8,
    *,
    figures: dict[str, str] | None = None,
    plan: list[str] | None = None,
    crosscheck: list[str] | None = None,
    steptime: list[str] | None = None,
) -> str:
    """The whole .tex source. `figures` maps "stages" to a figure file; `plan` and `crosscheck` are sections made by
    symbolic.render.sections (with their own figures), `steptime` by symbolic.render.steptime_tex."""
    figures = figures or {}
    tr = result.training
    sw = Switches.of(tr, result.overheads, backend=result.backend, shape=result.shape)
    module = load(result.profile)
    lines = PREAMBLE + [
        r"\section*{Per-GPU memory of " + escape(result.shape.name) + f" ({result.shape.param_count / 1e9:,.2f}B "
        r"parameters)}",
        r"Profile \texttt{" + escape(result.profile) + "}: " + prose(module.TITLE) + ". " + prose(module.DESCRIPTION),
        r"\subsection*{Configuration}",
        *_config(result, gpu, threshold),
        r"\par",
        _verdict(result, gpu, threshold),
        r"\subsection*{Bytes per GPU}",
        r"The most loaded GPU as the profile counts it, and each pipeline stage with every tensor placed where it is "
        r"allocated; the fit rule judges the peak, the largest of these.",
    ]
    if "stages" in figures:
        lines += figure(
            figures["stages"],
            "Memory of one GPU per pipeline stage, by component, against the card's "
            f"memory and the {100 * threshold:.0f}\\,\\% line.",
        )
    lines += numbers(result, gpu)
    lines += steptime or []
    lines += plan or []
    lines += crosscheck or []
    lines += formulas_tex.glossary(inputs_for(result.shape, tr), result.shape.moe)
    lines += _formulas(module, result.profile, sw, inputs_for(result.shape, tr), tr.p)
    lines.append(r"\end{document}")
    return "\n".join(lines) + "\n"
