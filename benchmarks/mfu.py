"""mem4d's step-time model beside published end-to-end runs outside NVIDIA's tuned tables (benchmarks/mfu_runs.toml,
read from ../shared/data/hardware/MFU.md and ../shared/data/throughput/MEGATRON_README.tsv): each run whose
configuration its source states, predicted in the source's own unit (seconds a step, tokens/s/GPU, or TFLOP/s/GPU
counted with the source's FLOP formula), with what the run had to assume; the others with the reason.

    python benchmarks/mfu.py [--out records/published/mfu.tsv] [--markdown]

No term of the model is set from these figures (docs/time.md "Other published runs").
"""

from __future__ import annotations

import argparse
import csv
import statistics
import subprocess
import sys
import tomllib
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from symbolic.config.errors import ConfigError
from symbolic.config.shapes import PRESETS
from symbolic.config.training import Training
from symbolic.time.evaluate import step_time
from symbolic.time.systems import system

RUNS = Path(__file__).resolve().parent / "mfu_runs.toml"
FIELDS = ("id", "system", "config", "unit", "published", "predicted", "error_pct", "assumed", "reason")
TRAINING = ("t", "p", "c", "d", "vpp", "b", "gbs", "s", "recompute", "fp8", "zero")


def gpt(spec: dict, s: int):
    """A GPT as Megatron-LM builds it (gpt3-175b's form): f = 4h, k = a, learned positions of s rows unless ALiBi."""
    h = spec["h"]
    positions = 0 if spec.get("alibi") else s
    return replace(
        PRESETS["gpt3-175b"],
        name=f"gpt-h{h}-L{spec['L']}",
        h=h,
        f=4 * h,
        a=spec["a"],
        k=spec["a"],
        L=spec["L"],
        v=spec["v"],
        tied=spec["tied"],
        positions=positions,
    )


def job(run: dict) -> tuple:
    """The run's ModelShape and Training."""
    shape = gpt(run["gpt"], run["s"]) if "gpt" in run else PRESETS[run["model"]]
    kwargs = {key: run[key] for key in TRAINING if key in run}
    if "stage_layers" in run:
        kwargs["stage_layers"] = tuple(run["stage_layers"])
    return shape, Training(**kwargs)


def flops_per_token(formula: str, shape, s: int) -> float:
    """Model FLOPs a token as the source counts them: Korthikanti 2022 App. A (Megatron-LM's num_floating_point_
    operations for a GPT), 72 L h^2 (1 + s/6h + v/12hL); PaLM's (Chowdhery 2022 App. B; Llama 3's MFU), 6 N + 12 L h s."""
    L, h, v = shape.L, shape.h, shape.v
    if formula == "korthikanti":
        return 72 * L * h**2 * (1 + s / (6 * h) + v / (12 * h * L))
    if formula == "palm":
        return 6 * shape.param_count + 12 * L * h * s
    raise ValueError(f"unknown FLOP count {formula!r}")


def predicted(run: dict, shape, out: dict) -> float:
    """The prediction in the run's unit."""
    if run["unit"] == "step_s":
        return out["step_s"]
    if run["unit"] == "tokens_per_s_per_gpu":
        return out["tokens_per_s_per_gpu"]
    return out["tokens_per_s_per_gpu"] * flops_per_token(run["flops"], shape, run["s"]) / 1e12


def speed_error(unit: str, published: float, value: float) -> float:
    """How much faster (+) or slower (-) the model is than the run, in %: a step time's inverse, else the ratio."""
    ratio = published / value if unit == "step_s" else value / published
    return 100 * (ratio - 1)


def label(run: dict) -> str:
    """The configuration in one short label."""
    parts = [f"{k}{run[k]}" for k in ("d", "t", "p", "c", "vpp", "b") if run.get(k, 1) != 1]
    parts += [f"gbs{run['gbs']}", f"s{run['s']}"]
    parts += [x for x in (run.get("recompute"), run.get("fp8")) if x and x != "none"]
    return " ".join(parts)


def evaluate(runs: list[dict]) -> list[dict]:
    """Each run with its prediction and error, or its reason."""
    rows = []
    for run in runs:
        row = {"id": run["id"], "system": run.get("system", ""), "assumed": "; ".join(run.get("assumed", []))}
        if "unstated" in run:
            rows.append({**row, "reason": run["unstated"]})
            continue
        try:
            shape, training = job(run)
            out = step_time(shape, training, system(run["system"]))
        except ConfigError as err:
            rows.append({**row, "reason": str(err)})
            continue
        unit = run["unit"] + (f" ({run['flops']})" if "flops" in run else "")
        value = predicted(run, shape, out)
        error = speed_error(run["unit"], run["published"], value)
        rows.append({**row, "config": label(run), "unit": unit, "published": run["published"]})
        rows[-1].update({"predicted": round(value, 2), "error_pct": round(error, 1)})
    return rows


def summary(rows: list[dict]) -> str:
    """One line: how many runs are stated, the median and largest |error|, how many within 15 and 35 %."""
    errors = [abs(r["error_pct"]) for r in rows if "error_pct" in r]
    head = f"{len(errors)} of {len(rows)} runs stated"
    if not errors:
        return head
    return (
        f"{head}: median |error| {statistics.median(errors):.1f} %, max {max(errors):.1f} %, "
        f"within 15 %: {sum(e <= 15 for e in errors)}, within 35 %: {sum(e <= 35 for e in errors)}"
    )


def markdown(rows: list[dict]) -> str:
    """The tables docs/time.md shows: the stated runs, then the others with their reason."""
    out = ["| run | system | configuration | unit | published | mem4d | error |", "|---|---|---|---|---:|---:|---:|"]
    for r in rows:
        if "error_pct" in r:
            cells = (r["id"], r["system"], r["config"], r["unit"], r["published"], r["predicted"])
            out.append("| " + " | ".join(map(str, cells)) + f" | {r['error_pct']:+.1f} % |")
    out += ["", "| run | why it is not stated |", "|---|---|"]
    return "\n".join(out + [f"| {r['id']} | {r['reason']} |" for r in rows if "error_pct" not in r])


def commit() -> str:
    """The commit the figures were computed at."""
    out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return out.stdout.strip() or "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="write the table as TSV here (with a summary line)")
    parser.add_argument("--markdown", action="store_true", help="print the tables docs/time.md shows instead")
    args = parser.parse_args()
    rows = evaluate(tomllib.loads(RUNS.read_text())["run"])
    if args.markdown:
        print(markdown(rows))
        return 0
    head = f"# {summary(rows)} at {commit()} (+: the model is faster than the run)"
    print(head)
    for r in rows:
        cells = (r["id"], r.get("config", ""), r.get("unit", ""), r.get("published", ""), r.get("predicted", ""))
        tail = f"{r['error_pct']:+.1f} %" if "error_pct" in r else r["reason"]
        print("  ".join(str(c) for c in cells), tail, f"[assumed: {r['assumed']}]" if r["assumed"] else "")
    if args.out:
        tmp = args.out.with_suffix(".tmp")
        with tmp.open("w", newline="") as fh:
            fh.write(head + "\n")
            writer = csv.DictWriter(fh, FIELDS, delimiter="\t", lineterminator="\n", restval="")
            writer.writeheader()
            writer.writerows(rows)
        tmp.replace(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
