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
    from symbolic.render.console import Console
    from rich.table import Table

    from symbolic.render.title import config_line

    title = (
        f"{config_line(result)} - MiB per device, {_compiled_for(result.get('target'), result['mesh'])} "
        f"({result['compile_seconds']:.1f} s compile)"
    )
    table = Table(title=title, title_justify="left")
    for col, justify in (
        ("component", "left"),
        ("group", "left"),
        ("symbolic", "right"),
        ("XLA", "right"),
        ("measured", "right"),
        ("rel. error", "right"),
    ):
        table.add_column(col, justify=justify)
    measured = result["measured"] or {}
    for row in result["components"]:
        peak = measured.get("peak_bytes") if row["name"] == "total" else None
        style = "bold" if row["group"] == "sum" else None
        table.add_row(
            row["name"],
            row["group"],
            mib(row["symbolic"]),
            mib(row["xla"]),
            mib(peak),
            percent(row["rel_error"]),
            style=style,
        )
    console = Console(min_width=120)
    console.print(table)
    console.print(
        "symbolic: profile jax (mem4d formula --profile jax); XLA: memory_analysis(), total = argument + "
        "output + temp - alias; measured: GPU peak in a fresh process"
        + ("" if result["measured"] else " (none: nothing ran)")
        + "."
    )
    if result.get("stages"):
        console.print(
            f"The pipeline's stages hold different layers: one program per stage kind, each giving every "
            f"stage those ranks' layers (jaxcheck.stages); the table is {result['stage_model']}'s, the "
            f"largest XLA total."
        )
        for st in result["stages"]:
            kinds = f" ({st['dense_layers']} dense, {st['moe_layers']} MoE)" if st["moe_layers"] else ""
            console.print(
                f"  ranks {', '.join(map(str, st['ranks']))}: {st['layers']} layers a stage{kinds}, symbolic "
                f"{mib(st['symbolic_total'])} MiB, XLA {mib(st['xla_total'])} MiB "
                f"({percent(st['rel_error_total'])})"
            )
    target = result.get("target") or {}
    if target.get("platform") == "gpu":
        console.print(
            f"Compiled as written: the {target['description']} target posed with "
            f"{target['compiled_with_memory_bytes'] / 2**30:,.0f} GiB so that XLA's rematerialization changes "
            f"nothing (the card has {target['memory_bytes'] / 2**30:,.2f} GiB; mem4d compile --target "
            f"{target['name']} shows what XLA does to fit it)."
        )
    if result.get("explain"):
        print_explain(result["explain"], console)


def print_explain(details: dict, console) -> None:
    """`mem4d verify --explain`'s tables: XLA's live temporaries per phase (from a dump) next to the profile's, the
    temp of compiled variants, and the residuals one layer stacks."""
    from rich.table import Table

    _figures(
        console,
        "live temporaries per phase: XLA's (buffer assignment of this compile) vs the profile's (MiB)",
        "window",
        details.get("phases", []),
    )
    _figures(console, "XLA's temp taken apart by compiled variants (MiB per device)", "variant", details["variants"])
    for v in details["variants"]:
        if "paper_in_flight" in v:  # 1F1B: the compiled in-flight term beside the paper's
            console.print(
                f"1F1B in flight on the most loaded rank: the compiled rings hold {v['jax_in_flight']} micro "
                f"batches, the paper profile's first stage {v['paper_in_flight']}; one micro batch in flight "
                f"is {mib(v['xla'])} MiB in XLA (one ring slot: the jax step's per-layer tensors x L/p), "
                f"{mib(v['paper_bytes'])} MiB in the paper's per-layer tensors"
            )
    res = details["residuals"]
    table = Table(
        title=f"residuals one layer stacks ({res['trace_shape']}): the pipeline's vs the profile's",
        title_justify="left",
    )
    for col in ("stacked residual", "bytes", "profile tensor", "count", "bytes "):
        table.add_column(col, justify="right" if "bytes" in col or col == "count" else "left")
    for i in range(max(len(res["jax"]), len(res["symbolic"]))):
        j = res["jax"][i] if i < len(res["jax"]) else None
        t = res["symbolic"][i] if i < len(res["symbolic"]) else None
        table.add_row(
            *([j["shape"], f"{j['bytes']:,}"] if j else ["", ""]),
            *([t["name"], str(t["count"]), f"{t['bytes']:,}"] if t else ["", "", ""]),
        )
    table.add_row(
        f"{res['jax_count']} residuals",
        f"{res['jax_bytes']:,}",
        "total",
        str(res["symbolic_count"]),
        f"{res['symbolic_bytes']:,}",
        style="bold",
    )
    console.print(table)


def _figures(console, title: str, first: str, rows: list[dict]) -> None:
    """A table of name | what | symbolic | XLA | relative error."""
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for col in (first, "what", "symbolic", "XLA", "rel. error"):
        table.add_column(col, justify="right" if col in ("symbolic", "XLA", "rel. error") else "left")
    for v in rows:
        table.add_row(v["name"], v["what"], mib(v["symbolic"]), mib(v["xla"]), percent(v["rel_error"]))
    console.print(table)


def _compiled_for(target: dict | None, mesh: dict) -> str:
    """Where the step was compiled: the card (XLA:GPU, deviceless unless measured) or simulated CPU devices."""
    if not target:
        return mesh["platform"]
    return f"XLA:GPU for {target['name']}" if target["platform"] == "gpu" else "XLA:CPU (simulated devices)"
