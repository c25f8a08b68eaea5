"""mem4d beside published measured GPU memory (benchmarks/published_runs.toml): each run's figure, mem4d's figure of
the same kind (allocated or reserved) on the same GPU (the last pipeline stage, or the largest over all), the error.

    python benchmarks/published.py [--json] [--markdown] [--megatron | --torchtitan]

--megatron: the 22 Megatron-LM functional-test runs of ../shared/data/measured instead, each verbatim config read by
`mem4d estimate --megatron` (benchmarks/published_megatron.py, which also writes them as data); --torchtitan: its 8
torchtitan rows, each written as a job file and read by `mem4d estimate --torchtitan` (benchmarks/published_titan.py).

No constant in mem4d is set from these figures; where it misses, the README names the term that is unknown.
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from symbolic.config.hfconfig import resolve_model  # noqa: E402
from symbolic.config.shapes import ModelShape  # noqa: E402
from symbolic.config.training import training_from_json  # noqa: E402
from symbolic.estimator.estimate import estimate, memory_kinds  # noqa: E402
from symbolic.recipes import RECIPES, widths  # noqa: E402

GiB = 2**30
RUNS = Path(__file__).with_name("published_runs.toml")


def measured_bytes(run: dict) -> float | list:
    """The run's published figure in bytes (a list where one entry covers several rows)."""
    if "measured_bytes" in run:
        return run["measured_bytes"]
    value = run["measured_gib"]
    return [x * GiB for x in value] if isinstance(value, list) else value * GiB


def mem4d_figure(run: dict) -> tuple[int, dict]:
    """mem4d's bytes of the run's kind on the run's GPU, and the estimate's JSON."""
    profile = RECIPES[run["recipe"]]
    spec = run["model"]
    shape = resolve_model(spec) if isinstance(spec, str) else ModelShape(**spec)
    training = training_from_json({**widths(profile), **run["config"]})
    result = estimate(shape, training, profile, overrides=run.get("overrides"))  # a run's own buffer sizes
    if run["rank"] == "max":
        kinds = result.memory
    else:
        stage = next(s for s in result.stages if s["stage"] == run["rank"])
        kinds = memory_kinds(stage["bytes"])
    return kinds[f"{run['kind']}_bytes"], result.as_json(80 * GiB)


def rows() -> list[dict]:
    out = []
    for run in tomllib.loads(RUNS.read_text())["runs"]:
        row = {
            "id": run["id"],
            "source": run["source"],
            "kind": run["kind"],
            "measured_bytes": measured_bytes(run),
            "expressed": run["expressed"],
            "assumed": run.get("assumed", ""),
            "why": run.get("why", ""),
        }
        if run["expressed"]:
            figure, report = mem4d_figure(run)
            row.update(
                recipe=run["recipe"],
                rank=run["rank"],
                mem4d_bytes=figure,
                error=figure / row["measured_bytes"] - 1,
                config=report["config"],
                components=next(s for s in report["stages"] if run["rank"] in ("max", s["stage"]))["bytes"]
                if run["rank"] != "max"
                else report["bytes"],
            )
        out.append(row)
    return out


def _gib(x) -> str:
    return ", ".join(f"{v / GiB:.2f}" for v in x) if isinstance(x, list) else f"{x / GiB:.2f}"


def markdown(table: list[dict]) -> str:
    lines = ["| run | recipe | GPU | kind | measured GiB | mem4d GiB | error |", "|---|---|---|---|---|---|---|"]
    for r in table:
        if r["expressed"]:
            lines.append(
                f"| {r['id']} | {r['recipe']} | {r['rank']} | {r['kind']} | {_gib(r['measured_bytes'])} | "
                f"{_gib(r['mem4d_bytes'])} | {100 * r['error']:+.1f} % |"
            )
        else:
            lines.append(
                f"| {r['id']} | - | - | {r['kind']} | {_gib(r['measured_bytes'])} | not expressed: {r['why']} | - |"
            )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="one JSON object per run")
    out.add_argument("--markdown", action="store_true", help="the README's table")
    out.add_argument("--megatron", action="store_true", help="the Megatron-LM runs of ../shared/data/measured")
    out.add_argument("--torchtitan", action="store_true", help="the torchtitan rows of ../shared/data/measured")
    args = parser.parse_args()
    if args.megatron:
        import published_megatron

        sys.argv = sys.argv[:1]
        return published_megatron.main()
    if args.torchtitan:
        import published_titan

        sys.argv = sys.argv[:1]
        return published_titan.main()
    table = rows()
    if args.json:
        print(json.dumps(table, indent=1))
    elif args.markdown:
        print(markdown(table))
    else:
        from rich.console import Console
        from rich.table import Table

        view = Table(title="mem4d beside published measured runs (GiB per GPU)", title_justify="left")
        for name in ("run", "recipe", "GPU", "kind", "measured", "mem4d", "error", "assumed / why not"):
            view.add_column(name, justify="right" if name in ("measured", "mem4d", "error") else "left")
        for r in table:
            if r["expressed"]:
                view.add_row(
                    r["id"],
                    r["recipe"],
                    r["rank"],
                    r["kind"],
                    _gib(r["measured_bytes"]),
                    _gib(r["mem4d_bytes"]),
                    f"{100 * r['error']:+.1f} %",
                    r["assumed"],
                )
            else:
                view.add_row(r["id"], "-", "-", r["kind"], _gib(r["measured_bytes"]), "-", "-", r["why"])
        Console(width=200).print(view)
        done = [abs(r["error"]) for r in table if r["expressed"]]
        print(
            f"{len(done)} runs expressed: median |error| {100 * sorted(done)[len(done) // 2]:.1f} %, "
            f"max {100 * max(done):.1f} %; {sum(e <= 0.10 for e in done)} within 10 %"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
