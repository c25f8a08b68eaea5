"""The report's optional sections: a cluster's plan (its feasible region and best configurations) and a sweep's
cross-check of the `jax` profile with XLA. Each takes plain results and the paths of its figures."""

from __future__ import annotations

from .report import GIB, figure, gib
from ..plan.policies import ABBREVIATIONS, short_label
from .tex import escape

PLAN_COLUMNS = ("dp", "tp", "pp", "cp", "vpp", "mbs", "m", "recompute", "zero")


def plan(result, gpu: int, threshold: float, heat_map: str | None, top: int = 10, system=None) -> list[str]:
    """The plan of a cluster (symbolic.plan.result.PlanResult): what was searched, the feasible region, and the best
    configurations with what ranks them: the step-time model's tokens/s/GPU on `system` (and the best one's
    breakdown), or without a system the proxy's terms."""
    x, rows = result.cluster, result.rows
    lines = _plan_intro(result, gpu, threshold, system)
    if heat_map:
        lines += figure(
            heat_map,
            "Feasible region: the lowest peak of each "
            + (
                "(ep, pp) at the best configuration's tp and cp"
                if x.shape.moe
                else "(tp, pp) at the best configuration's cp"
            )
            + " (dp $= N / (\\mathrm{tp}\\,\\mathrm{pp}\\,\\mathrm{cp})$), over every vpp, micro batch, "
            "recompute policy" + (", expert TP size" if x.shape.moe else "") + " and ZeRO stage; green "
            "where it fits under the limit, red where no choice of those fits, "
            + ("the best ranked configuration" if result.feasible else "the lowest peak")
            + " outlined.",
        )
    if not result.feasible:
        best = int(rows["peak"].argmin())
        return lines + [f"No configuration fits; the smallest peak is {rows['peak'][best] / GIB:,.1f} GiB."]
    lines += _plan_table(result, top, system)
    if system:
        from ..time.evaluate import step_time
        from .steptime_tex import breakdown

        best = result.training(int(result.order[0]))
        lines += [r"\paragraph{The first one's step time}"] + breakdown(step_time(x.shape, best, system))
    return lines


def _plan_intro(result, gpu: int, threshold: float, system) -> list[str]:
    """The plan section's title and what was searched, how many fit, and how they are ranked."""
    x = result.cluster
    by = (
        r"by the step-time model's predicted tokens/s/GPU on " + escape(system.name) + r" (docs/time.md; "
        r"	exttt{" + escape("mem4d estimate --system") + r"} prints a configuration's breakdown)."
        if system
        else r"by a throughput proxy: score $=$ ideal compute time / proxy step time, where the step time adds the "
        r"pipeline bubble, recompute and the TP, CP, DP and PP communication of ring collectives "
        r"(\texttt{" + escape("mem4d plan --explain") + r"} prints its formulas). It orders configurations; it does "
        r"not predict throughput."
    )
    return [
        r"\section*{Plan: " + escape(x.shape.name) + f" on {x.gpus:,} GPUs" + "}",
        f"Every valid $(d, t, p, c, v_{{pp}}, b)$ with $d t p c = {x.gpus:,}$ at $s = {x.s:,}$ and "
        f"gbs $= {x.gbs:,}$"
        + (", every expert layout (ep, etp)" if x.shape.moe else "")
        + f", crossed with every recompute policy and ZeRO stage: {result.valid:,} "
        r"configurations, as \texttt{" + escape("mem4d plan") + f"}} counts them ({result.evaluated:,} kept once a "
        f"balanced split no wider than the even one is left to the even row), of which {result.feasible:,} have "
        f"a peak under {100 * threshold:.0f}\\,\\% of {gib(gpu)} GiB $=$ {result.limit / GIB:,.1f} GiB "
        f"({escape(result.profile)} profile). They are ranked " + by,
    ]


