"""`mem4d sweep` results: summary numbers over a JSONL file, a rich table, and PNG plots (matplotlib Agg, imported here only)."""
from __future__ import annotations

import json
import statistics
from pathlib import Path

ARGUMENT_NAMES = ("arguments", "argument")  # verify's row (group sum) that XLA's argument_bytes checks


def latest(records: list[dict]) -> list[dict]:
    """The last record of each key, in first-seen order (a retried config replaces its earlier record)."""
    by_key: dict[str, dict] = {}
    for record in records:
        by_key.pop(record["key"], None)
        by_key[record["key"]] = record
    return list(by_key.values())


def _stats(values: list[float]) -> dict:
    absolute = [abs(v) for v in values]
    return {"n": len(values), "median_abs": statistics.median(absolute) if values else None,
            "max_abs": max(absolute) if values else None}


def argument_check(result: dict) -> bool | None:
    """Whether every argument row (params, optimizer, batch and their sum) equals XLA's bytes exactly; None if none."""
    rows = [c for c in result.get("components") or []
            if (c.get("name") in ARGUMENT_NAMES or c.get("group") == "argument") and c.get("xla") is not None]
    return all(int(c["symbolic"]) == int(c["xla"]) for c in rows) if rows else None


def summarize(records: list[dict], worst: int = 5) -> dict:
    """Counts by status, |rel_error_total| median/max, the worst configs, per-component |rel_error| where XLA has a figure."""
    records = latest(records)
    ok = [r for r in records if r["status"] == "ok"]
    counts = {s: sum(r["status"] == s for r in records) for s in ("ok", "failed", "skipped")}
    totals = [(r["result"]["rel_error_total"], r) for r in ok]
    ranked = sorted(totals, key=lambda pair: -abs(pair[0]))[:worst]
    components: dict[str, list[float]] = {}
    for r in ok:
        for comp in r["result"].get("components") or []:
            if comp.get("xla") is not None and comp.get("rel_error") is not None:
                components.setdefault(comp["name"], []).append(comp["rel_error"])
    args = [argument_check(r["result"]) for r in ok]
    known = [a for a in args if a is not None]
    return {
        "count": len(records), **counts,
        "rel_error_total": _stats([e for e, _ in totals]),
        "worst": [{"key": r["key"], "label": r.get("label"), "rel_error_total": e,
                   "symbolic_total_bytes": r["result"]["symbolic"]["total"],
                   "xla_total_bytes": r["result"]["xla"]["total_bytes"]}
                  for e, r in ranked],
        "components": {name: _stats(vals) for name, vals in components.items()},
        "argument_bytes_exact": (all(known) if known else None),
        "argument_bytes_checked": len(known),
        "failed_configs": [{"label": r.get("label"), "error": r["error"]} for r in records if r["status"] == "failed"],
        "code": sorted({r["code"] for r in records if r.get("code")}),  # git commits that computed the records
    }


def summary_path(output: str | Path) -> Path:
    """results.jsonl -> results.summary.json, next to the output."""
    output = Path(output)
    return output.with_name(output.stem + ".summary.json")


def write_summary(summary: dict, output: str | Path) -> Path:
    path = summary_path(output)
    path.write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    return path


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.2f} %"


def print_summary(summary: dict, console) -> None:
    """The summary as rich tables: overall, per component, worst configs."""
    from rich.table import Table

    tot = summary["rel_error_total"]
    exact = {True: "exact", False: "NOT exact", None: "not reported"}[summary["argument_bytes_exact"]]
    head = Table(title="mem4d sweep: symbolic vs XLA total per device, |err| = |symbolic - XLA| / XLA")
    for col in ("configs", "ok", "failed", "skipped", "median |err|", "max |err|", "argument bytes (n)"):
        head.add_column(col, justify="right")
    head.add_row(str(summary["count"]), str(summary["ok"]), str(summary["failed"]), str(summary["skipped"]),
                 _pct(tot["median_abs"]), _pct(tot["max_abs"]), f"{exact} ({summary['argument_bytes_checked']})")
    console.print(head)
    if summary["components"]:
        comp = Table(title="per component (where XLA has its own figure)")
        for col, just in (("component", "left"), ("n", "right"), ("median |err|", "right"), ("max |err|", "right")):
            comp.add_column(col, justify=just)
        for name, st in summary["components"].items():
            comp.add_row(name, str(st["n"]), _pct(st["median_abs"]), _pct(st["max_abs"]))
        console.print(comp)
    if summary["worst"]:
        worst = Table(title=f"worst {len(summary['worst'])} configs by |err total|")
        for col, just in (("config", "left"), ("symbolic GiB", "right"), ("XLA GiB", "right"), ("err total", "right")):
            worst.add_column(col, justify=just)
        for w in summary["worst"]:
            worst.add_row(w["label"], f"{w['symbolic_total_bytes'] / 2**30:,.3f}", f"{w['xla_total_bytes'] / 2**30:,.3f}",
                          f"{100 * w['rel_error_total']:+.2f} %")
        console.print(worst)
    for f in summary["failed_configs"]:
        console.print(f"failed: {f['label']}: {f['error']}", markup=False)
    if summary.get("code"):
        console.print(f"computed by mem4d at git {', '.join(summary['code'])}")


