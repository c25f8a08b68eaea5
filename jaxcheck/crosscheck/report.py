"""`mem4d sweep` results: summary numbers over a JSONL file, a rich table, and PNG plots (symbolic.render.sweepfigures)."""

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
    return {
        "n": len(values),
        "median_abs": statistics.median(absolute) if values else None,
        "max_abs": max(absolute) if values else None,
    }


def argument_check(result: dict) -> bool | None:
    """Whether every argument row (params, optimizer, batch and their sum) equals XLA's bytes exactly; None if none."""
    rows = [
        c
        for c in result.get("components") or []
        if (c.get("name") in ARGUMENT_NAMES or c.get("group") == "argument") and c.get("xla") is not None
    ]
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
        "count": len(records),
        **counts,
        "rel_error_total": _stats([e for e, _ in totals]),
        "worst": [
            {
                "key": r["key"],
                "label": r.get("label"),
                "rel_error_total": e,
                "symbolic_total_bytes": r["result"]["symbolic"]["total"],
                "xla_total_bytes": r["result"]["xla"]["total_bytes"],
            }
            for e, r in ranked
        ],
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
    head.add_row(
        str(summary["count"]),
        str(summary["ok"]),
        str(summary["failed"]),
        str(summary["skipped"]),
        _pct(tot["median_abs"]),
        _pct(tot["max_abs"]),
        f"{exact} ({summary['argument_bytes_checked']})",
    )
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
            worst.add_row(
                w["label"],
                f"{w['symbolic_total_bytes'] / 2**30:,.3f}",
                f"{w['xla_total_bytes'] / 2**30:,.3f}",
                f"{100 * w['rel_error_total']:+.2f} %",
            )
        console.print(worst)
    for f in summary["failed_configs"]:
        console.print(f"failed: {f['label']}: {f['error']}", markup=False)
    if summary.get("code"):
        console.print(f"computed by mem4d at git {', '.join(summary['code'])}")


def markdown(summary: dict) -> str:
    """The summary as GitHub markdown tables (for the README), the same numbers as print_summary."""
    tot = summary["rel_error_total"]
    exact = {True: "exact", False: "NOT exact", None: "not reported"}[summary["argument_bytes_exact"]]
    out = [
        "| configs | ok | failed | skipped | median \\|err total\\| | max \\|err total\\| | argument bytes |",
        "|---:|---:|---:|---:|---:|---:|---|",
        f"| {summary['count']} | {summary['ok']} | {summary['failed']} | {summary['skipped']} | "
        f"{_pct(tot['median_abs'])} | {_pct(tot['max_abs'])} | {exact} in {summary['argument_bytes_checked']} |",
        "",
        "| component | n | median \\|err\\| | max \\|err\\| |",
        "|---|---:|---:|---:|",
    ]
    out += [
        f"| {name} | {st['n']} | {_pct(st['median_abs'])} | {_pct(st['max_abs'])} |"
        for name, st in summary["components"].items()
    ]
    out += ["", "| worst configs | symbolic GiB | XLA GiB | err total |", "|---|---:|---:|---:|"]
    out += [
        f"| {w['label']} | {w['symbolic_total_bytes'] / 2**30:,.3f} | {w['xla_total_bytes'] / 2**30:,.3f} | "
        f"{100 * w['rel_error_total']:+.2f} % |"
        for w in summary["worst"]
    ]
    return "\n".join(out) + "\n"


def plot(records: list[dict], directory: str | Path, stem: str) -> list[Path]:
    """scatter (symbolic vs XLA total, log-log, y = x) and stacked bars (symbolic components | XLA arg/out-alias/temp),
    drawn by symbolic.render.sweepfigures (the same figures `mem4d report --from` puts in a report)."""
    from symbolic.render import sweepfigures

    ok = [r for r in latest(records) if r["status"] == "ok"]
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    return [
        sweepfigures.scatter(ok, directory / f"{stem}.scatter.png"),
        sweepfigures.components(ok, directory / f"{stem}.components.png"),
    ]
