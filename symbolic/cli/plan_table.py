"""`mem4d plan`'s table: the rows that vary, the memory breakdown, the ranking's score, and what gives way first on a
narrow terminal."""

from __future__ import annotations

from ..flags.values import describe_bytes
from ..plan.policies import label_of

GiB = 2**30
# the table's one "overheads" column (--json and --csv list each): communicators, CUDA context, cuBLAS, fragmentation
# and what torchtitan's pool reserves beyond its tensors (recipes/torchtitan/allocator.py)
OVERHEADS = ("communicators", "cuda_context", "cublas_workspaces", "fragmentation", "allgather_cache", "freed_logits")


def layers_text(split) -> str:
    """A stage split as --stage-layers takes it ("7,8,8,7"); "" for an even split."""
    return ",".join(map(str, split)) if split else ""


# the config keys that vary by row; stage_layers: null (JSON) or "" (CSV, table) for an even split; ep and etp for a
# model with experts
SEARCHED = ("dp", "tp", "pp", "cp", "ep", "etp", "vpp", "mbs", "m", "recompute", "zero", "stage_layers")


def searched(shape) -> tuple[str, ...]:
    """The config keys that vary by row for this model (no ep, etp for a dense one)."""
    return SEARCHED if shape.moe else tuple(key for key in SEARCHED if key not in ("ep", "etp"))


def shown(plan, args):
    """The row indices a table or --json shows, best first: the --top K, or with --all every feasible one."""
    return plan.order if args.all else plan.order[: args.top]


def print_table(plan, args) -> None:
    """The --top (or --all) rows as a table, the notes under it: what every row shares, how they were ranked."""
    from ..render.console import Console, Table

    console = Console()
    table = Table(title=_title(plan, args), see="--csv FILE")
    keys = searched(plan.cluster.shape)
    columns = _columns(table, plan, args, keys)
    for rank, i in enumerate(shown(plan, args), 1):
        table.add_row(*_cells(plan, args, i, rank, keys, columns))
    console.print(table)
    _notes(console, plan, args)


def _title(plan, args) -> str:
    """The table's title: the model, the cluster, how many configurations fit under the limit, the search's time."""
    x = plan.cluster
    spent = plan.seconds["enumerate"] + plan.seconds["evaluate"]
    under = f"under {args.threshold:g} x {args.gpu_mem / GiB:,.2f} GiB = {plan.limit / GiB:,.2f} GiB"
    how = f"{plan.profile} profile, searched in {spent:.3f} s"
    return (
        f"{x.shape.name} on {x.gpus} GPUs, s={x.s}, gbs={x.gbs}: "
        + (
            f"{plan.feasible:,} of {plan.valid:,} configurations {under} ({how}, {plan.evaluated:,} evaluated)"
            if plan.complete
            else f"the {len(shown(plan, args))} best of {plan.valid:,} configurations {under} ({how}, {plan.evaluated:,} "
            f"evaluated)"
        )
        + "; memory in GiB per GPU"
    )