def markdown(summary: dict) -> str:
    """The summary as GitHub markdown tables (for the README), the same numbers as print_summary."""
    tot = summary["rel_error_total"]
    exact = {True: "exact", False: "NOT exact", None: "not reported"}[summary["argument_bytes_exact"]]
    out = ["| configs | ok | failed | skipped | median \\|err total\\| | max \\|err total\\| | argument bytes |",
           "|---:|---:|---:|---:|---:|---:|---|",
           f"| {summary['count']} | {summary['ok']} | {summary['failed']} | {summary['skipped']} | "
           f"{_pct(tot['median_abs'])} | {_pct(tot['max_abs'])} | {exact} in {summary['argument_bytes_checked']} |", "",
           "| component | n | median \\|err\\| | max \\|err\\| |", "|---|---:|---:|---:|"]
    out += [f"| {name} | {st['n']} | {_pct(st['median_abs'])} | {_pct(st['max_abs'])} |"
            for name, st in summary["components"].items()]
    out += ["", "| worst configs | symbolic GiB | XLA GiB | err total |", "|---|---:|---:|---:|"]
    out += [f"| {w['label']} | {w['symbolic_total_bytes'] / 2**30:,.3f} | {w['xla_total_bytes'] / 2**30:,.3f} | "
            f"{100 * w['rel_error_total']:+.2f} % |" for w in summary["worst"]]
    return "\n".join(out) + "\n"


def plot(records: list[dict], directory: str | Path, stem: str) -> list[Path]:
    """scatter (symbolic vs XLA total, log-log, y = x) and stacked bars (symbolic components | XLA arg/out-alias/temp)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in latest(records) if r["status"] == "ok"]
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    gib = 2.0**30
    sym = [r["result"]["symbolic"]["total"] / gib for r in ok]
    xla = [r["result"]["xla"]["total_bytes"] / gib for r in ok]

    fig, ax = plt.subplots(figsize=(6.5, 6))
    models = [r.get("config", {}).get("model", "?") for r in ok]
    for model in dict.fromkeys(models):
        pts = [(x, y) for x, y, m in zip(xla, sym, models) if m == model]
        ax.scatter([x for x, _ in pts], [y for _, y in pts], s=18, alpha=0.8, label=model)
    lo, hi = (min(sym + xla) / 1.5, max(sym + xla) * 1.5) if ok else (1e-3, 1.0)
    ax.plot([lo, hi], [lo, hi], "k--", lw=1, label="y = x")
    ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi), xlabel="XLA total per device (GiB)",
           ylabel="symbolic total per device (GiB)", title=f"symbolic vs XLA, {len(ok)} configs")
    ax.legend()
    scatter = directory / f"{stem}.scatter.png"
    fig.savefig(scatter, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return [scatter, _bars(plt, ok, directory / f"{stem}.components.png")]


def _group_rank(name: str) -> int:
    """Stack the symbolic components in XLA's order (argument, output, temp) as the `jax` profile groups them."""
    try:
        from symbolic.profiles.jax import group_of
    except ImportError:
        return 0
    return ("argument", "output", "temp").index(group_of(name))


def _bars(plt, ok: list[dict], path: Path) -> Path:
    """Per config, two stacked bars as fractions of XLA's total: symbolic components, XLA argument / output-alias / temp."""
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
    parts = (("argument", lambda x: x["argument_bytes"]), ("output - alias", lambda x: x["output_bytes"] - x["alias_bytes"]),
             ("temp", lambda x: x["temp_bytes"]))
    bottom = [0.0] * len(ok)
    for j, (name, get) in enumerate(parts):
        vals = [get(r["result"]["xla"]) / r["result"]["xla"]["total_bytes"] for r in ok]
        ax.bar([x + width / 2 for x in xs], vals, width, bottom=bottom, color=("0.25", "0.5", "0.75")[j],
               hatch="//", edgecolor="white", label=f"XLA: {name}")
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks(list(xs), [r.get("label", r["key"]) for r in ok], rotation=90, fontsize=7)
    ax.set(ylabel="fraction of XLA total per device", title="left: symbolic components, right: XLA buffers")
    ax.legend(fontsize=7, ncol=2, bbox_to_anchor=(1.01, 1), loc="upper left")
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path