def _plan_table(result, top: int, system) -> list[str]:
    """The best configurations' table: the sizes, recompute, ZeRO, peak, the proxy's terms (without a system) and
    the score or predicted tokens/s/GPU."""
    x, rows = result.cluster, result.rows
    columns = PLAN_COLUMNS[:4] + ("ep", "etp") + PLAN_COLUMNS[4:] if x.shape.moe else PLAN_COLUMNS
    terms = () if system else ("bubble", "T_tp", "T_cp", "T_dp", "T_pp")
    head = columns + (
        "peak GiB",
        *(f"$T_{{{k[2:]}}}$ s" if k != "bubble" else k for k in terms),
        "tokens/s/GPU" if system else "score",
    )
    lines = [
        r"\paragraph{Best configurations} The table lists the "
        + str(min(top, result.feasible))
        + (
            r" best ranked by predicted tokens/s/GPU; the first one's step time follows it."
            if system
            else r" best ranked with the proxy's terms: the bubble share $(p - 1)/(v_{pp} m + p - 1)$ and the seconds "
            r"each parallel dimension spends communicating per step; a configuration wins by keeping those small "
            r"while its memory fits."
        ),
        # #, the sizes up to m, recompute (left), zero, peak, the proxy's terms, the score: one spec a cell
        r"{\small\setlength{\tabcolsep}{3.5pt}\begin{longtable}{@{}r"
        + " r" * (len(columns) - 2)
        + " l r r"
        + " r" * (len(terms) + 1)
        + "@{}}",
        "\\# & " + " & ".join(escape(h) if "$" not in h else h for h in head) + r" \\ \hline \endhead",
    ]
    for rank, i in enumerate(result.order[:top], 1):
        row = result.config(int(i))
        cfg = row["config"]
        cells = [str(rank)] + [escape(short_label(cfg) if c == "recompute" else cfg[c]) for c in columns]
        cells += [f"{row['peak_bytes'] / GIB:,.1f}"] + [f"{rows[k][i]:.3f}" for k in terms]
        cells.append(f"{row['score']:,.0f}" if system else f"{row['score']:.3f}")
        lines.append(" & ".join(cells) + r" \\")
    return lines + [r"\end{longtable}}", "Recompute: " + escape(ABBREVIATIONS) + "."]


def crosscheck(summary: dict, source: str, targets: list[str], scatter: str | None, errors: str | None) -> list[str]:
    """The `jax` profile against XLA over a sweep's configurations: counts, errors, figures, the worst ones."""
    tot = summary["rel_error_total"]
    pct = lambda v: "--" if v is None else f"{100 * v:.2f}\\,\\%"
    exact = {True: "exact in all", False: "not exact in some of", None: "not reported for"}[
        summary["argument_bytes_exact"]
    ]
    lines = [
        r"\section*{Cross-check with XLA}",
        r"The symbolic \texttt{jax} profile (a buffer table of jaxcheck's compiled train step) against XLA's "
        f"memory analysis of the same step, from the sweep records in \\texttt{{{escape(source)}}} "
        f"(compiled for {escape(', '.join(targets)) or 'unknown targets'}; mem4d at git "
        f"{escape(', '.join(summary.get('code') or ['unknown']))}): {summary['count']} configurations, "
        f"{summary['ok']} compiled, {summary['failed']} failed, {summary['skipped']} skipped. Median "
        f"$|$error$|$ of the total {pct(tot['median_abs'])}, largest {pct(tot['max_abs'])}; argument bytes "
        f"{exact} {summary['argument_bytes_checked']}.",
    ]
    if scatter:
        lines += figure(
            scatter, "Symbolic vs XLA total bytes per device, one point per configuration, and $y = x$.", width=0.62
        )
    if errors:
        lines += figure(
            errors,
            "Relative error per component where XLA reports a figure of its own: every "
            "configuration (dots), the median (bar) and the range (whiskers).",
        )
    if summary["worst"]:
        head = r"configuration & symbolic GiB & XLA GiB & error \\ \hline"
        # the configuration column wraps (a label with uneven stages or a config.json path outgrows the line)
        lines += [
            r"\begin{longtable}{@{}p{0.58\linewidth} r r r@{}}",  # the title a row: never parted from it
            r"\multicolumn{4}{@{}l}{\textbf{Largest errors}} \\[2pt]",
            head + r" \endfirsthead",
            head + r" \endhead",
        ]
        for w in summary["worst"]:
            lines.append(
                f"\\raggedright {escape(w['label'])} & {w['symbolic_total_bytes'] / GIB:,.3f} & "
                f"{w['xla_total_bytes'] / GIB:,.3f} & {100 * w['rel_error_total']:+.2f}\\,\\% \\\\"
            )
        lines.append(r"\end{longtable}")
    return lines
