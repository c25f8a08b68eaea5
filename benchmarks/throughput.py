"""mem4d's step-time model beside NVIDIA's tuned pre-training runs (../shared/data/throughput/ROWS.tsv, Megatron-Bridge's
performance summaries): each row mem4d can state with its MODELS.md settings, predicted against published
tokens/s/GPU; the rows it cannot state, each with the reason.

    python benchmarks/throughput.py [--out benchmarks/results/throughput-<commit>.tsv]

No term of the model is set from these figures (docs/time.md).
"""
from __future__ import annotations

import argparse
import csv
import statistics
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from symbolic.config.errors import ConfigError  # noqa: E402
from symbolic.config.hfconfig import resolve_model  # noqa: E402
from symbolic.config.training import Training  # noqa: E402
from symbolic.time.evaluate import step_time  # noqa: E402
from symbolic.time.systems import system  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
ROWS = DATA / "throughput" / "ROWS.tsv"
SYSTEM = {"DGX-GB300": "gb300-nvl72", "DGX-GB200": "gb200-nvl72", "DGX-B300": "dgx-b300", "DGX-B200": "dgx-b200",
          "DGX-H100": "dgx-h100"}
# the table's model names -> a mem4d model (preset or config.json) and what MODELS.md's section says of it
MODELS = {"LLAMA3_8B": "llama3-8b", "LLAMA3_70B": "llama3-70b", "LLAMA3.1_405B": "llama3.1-405b",
          "Qwen3_30B_a3B": "qwen3-30b-a3b", "Qwen3_235B_a22B": "qwen3-235b-a22b",
          "DeepSeekV3": str(ROOT / "grids/models/published/deepseek-v3.json"),
          "GPT OSS 120B": str(DATA / "configs/gpt-oss-120b.json")}
FP8 = {"BF16": "none", "FP8": "tensorwise", "FP8-CS": "tensorwise", "FP8-CS (FP8-MX)": "tensorwise",
       "MXFP8": "mxfp8", "FP8-MX": "mxfp8"}  # MODELS.md 0: "FP8" / "FP8-CS" = current (tensorwise) scaling


def unstated(row: dict) -> str | None:
    """Why a row cannot be stated with MODELS.md's settings, or None."""
    name = row["model"].split(" (")[0]
    if name == "Kimi_K2":
        return "Muon optimizer (MODELS.md 6): its Newton-Schulz step is not in the model"
    if name.startswith("Nemotron"):
        return "Mamba-2 hybrid: its scans are not in the step-time model (and Nano/Super/Ultra configs not here)"
    if name not in MODELS:
        return f"no mem4d model for {name}"
    if row["precision"] == "NVFP4":
        return "NVFP4: mem4d's training config has no FP4 recipe"
    if row["precision"] not in FP8:
        return f"precision {row['precision']!r} not stated in the table"
    if name == "LLAMA3_70B" and row["fsdp"] not in ("", "0") and row["system"].startswith("DGX-GB"):
        return "CPU activation offload of 20/40 layers (MODELS.md 12) is not modelled"
    if name == "LLAMA3_8B" and row["gpu"] == "H100" and row["release"] == "25.11":
        return "recompute_num_layers=5 (full recompute of 5 of 32 layers, MODELS.md 11) is not expressible"
    if name == "DeepSeekV3" and row["release"] == "26.04.01" and row["gpu"] == "B200":
        return "recompute_modules mla_up_proj,mlp (MODELS.md 1): mlp recompute is not a mem4d module"
    return None


def _int(x: str, default: int = 1) -> int:
    return int(x) if x.strip() not in ("", "n/a") else default


def job(row: dict) -> tuple:
    """The row's model and Training, with MODELS.md's settings."""
    name = row["model"].split(" (")[0]
    shape = resolve_model(MODELS[name])
    if "w/o MTP" in row["model"]:
        shape = replace(shape, mtp=0)
    t, p, c = _int(row["tp"]), _int(row["pp"]), _int(row["cp"])
    n = int(row["n_gpus"])
    recompute, modules = "none", "core_attn"
    if name == "DeepSeekV3" and row["gpu"] in ("GB200", "B300", "B200"):
        recompute, modules = "selective", "mla_up_proj"  # MODELS.md 1
    elif name == "DeepSeekV3" and row["release"] == "25.09":
        recompute = "selective"  # MODELS.md 1: r0.1.0 yaml recompute_granularity selective (core_attn, the default)
    fp8 = FP8[row["precision"]]
    training = Training(d=n // (t * p * c), t=t, p=p, c=c, vpp=_int(row["vp"]), s=int(row["seq"]), b=int(row["mbs"]),
                        gbs=int(row["gbs"]), ep=_int(row["ep"]), etp=_int(row["etp"], None) if row["etp"] else None,
                        zero=3 if row["fsdp"] not in ("", "0") else 1, recompute=recompute,
                        recompute_modules=modules, fp8=fp8, fp8_param_gather=fp8 == "tensorwise")
    return shape, training


def evaluate(rows: list[dict]) -> tuple[list[dict], list[dict]]:
    stated, skipped = [], []
    for row in rows:
        reason = unstated(row)
        if reason is None:
            try:
                shape, training = job(row)
                out = step_time(shape, training, system(SYSTEM[row["system"]]))
            except ConfigError as err:
                reason = str(err)
        if reason is not None:
            skipped.append({**row, "reason": reason})
            continue
        published = float(row["tokens_per_s_per_gpu"].split(" (")[0])  # "a (b)": a is the precision named first
        shares = sorted(out["breakdown"].items(), key=lambda kv: -kv[1])[:3]
        stated.append({**row, "predicted": out["tokens_per_s_per_gpu"],
                       "error_pct": 100 * (out["tokens_per_s_per_gpu"] / published - 1),
                       "top": " ".join(f"{k}={100 * v / out['step_s']:.0f}%" for k, v in shares)})
    return stated, skipped


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="write the table as TSV here")
    args = parser.parse_args()
    if not ROWS.exists():
        print(f"throughput.py: reference data absent: {ROWS}", file=sys.stderr)
        return 2
    rows = list(csv.DictReader(ROWS.open(), delimiter="\t"))
    stated, skipped = evaluate(rows)
    keys = ("release", "system", "model", "n_gpus", "precision", "gbs", "mbs", "seq", "fsdp", "tp", "pp", "cp", "vp",
            "ep", "etp")
    lines = ["\t".join((*keys, "published", "predicted", "error_pct", "largest_parts", "reason"))]
    for r in stated:
        lines.append("\t".join((*(r[k] for k in keys), r["tokens_per_s_per_gpu"], f"{r['predicted']:.0f}",
                                f"{r['error_pct']:+.1f}", r["top"], "")))
    for r in skipped:
        lines.append("\t".join((*(r[k] for k in keys), r["tokens_per_s_per_gpu"], "", "", "", r["reason"])))
    errors = [abs(r["error_pct"]) for r in stated]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    summary = (f"# {len(stated)} of {len(rows)} rows stated at {commit.strip()}: median |error| "
               f"{statistics.median(errors):.1f} %, max {max(errors):.1f} %, within 15 %: "
               f"{sum(e <= 15 for e in errors)}, within 35 %: {sum(e <= 35 for e in errors)}")
    text = "\n".join([summary, *lines]) + "\n"
    if args.out:
        args.out.write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