def _columns(table, plan, args, keys) -> tuple[list, list, tuple]:
    """Add the columns (the keys that vary, the breakdown, peak, the proxy's terms with --explain, the score) and
    the order they give way in; return the breakdown's parts, the overheads summed in one column, the proxy's terms."""
    from rich.text import Text

    x = plan.cluster
    for name in ("#", *keys):
        table.add_column(
            Text(name.replace("_", "\n")), justify="left" if name in ("recompute", "stage_layers") else "right"
        )
    parts = [name for name in plan.components if name not in OVERHEADS]
    overheads = [name for name in plan.components if name in OVERHEADS]
    for name in parts[:-1] + (["overheads"] if overheads else []) + parts[-1:]:  # total last
        table.add_column(Text(name.replace("_", "\n")), justify="right", style="bold" if name == "total" else None)
    table.add_column("peak", justify="right", style="bold")
    proxy_cols = (
        ("bubble", "T_r", "T_tp", "T_cp", "T_dp", "T_pp") + (("T_ep", "T_etp") if x.shape.moe else ()) + ("T",)
        if args.explain
        else ()
    )
    for name in proxy_cols:
        table.add_column(name if name == "bubble" else f"{name} s", justify="right")
    table.add_column(Text("tokens/s\n/GPU") if args.rank_by == "time" else "score", justify="right")
    # on a narrow terminal: the breakdown gives way first (right to left), then the proxy's terms, then what a row
    # repeats of the others (m = gbs / (mbs dp), the even split, the rank), then the total (peak decides), etp, mbs, vpp
    names = [str(column.header).replace("\n", "_") for column in table.columns]
    breakdown = [*parts[:-1], *(["overheads"] if overheads else [])][::-1]
    order = [*breakdown, *proxy_cols[::-1], "stage_layers", "m", "#", "total", "etp", "mbs", "vpp"]
    table.give_way = [names.index(n) for n in order if n in names]
    return parts, overheads, proxy_cols


def _cells(plan, args, i: int, rank: int, keys, columns: tuple) -> list[str]:
    """Row i's cells: its rank, the keys that vary, the breakdown, the total, peak, the proxy's terms, the score (the
    step-time model's tokens/s/GPU with --rank-by time, else the proxy's)."""
    parts, overheads, proxy_cols = columns
    row = plan.config(i)
    config = row["config"]
    cells = [
        str(rank),
        *(
            layers_text(config[c]).replace(",", ", ")
            if c == "stage_layers"
            else label_of(config).replace(",", ", ")
            if c == "recompute"
            else str(config[c])
            for c in keys
        ),
    ]
    cells += [f"{row['bytes'][c] / GiB:.2f}" if c in row["bytes"] else "-" for c in parts[:-1]]
    if overheads:
        cells.append(f"{sum(row['bytes'].get(c, 0) for c in overheads) / GiB:.2f}")
    cells.append(f"{row['bytes']['total'] / GiB:.2f}")
    cells.append(f"{row['peak_bytes'] / GiB:.2f}" + ("" if row["peak_from"] == "total" else f" ({row['peak_from']})"))
    cells += [f"{plan.rows[c][i]:.3f}" for c in proxy_cols]
    return cells + [f"{row['score']:,.0f}" if args.rank_by == "time" else f"{row['score']:.3f}"]


def _notes(console, plan, args) -> None:
    """The notes under the table: what every row shares, how many were evaluated, how the rows were ranked, peak."""
    x = plan.cluster
    console.print(
        f"{x.shape.name}: {x.shape.param_count:,} parameters; every row also has sp={x.sp}, "
        f"flash_attn={x.flash_attn}; GPU memory (--gpu-mem): {describe_bytes(args.gpu_mem)}"
    )
    if not plan.complete:
        console.print(
            f"the {plan.evaluated:,} evaluated: in the proxy's order until no row left could rank among the "
            f"{len(shown(plan, args))} shown (docs/plan.md); --all evaluates all and counts those that fit"
        )
    if args.rank_by == "time":
        console.print(
            f"ranked by the step-time model's tokens/s/GPU on {args.system or 'dgx-h100'} (docs/time.md; "
            "--rank-by proxy: the alpha-beta proxy)"
        )
    elif not args.explain:
        console.print(
            "score = ideal compute time / proxy step time (a ranking proxy, not a throughput "
            "prediction; --explain prints its formula)"
        )
    console.print(
        "peak, the figure the fit rule judges: for an even split max(total, every exact pipeline stage's "
        f"total), a stage in brackets holding more than the {plan.profile} profile's total (terms the "
        "closed form leaves out, e.g. the bf16 logits at p = 1); for a row with stage_layers (an uneven "
        "split, --stage-layers in estimate) the most loaded stage alone, which can be below total (a form "
        "of pp equal stages, which does not apply to it)"
    )
