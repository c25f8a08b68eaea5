"""The report's figure of one configuration: per-stage stacked memory bars against the card and the fit line
(matplotlib, Agg, imported only when a figure is drawn)."""

from __future__ import annotations

import contextlib
from pathlib import Path

GiB = 2**30
TEXT_WIDTH_IN = 6.5  # the report's text width (A4, 2 cm margins): figures drawn at this width print at 1:1


STYLE = {
    "font.size": 9,
    "axes.titlesize": 9.5,
    "legend.fontsize": 8,
    "xtick.labelsize": 8.5,
    "ytick.labelsize": 8.5,
    "pdf.fonttype": 42,
}


@contextlib.contextmanager
def pyplot():
    """matplotlib.pyplot on the Agg backend, inside type sizes that read as the report's body text at 1:1 (the
    caller's own matplotlib settings are left as they were)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with plt.rc_context(STYLE):
        yield plt


def save(fig, path: str | Path, dpi: int = 150) -> Path:
    """Write and close a figure (its format from the suffix: .pdf for the report, .png elsewhere)."""
    path = Path(path)
    try:
        fig.savefig(path, dpi=dpi, bbox_inches="tight")
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)
    return path


def _bars(result) -> list[tuple[str, dict[str, int]]]:
    """(label, component bytes) of every bar: the profile's most-loaded total when it differs from every exact stage,
    then each stage; stages holding exactly the same bytes share one bar."""
    bars: list[tuple[str, dict[str, int]]] = []
    for stage in result.stages:
        parts = {k: v for k, v in stage["bytes"].items() if k != "total"}
        same = next((i for i, (_, other) in enumerate(bars) if other == parts), None)
        label = f"{stage['stage']} (rank {stage['rank']})"
        if same is None:
            bars.append((label, parts))
        else:
            bars[same] = (bars[same][0] + "\n= " + label, parts)
    paper = {k: v for k, v in result.bytes.items() if k != "total"}
    if all(parts != paper for _, parts in bars):
        bars.insert(0, ("most loaded,\nas the profile counts", paper))
    return bars


def stage_bars(result, gpu: int, threshold: float, path: str | Path) -> Path:
    """Stacked bars of every component per pipeline stage (GiB per GPU), the card's memory and the fit line."""
    with pyplot() as plt:
        bars = _bars(result)
        names = [n for n in result.bytes if n != "total" and any(parts.get(n, 0) for _, parts in bars)]
        cmap = plt.get_cmap("tab20")
        fig, ax = plt.subplots(figsize=(TEXT_WIDTH_IN, 3.6))
        xs = range(len(bars))
        bottom = [0.0] * len(bars)
        for i, name in enumerate(names):
            values = [parts.get(name, 0) / GiB for _, parts in bars]
            ax.bar(xs, values, 0.55, bottom=bottom, color=cmap(i % 20), label=name, edgecolor="white", linewidth=0.4)
            bottom = [b + v for b, v in zip(bottom, values)]
        for x, top in zip(xs, bottom):
            ax.text(x, top, f"{top:,.1f} GiB", ha="center", va="bottom", fontsize=8.5)
        ax.axhline(gpu / GiB, color="black", lw=1)
        ax.axhline(threshold * gpu / GiB, color="tab:red", lw=1, ls="--")
        ax.text(len(bars) - 0.5, gpu / GiB, f"card {gpu / GiB:,.0f} GiB", ha="right", va="bottom", fontsize=8)
        ax.text(
            len(bars) - 0.5,
            threshold * gpu / GiB,
            f"{100 * threshold:.0f} % rule {threshold * gpu / GiB:,.1f} GiB",
            ha="right",
            va="bottom",
            fontsize=8,
            color="tab:red",
        )
        ax.set_xticks(list(xs), [label for label, _ in bars])
        ax.set_xlim(-0.6, len(bars) - 0.4)
        ax.set_ylim(0, 1.12 * max(max(bottom), gpu / GiB))
        ax.set_ylabel("GiB per GPU")
        ax.set_title(f"{result.shape.name}: memory of one GPU per pipeline stage ({result.profile} profile)")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, title="component", title_fontsize=8)
        return save(fig, path)
