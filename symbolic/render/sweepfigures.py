"""Figures of `mem4d sweep` records (verify's JSON per configuration): symbolic vs XLA totals with y = x, the
relative error of every component, and stacked per-component bars. `mem4d sweep` and `mem4d report --from` both draw
them from here; the records are the README's sweep schema, already reduced to the latest `ok` one per key."""

from __future__ import annotations

import statistics
from pathlib import Path

from .figures import TEXT_WIDTH_IN, pyplot, save

GiB = 2.0**30


def scatter(ok: list[dict], path: str | Path, dpi: int = 120, width: float = 6.5) -> Path:
    """Symbolic vs XLA total per device (GiB, log-log), one colour per model, and the y = x line."""
    with pyplot() as plt:
        sym = [r["result"]["symbolic"]["total"] / GiB for r in ok]
        xla = [r["result"]["xla"]["total_bytes"] / GiB for r in ok]
        fig, ax = plt.subplots(figsize=(width, width * 0.92))
        models = [str(r.get("config", {}).get("model", "?")) for r in ok]
        models = [Path(m).stem if "/" in m else m for m in models]  # a config.json by path: its file's name
        for model in dict.fromkeys(models):
            pts = [(x, y) for x, y, m in zip(xla, sym, models) if m == model]
            ax.scatter([x for x, _ in pts], [y for _, y in pts], s=18, alpha=0.8, label=model)
        lo, hi = (min(sym + xla) / 1.5, max(sym + xla) * 1.5) if ok else (1e-3, 1.0)
        ax.plot([lo, hi], [lo, hi], "k--", lw=1, label="y = x")
        ax.set(
            xscale="log",
            yscale="log",
            xlim=(lo, hi),
            ylim=(lo, hi),
            xlabel="XLA total per device (GiB)",
            ylabel="symbolic total per device (GiB)",
            title=f"symbolic vs XLA, {len(ok)} configs",
        )
        ax.legend()
        return save(fig, path, dpi)


def errors(ok: list[dict], path: str | Path, dpi: int = 150) -> Path:
    """Per component with an XLA figure of its own: every configuration's relative error (dots), the median (bar)
    and the range (error bar), in percent of XLA's bytes."""
    with pyplot() as plt:
        by_name: dict[str, list[float]] = {}
        for r in ok:
            for comp in r["result"].get("components") or []:
                if comp.get("rel_error") is not None:
                    by_name.setdefault(comp["name"], []).append(100 * comp["rel_error"])
        names = list(by_name)
        fig, ax = plt.subplots(figsize=(TEXT_WIDTH_IN, 3.2))
        for i, name in enumerate(names):
            vals = sorted(by_name[name])
            median = statistics.median(vals)
            ax.bar(i, median, 0.6, color="tab:blue", alpha=0.35)
            ax.errorbar(i, median, yerr=[[median - vals[0]], [vals[-1] - median]], color="black", capsize=4, lw=1)
            spread = [i + 0.22 * ((j % 7) / 6 - 0.5) for j in range(len(vals))]
            ax.scatter(spread, vals, s=6, color="tab:blue", alpha=0.7, zorder=3)
        ax.axhline(0, color="black", lw=0.8)
        ax.set_xticks(range(len(names)), names, rotation=20, ha="right")
        ax.set_ylabel("(symbolic - XLA) / XLA, %")
        ax.set_title(
            f"error per component over {len(ok)} configurations: median (bar), min to max (whiskers), each (dots)"
        )
        return save(fig, path, dpi)


def _group_rank(name: str) -> int:
    """Stack the symbolic components in XLA's order (argument, output, temp) as the `jax` profile groups them."""
    from ..recipes.jax.profile import group_of

    return ("argument", "output", "temp").index(group_of(name))


def components(ok: list[dict], path: str | Path, dpi: int = 110) -> Path:
    """Per config, two stacked bars as fractions of XLA's total: symbolic components, XLA argument / output-alias / temp."""
    with pyplot() as plt:
        names = sorted(dict.fromkeys(k for r in ok for k in r["result"]["symbolic"] if k != "total"), key=_group_rank)
        fig, ax = plt.subplots(figsize=(max(8.0, 0.42 * len(ok) + 3), 6))
        cmap = plt.get_cmap("tab20")
        xs = range(len(ok))
        width = 0.4
        bottom = [0.0] * len(ok)
        for i, name in enumerate(names):
            vals = [r["result"]["symbolic"].get(name, 0) / r["result"]["xla"]["total_bytes"] for r in ok]
            ax.bar([x - width / 2 for x in xs], vals, width, bottom=bottom, color=cmap(i % 20), label=f"sym: {name}")
            bottom = [b + v for b, v in zip(bottom, vals)]
        parts = (
            ("argument", lambda x: x["argument_bytes"]),
            ("output - alias", lambda x: x["output_bytes"] - x["alias_bytes"]),
            ("temp", lambda x: x["temp_bytes"]),
        )
        bottom = [0.0] * len(ok)
        for j, (name, get) in enumerate(parts):
            vals = [get(r["result"]["xla"]) / r["result"]["xla"]["total_bytes"] for r in ok]
            ax.bar(
                [x + width / 2 for x in xs],
                vals,
                width,
                bottom=bottom,
                color=("0.25", "0.5", "0.75")[j],
                hatch="//",
                edgecolor="white",
                label=f"XLA: {name}",
            )
            bottom = [b + v for b, v in zip(bottom, vals)]
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_xticks(list(xs), [r.get("label", r["key"]) for r in ok], rotation=90, fontsize=7)
        ax.set(ylabel="fraction of XLA total per device", title="left: symbolic components, right: XLA buffers")
        ax.legend(fontsize=7, ncol=2, bbox_to_anchor=(1.01, 1), loc="upper left")
        return save(fig, path, dpi)
