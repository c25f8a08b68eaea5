"""`mem4d plan`'s output beside its table: --json (streamed row by row), --csv, and what a trainer's file set."""

from __future__ import annotations

import csv
import json
import sys

from ..flags.plan_files import READERS
from ..render.files import replaced
from .plan_table import SEARCHED, layers_text, searched, shown


def print_file(shape, said: dict) -> None:
    """plan --megatron: what came from the file, what plan searched in its stead, what the command line overrode."""
    held = " ".join(f"{key}={value}" for key, value in said["held"].items())
    searched = " ".join(f"{key}={value}" for key, value in said["searched"].items())
    print(
        f"{said['file']}: " + (f"the model ({shape.name}), " if said["model"] else "") + f"{held} from the file; "
        f"searched in its stead: {searched}",
        file=sys.stderr,
    )
    for note in said["overridden"]:
        print(f"{said['file']}: {note}", file=sys.stderr)


def write_json(plan, args, out, said: dict | None = None) -> None:
    """`mem4d plan --json`: _head's object with "configs" the shown rows, one line each, written as they are made (so
    --all over hundreds of thousands of rows never holds their JSON at once)."""
    rows = shown(plan, args)
    from_file = {reader: said for reader in READERS if getattr(args, reader)} if said else {}
    head = {**_head(plan, args), **from_file, "shown": len(rows), "configs": []}
    head = json.dumps(head, indent=1)
    before, _, after = head.rpartition("[]")
    out.write(before + "[")
    for n, i in enumerate(rows):
        out.write(("," if n else "") + "\n  " + json.dumps(plan.config(int(i))))
    out.write(("\n " if len(rows) else "") + "]" + after + "\n")


def _head(plan, args) -> dict:
    """The keys of `mem4d plan --json` but its rows: model, param_count, config (what every row shares), the search."""
    from ..plan.result import reference

    spent = plan.seconds["enumerate"] + plan.seconds["evaluate"]
    shape = plan.cluster.shape
    shared = {k: v for k, v in reference(plan.cluster, plan.profile).as_json(shape).items() if k not in SEARCHED}
    return {
        "model": shape.name,
        "param_count": shape.param_count,
        "config": shared,
        "profile": plan.profile,
        "gpus": plan.cluster.gpus,
        "gpus_per_node": args.gpus_per_node,
        "gpu_mem_bytes": args.gpu_mem,
        "threshold": args.threshold,
        "limit_bytes": int(plan.limit),
        "valid": plan.valid,
        "evaluated": plan.evaluated,
        "complete": plan.complete,
        "feasible": plan.feasible,
        "seconds": spent,
        "build_seconds": plan.seconds["build"],
        "top": None if args.all else args.top,
        "rank_by": args.rank_by,
        **({"system": args.system or "dgx-h100"} if args.rank_by == "time" else {}),
    }


def write_csv(plan, path: str) -> None:
    keys = searched(plan.cluster.shape)
    choice = ("recompute_modules", "ac_every")  # what selective reruns: every row has them in the CSV
    columns = [*keys, *choice, *plan.components, "peak_bytes", "peak_from", "score"]
    with replaced(path, newline="") as handle:  # Ctrl-C leaves no partial file
        writer = csv.writer(handle)
        writer.writerow(columns)
        for i in plan.order:
            row = plan.config(i)
            cells = [layers_text(row["config"][c]) if c == "stage_layers" else row["config"][c] for c in keys]
            cells += [row["config"].get("recompute_modules", "core_attn"), row["config"].get("ac_every", "")]
            writer.writerow(
                cells
                + [row["bytes"].get(c, 0) for c in plan.components]
                + [row["peak_bytes"], row["peak_from"], f"{row['score']:.6f}"]
            )
    print(f"wrote {plan.feasible} configurations to {path}", file=sys.stderr)
