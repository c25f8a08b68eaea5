"""mem4d's step-time model beside NVIDIA's tuned pre-training runs (../shared/data/throughput/ROWS.tsv, Megatron-Bridge's
performance summaries): each row mem4d can state with its MODELS.md settings, predicted against published
tokens/s/GPU; the rows it cannot state, each with the reason. With --rank, also where NVIDIA's configuration sits
among the configurations plan would rank for the row's cluster (model, GPUs, s, gbs, FP8 recipe, system), by the
step-time model and by the old proxy, and plan's best predicted against the published figure.

    python benchmarks/throughput.py [--rank] [--tiny] [--out records/published/throughput.tsv]

No term of the model is set from these figures (docs/time.md).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the modules beside it
from nvidia_rows import FP8, KEYS, MODELS, ROOT  # noqa: E402
from nvidia_rows import cell_int, layout, model_name, read_rows, short_commit, written  # noqa: E402

sys.path.insert(0, str(ROOT))

from symbolic.config.errors import ConfigError  # noqa: E402
from symbolic.config.hfconfig import resolve_model  # noqa: E402
from symbolic.config.training import Training  # noqa: E402
from symbolic.time.evaluate import step_time  # noqa: E402
from symbolic.time.systems import system  # noqa: E402
from throughput_dispatch import dispatcher  # noqa: E402  (benchmarks/throughput_dispatch.py)
from throughput_rank import PLAN_THRESHOLD, RANK_KEYS, plan_rank, rank_cells, rank_summary  # noqa: E402
from throughput_recipes import provider  # noqa: E402  (benchmarks/throughput_recipes.py)
from tuned_llama import llama_settings  # noqa: E402  (benchmarks/tuned_llama.py: FSDP + CPU offload, recompute layers)

SYSTEM = {
    "DGX-GB300": "gb300-nvl72",
    "DGX-GB200": "gb200-nvl72",
    "DGX-B300": "dgx-b300",
    "DGX-B200": "dgx-b200",
    "DGX-H100": "dgx-h100",
}
MOE = {"Qwen3_30B_a3B", "Qwen3_235B_a22B", "DeepSeekV3", "GPT OSS 120B", "Kimi_K2"}  # the table's MoE models


def unstated(row: dict) -> str | None:
    """Why a row cannot be stated with MODELS.md's settings, or None."""
    name = model_name(row)
    if name == "Kimi_K2":
        return "Muon optimizer (MODELS.md 6): its Newton-Schulz step is not in the model"
    if name.startswith("Nemotron"):
        return "Mamba-2 hybrid: its scans are not in the step-time model (and Nano/Super/Ultra configs not here)"
    if name not in MODELS:
        return f"no mem4d model for {name}"
    if row["precision"] not in FP8:
        return f"precision {row['precision']!r} not stated in the table"
    return None


def job(row: dict) -> tuple:
    """The row's model and Training, with MODELS.md's settings."""
    name = model_name(row)
    shape = resolve_model(MODELS[name])
    if "w/o MTP" in row["model"]:
        shape = replace(shape, mtp=0)
    recompute, modules = "none", "core_attn"
    if name == "DeepSeekV3" and row["gpu"] in ("GB200", "B300", "B200"):
        recompute, modules = "selective", "mla_up_proj"  # MODELS.md 1
        if row["release"] == "26.04.01" and row["gpu"] == "B200":
            modules = "mla_up_proj,mlp"  # MODELS.md 1: MB@v0.4.2 deepseek_workload_base_configs.py:203-214
    elif name == "DeepSeekV3" and row["release"] == "25.09":
        recompute = "selective"  # MODELS.md 1: r0.1.0 yaml recompute_granularity selective (core_attn, the default)
    elif (
        name == "GPT OSS 120B"
        and row["gpu"] in ("GB200", "B200", "H100")
        and row["precision"] == "BF16"
        and row["release"] in ("26.02", "26.02.01", "26.04", "26.04.01")
    ):
        recompute, modules = "selective", "layernorm,moe_act"  # MODELS.md 3: MB@v0.4.2 ..._BF16_V1/V2 presets
    fp8 = FP8[row["precision"]]
    training = Training(
        **layout(row),
        ep=cell_int(row["ep"]),
        etp=cell_int(row["etp"], None) if row["etp"] else None,
        fp8=fp8,
        fp8_param_gather=fp8 in ("tensorwise", "nvfp4"),
        swiglu_fusion=name.startswith("LLAMA"),  # Megatron-Bridge llama_provider.py:45 (tuned.py SWIGLU_FUSION)
        **{
            "zero": 3 if row["fsdp"] not in ("", "0") else 1,
            "recompute": recompute,
            "recompute_modules": modules,
            **llama_settings(name, row),
        },
    )
    return shape, training


