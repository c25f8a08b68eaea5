"""What `mem4d verify` prints: the component table and, with --explain, the variants and residuals tables (rich)."""
from __future__ import annotations


def mib(n) -> str:
    """Bytes as MiB with thousands separators; "-" for None."""
    return "-" if n is None else f"{n / 2**20:,.2f}"


def percent(x) -> str:
    """A relative error as a signed percentage; "-" for None."""
    return "-" if x is None else f"{100 * x:+.2f} %"


def print_verify(result: dict) -> None:
    """`mem4d verify`'s table: component | group | symbolic | XLA | measured | relative error (MiB per device)."""
    from rich.console import Console
    from rich.table import Table

    cfg, mesh = result["config"], result["mesh"]
    title = (f"{result['model']}: dp={cfg['dp']} pp={cfg['pp']} tp={cfg['tp']} cp={cfg['cp']} seq={cfg['seq']} "
             f"mbs={cfg['mbs']} m={cfg['m']} recompute={cfg['recompute']} zero={cfg['zero']} - MiB per device, "
             f"{mesh['platform']} ({result['compile_seconds']:.1f} s compile)")
    table = Table(title=title, title_justify="left")
    for col, justify in (("component", "left"), ("group", "left"), ("symbolic", "right"), ("XLA", "right"),
                         ("measured", "right"), ("rel. error", "right")):
        table.add_column(col, justify=justify)
    measured = result["measured"] or {}
    for row in result["components"]:
        peak = measured.get("peak_bytes") if row["name"] == "total" else None
        style = "bold" if row["group"] == "sum" else None
        table.add_row(row["name"], row["group"], mib(row["symbolic"]), mib(row["xla"]), mib(peak),
                      percent(row["rel_error"]), style=style)
    console = Console(width=max(120, Console().width))
    console.print(table)
    console.print("symbolic: profile jax (mem4d formula --profile jax); XLA: memory_analysis(), total = argument + "
                  "output + temp - alias; measured: GPU peak in a fresh process"
                  + ("" if result["measured"] else " (none on CPU)") + ".")
    if result.get("explain"):
        print_explain(result["explain"], console)


def print_explain(details: dict, console) -> None:
    """`mem4d verify --explain`'s tables: XLA's temp taken apart by variants, and the residuals saved per layer."""
    from rich.table import Table

    table = Table(title="XLA's temp taken apart (MiB per device)", title_justify="left")
    for col in ("variant", "how", "symbolic", "XLA", "rel. error"):
        table.add_column(col, justify="right" if col in ("symbolic", "XLA", "rel. error") else "left")
    for v in details["variants"]:
        table.add_row(v["name"], v["what"], mib(v["symbolic"]), mib(v["xla"]), percent(v["rel_error"]))
    console.print(table)
    res = details["residuals"]
    table = Table(title=f"residuals saved per layer ({res['trace_shape']}): jax saved_residuals vs profile",
                  title_justify="left")
    for col in ("jax residual (per micro batch)", "bytes", "", "profile tensor", "count", "bytes "):
        table.add_column(col, justify="right" if "bytes" in col or col == "count" else "left")
    acts = [r for r in res["jax"] if r["activation"]]
    rows = max(len(acts), len(res["symbolic"]))
    for i in range(rows):
        j = acts[i] if i < len(acts) else None
        t = res["symbolic"][i] if i < len(res["symbolic"]) else None
        table.add_row(*(([f"{j['shape']} {j['what'].split(' from ')[0][:40]}", f"{j['bytes']:,}", ""])
                        if j else ["", "", ""]),
                      *(([t["name"], str(t["count"]), f"{t['bytes']:,}"]) if t else ["", "", ""]))
    table.add_row("activations", f"{res['jax_bytes']:,}", str(res["jax_count"]), "total",
                  str(res["symbolic_count"]), f"{res['symbolic_bytes']:,}", style="bold")
    console.print(table)
    others = [r for r in res["jax"] if not r["activation"]]
    console.print(f"not per micro batch (parameters, their compute-dtype casts, loop-invariant constants): {len(others)} "
                  f"residuals, {sum(r['bytes'] for r in others):,} bytes")
