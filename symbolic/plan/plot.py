"""`mem4d plan --plot`: peak memory over (tp, pp) at the best configuration's cp, dp = N / (tp pp cp) (matplotlib, Agg)."""
from __future__ import annotations

import numpy as np

from ..config.errors import ConfigError

GiB = 2**30


def grid(plan, c: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """tp values, pp values and the lowest peak bytes (the fit rule's figure) of each (tp, pp) at context parallel c
    (NaN where none)."""
    r = plan.rows
    at_c = r["c"] == c
    tps, pps = np.unique(r["t"][at_c]), np.unique(r["p"][at_c])
    peak = np.full((len(pps), len(tps)), np.nan)
    ti = np.searchsorted(tps, r["t"][at_c])
    pi = np.searchsorted(pps, r["p"][at_c])
    np.fmin.at(peak, (pi, ti), r["peak"][at_c])
    return tps, pps, peak


def plot(plan, path: str) -> None:
    """Write the heat map to `path`; the best configuration is outlined, cells over the limit are marked x.

    With both dp and cp fixed, tp * pp would be fixed too and the grid one diagonal, so cp is held at the best
    configuration's value and dp follows from N; each cell is the lowest peak over vpp, mbs, recompute and ZeRO
    stage, so a cell over the limit means no choice of those fits."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if plan.evaluated == 0:
        raise ConfigError("nothing to plot: no valid configuration")
    best = (plan.config(plan.order[0]) if plan.feasible else plan.config(int(plan.rows["peak"].argmin())))["config"]
    tps, pps, peak = grid(plan, best["cp"])
    fig, ax = plt.subplots(figsize=(1.2 * len(tps) + 3, 0.8 * len(pps) + 2.5))
    image = ax.imshow(peak / GiB, origin="lower", cmap="viridis", aspect="auto")
    fig.colorbar(image, ax=ax, label="lowest peak memory, GiB")
    for (pi, ti), value in np.ndenumerate(peak):
        if np.isnan(value):
            continue
        mark = "" if value < plan.limit else " x"
        bright = image.norm(value / GiB) > 0.6  # viridis turns yellow: dark text there
        ax.text(ti, pi, f"{value / GiB:.0f}{mark}", ha="center", va="center", color="k" if bright else "w", fontsize=8)
    bt, bp = int(np.searchsorted(tps, best["tp"])), int(np.searchsorted(pps, best["pp"]))
    ax.add_patch(plt.Rectangle((bt - 0.5, bp - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=2))
    ax.set_xticks(range(len(tps)), [str(int(x)) for x in tps])
    ax.set_yticks(range(len(pps)), [str(int(x)) for x in pps])
    ax.set_xlabel("tensor parallel tp")
    ax.set_ylabel("pipeline parallel pp")
    x = plan.cluster
    ax.set_title(f"{x.shape.name}, {x.gpus} GPUs, cp={best['cp']}, dp = N/(tp pp cp): lowest peak over vpp, mbs, "
                 f"recompute, zero\nlimit {plan.limit / GiB:.1f} GiB (x: over); red: best ranked", fontsize=9)
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=120)
    except OSError as err:
        raise ConfigError(f"cannot write {path}: {err.strerror}") from None
    finally:
        plt.close(fig)