def evaluate(rows: list[dict], rank: bool = False, threshold: float = PLAN_THRESHOLD) -> tuple[list[dict], list[dict]]:
    """The stated rows with their prediction (and with `rank`, plan_rank's figures), the others with their reason."""
    stated, skipped, cache = [], [], {}
    for row in rows:
        reason = unstated(row)
        if reason is None:
            try:
                shape, training = job(row)
                ran = dispatcher(row) if shape.moe else ""
                kernels = provider(row["model"].split(" (")[0])  # MODELS.md's provider settings of the model
                out = step_time(shape, training, system(SYSTEM[row["system"]]), ran or None, kernels)
            except ConfigError as err:
                reason = str(err)
        if reason is not None:
            skipped.append({**row, "reason": reason})
            continue
        published = float(row["tokens_per_s_per_gpu"].split(" (")[0])  # "a (b)": a is the precision named first
        shares = sorted(out["breakdown"].items(), key=lambda kv: -kv[1])[:3]
        stated.append(
            {
                **row,
                "dispatcher": ran,
                "predicted": out["tokens_per_s_per_gpu"],
                "published": published,
                "error_pct": 100 * (out["tokens_per_s_per_gpu"] / published - 1),
                "top": " ".join(f"{k}={100 * v / out['step_s']:.0f}%" for k, v in shares),
                **(plan_rank(shape, training, system(SYSTEM[row["system"]]), cache, threshold) if rank else {}),
            }
        )
    return stated, skipped


def class_summary(stated: list[dict]) -> str:
    """One line: median and largest |error| and rows within 35 % of the dense and the MoE rows apart."""
    parts = []
    for label, moe in (("dense", False), ("MoE", True)):
        errors = [abs(r["error_pct"]) for r in stated if (model_name(r) in MOE) == moe]
        if errors:
            parts.append(
                f"{label} {len(errors)} rows: median {statistics.median(errors):.1f} %, max "
                f"{max(errors):.1f} %, within 35 %: {sum(e <= 35 for e in errors)}"
            )
    return "# " + "; ".join(parts)


def table(stated: list[dict], skipped: list[dict], rank: bool, threshold: float) -> str:
    """The TSV: the summary lines, the stated rows (published, predicted, error, largest parts, with `rank` plan's
    figures), the refused with their reason."""
    extra = RANK_KEYS if rank else ()
    lines = ["\t".join((*KEYS, "dispatcher", "published", "predicted", "error_pct", "largest_parts", *extra, "reason"))]
    for r in stated:
        lines.append(
            "\t".join(
                (
                    *(r[k] for k in KEYS),
                    r["dispatcher"],
                    r["tokens_per_s_per_gpu"],
                    f"{r['predicted']:.0f}",
                    f"{r['error_pct']:+.1f}",
                    r["top"],
                    *(rank_cells(r) if rank else ()),
                    "",
                )
            )
        )
    for r in skipped:
        lines.append(
            "\t".join(
                (*(r[k] for k in KEYS), "", r["tokens_per_s_per_gpu"], "", "", "", *[""] * len(extra), r["reason"])
            )
        )
    errors = [abs(r["error_pct"]) for r in stated]
    summary = (
        f"# {len(stated)} of {len(stated) + len(skipped)} rows stated at {short_commit()}"
        + (f" (plan's limit {threshold} x the card's memory)" if rank else "")
        + ": median |error| "
        f"{statistics.median(errors):.1f} %, max {max(errors):.1f} %, within 15 %: "
        f"{sum(e <= 15 for e in errors)}, within 35 %: {sum(e <= 35 for e in errors)}"
    )
    return "\n".join([summary, class_summary(stated), *([rank_summary(stated)] if rank else []), *lines]) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="write the table as TSV here")
    parser.add_argument("--rank", action="store_true", help="also NVIDIA's configuration's rank in plan (minutes)")
    parser.add_argument("--tiny", action="store_true", help="only Llama 3 8B's rows (8 GPUs: seconds)")
    parser.add_argument(
        "--threshold",
        type=float,
        default=PLAN_THRESHOLD,
        help="--rank: plan's fit threshold over the card's memory (default: plan's 0.8)",
    )
    args = parser.parse_args()
    rows = read_rows("throughput.py")
    if rows is None:
        return 2
    if args.tiny:
        rows = [r for r in rows if r["model"].startswith("LLAMA3_8B")]
    return written(table(*evaluate(rows, args.rank, args.threshold), args.rank, args.threshold), args.out)


if __name__ == "__main__":
    sys.exit(main())
