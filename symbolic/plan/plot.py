"""`mem4d plan --plot`: peak memory over (tp, pp) at the best configuration's cp, dp = N / (tp pp cp), or for a model
with experts over (ep, pp) at its tp and cp, where an MoE user looks first (matplotlib, Agg)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..config.errors import ConfigError

GiB = 2**30


def grid(plan, c: int, x: str = "t", held: dict | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """x values (column `x`: "t" tp, "e" ep), pp values and the lowest peak bytes (the fit rule's figure) of each
    (x, pp) at context parallel c and the `held` columns' values (NaN where none)."""
    r = plan.rows
    at = r["c"] == c
    for name, value in (held or {}).items():
        at &= r[name] == value
    xs, pps = np.unique(r[x][at]), np.unique(r["p"][at])
    peak = np.full((len(pps), len(xs)), np.nan)
    xi = np.searchsorted(xs, r[x][at])
    pi = np.searchsorted(pps, r["p"][at])
    np.fmin.at(peak, (pi, xi), r["peak"][at])
    return xs, pps, peak


def axes(plan, best: dict) -> tuple[str, str, dict, str]:
    """The map's x column and label, the columns held at the best configuration's values, and the title's words:
    (tp, pp) at its cp for a dense model; (ep, pp) at its tp and cp for one with experts (ep decides the experts'
    memory and the all-to-all; dp = N/(tp pp cp) still follows)."""
    if plan.cluster.shape.moe and "e" in plan.rows:
        return "e", "expert parallel ep", {"t": best["tp"]}, f"tp={best['tp']}, cp={best['cp']}"
    return "t", "tensor parallel tp", {}, f"cp={best['cp']}"


def formats() -> tuple[str, ...]:
    """File extensions the plot can be written as: what matplotlib's Agg canvas writes (pgf only where its LaTeX is
    installed)."""
    import shutil

    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    names = sorted(FigureCanvasAgg.get_supported_filetypes())
    return tuple(n for n in names if n != "pgf" or shutil.which(matplotlib.rcParams["pgf.texsystem"]))


def plot(plan, path: str) -> None:
    """Write the heat map to `path`, coloured by fit (green: the lowest peak fits under the limit, red: over it),
    each cell labelled with that peak, the best ranked configuration (or, when none fits, the lowest peak) outlined.

    With both dp and cp fixed, tp * pp would be fixed too and the grid one diagonal, so cp is held at the best
    configuration's value and dp follows from N; each cell is the lowest peak over vpp, mbs, recompute and ZeRO
    stage, so a cell over the limit means no choice of those fits."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    if plan.evaluated == 0:
        raise ConfigError("nothing to plot: no valid configuration")
    best = (plan.config(plan.order[0]) if plan.feasible else plan.config(int(plan.rows["peak"].argmin())))["config"]
    x_col, x_label, held, at_words = axes(plan, best)
    tps, pps, peak = grid(plan, best["cp"], x_col, held)
    fits = np.where(np.isnan(peak), np.nan, (peak < plan.limit).astype(float))
    fig, ax = plt.subplots(figsize=(min(1.2 * len(tps) + 2, 6.5), 0.7 * len(pps) + 1.6))
    colours = ListedColormap(["#f4c7c3", "#b7e1cd"])  # over the limit, fits
    ax.imshow(fits, origin="lower", cmap=colours, vmin=0, vmax=1, aspect="auto")
    for (pi, ti), value in np.ndenumerate(peak):
        if not np.isnan(value):
            ax.text(ti, pi, f"{value / GiB:.0f} GiB", ha="center", va="center", fontsize=9)
    bt, bp = int(np.searchsorted(tps, best["ep" if x_col == "e" else "tp"])), int(np.searchsorted(pps, best["pp"]))
    ax.add_patch(plt.Rectangle((bt - 0.5, bp - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=2.5))
    ax.set_xticks(range(len(tps)), [str(int(x)) for x in tps])
    ax.set_yticks(range(len(pps)), [str(int(x)) for x in pps])
    ax.set_xlabel(x_label)
    ax.set_ylabel("pipeline parallel pp")
    x = plan.cluster
    ax.set_title(
        f"{x.shape.name} on {x.gpus} GPUs at {at_words}, dp = N/(tp pp cp): lowest peak over vpp, "
        f"mbs, recompute, zero" + (", etp" if x_col == "e" else ""),
        fontsize=9,
    )
    handles = [
        Patch(color="#b7e1cd", label=f"fits (< {plan.limit / GiB:.1f} GiB)"),
        Patch(color="#f4c7c3", label="over the limit"),
        Patch(
            facecolor="none", edgecolor="black", linewidth=2, label="best ranked" if plan.feasible else "lowest peak"
        ),
        Patch(facecolor="white", edgecolor="0.7", label="no valid configuration"),
    ]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=8.5)
    fig.tight_layout()
    from ..render.files import replaced  # Ctrl-C leaves no partial file

    try:
        with replaced(path, "wb") as handle:
            fig.savefig(handle, format=Path(path).suffix.lstrip(".").lower(), dpi=120, bbox_inches="tight")
    finally:
        plt.close(fig)
