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
import csv
import statistics
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from symbolic.config.errors import ConfigError
from symbolic.config.hfconfig import resolve_model
from symbolic.config.training import Training
from symbolic.time.evaluate import step_time
from symbolic.time.systems import system

sys.path.insert(0, str(Path(__file__).resolve().parent))  # throughput_dispatch.py beside it
from throughput_dispatch import dispatcher  # noqa: E402  (benchmarks/throughput_dispatch.py)
from throughput_recipes import provider  # noqa: E402  (benchmarks/throughput_recipes.py)
from tuned_llama import llama_settings  # noqa: E402  (benchmarks/tuned_llama.py: FSDP + CPU offload, recompute layers)

DATA = ROOT.parent / "shared" / "data"
ROWS = DATA / "throughput" / "ROWS.tsv"
SYSTEM = {
    "DGX-GB300": "gb300-nvl72",
    "DGX-GB200": "gb200-nvl72",
    "DGX-B300": "dgx-b300",
    "DGX-B200": "dgx-b200",
    "DGX-H100": "dgx-h100",
}
# the table's model names -> a mem4d model (preset or config.json) and what MODELS.md's section says of it
MODELS = {
    "LLAMA3_8B": "llama3-8b",
    "LLAMA3_70B": "llama3-70b",
    "LLAMA3.1_405B": "llama3.1-405b",
    "Qwen3_30B_a3B": "qwen3-30b-a3b",
    "Qwen3_235B_a22B": "qwen3-235b-a22b",
    "DeepSeekV3": str(ROOT / "grids/models/published/deepseek-v3.json"),
    "GPT OSS 120B": str(DATA / "configs/gpt-oss-120b.json"),
}
MOE = {"Qwen3_30B_a3B", "Qwen3_235B_a22B", "DeepSeekV3", "GPT OSS 120B", "Kimi_K2"}  # the table's MoE models
FP8 = {
    "BF16": "none",
    "FP8": "tensorwise",
    "FP8-CS": "tensorwise",
    "FP8-CS (FP8-MX)": "tensorwise",
    "MXFP8": "mxfp8",
    "FP8-MX": "mxfp8",
}  # MODELS.md 0: "FP8" / "FP8-CS" = current (tensorwise) scaling


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
    return None


PLAN_THRESHOLD = 0.8  # plan's default --threshold: a configuration fits when its peak is under 0.8 x the card's memory


def card_bytes(name: str) -> int:
    """The card's memory as its mem4d name states it (h100-80gb: 80 GiB, plan's default --gpu-mem for H100)."""
    return int(name.rsplit("-", 1)[1].removesuffix("gb")) * 2**30


def plan_scores(shape, training, sys_, threshold: float) -> dict:
    """Every configuration plan searches for the row's cluster (model, GPUs, s, gbs, FP8 recipe) that fits on the
    system's card: their step-time tokens/s/GPU and proxy scores, and plan's best row."""
    from symbolic.plan.enumerate import Cluster
    from symbolic.plan.proxy import Hardware
    from symbolic.plan.proxy import terms as proxy_terms
    from symbolic.plan.ranking import StepTime
    from symbolic.plan.search import search

    cluster = Cluster(
        shape,
        gpus=training.d * training.t * training.p * training.c,
        s=training.s,
        gbs=training.gbs,
        fp8=training.fp8,
        fp8_param_gather=training.fp8_param_gather,
    )
    limit = threshold * card_bytes(sys_.card.name)
    plan = search(cluster, limit, profile="paper", hw=StepTime(sys_), keep_all=False)
    fit = plan.order
    proxy = proxy_terms(cluster, plan.rows, Hardware(), plan.policies)["score"][fit]
    return {
        "cluster": cluster,
        "limit": limit,
        "sys": sys_,
        "policies": plan.policies,
        "time": plan.rows["score"][fit],
        "proxy": proxy,
        "best": plan.training(fit[0]) if len(fit) else None,
    }


def nvidia_proxy(scores: dict, shape, training) -> float:
    """The proxy's score of NVIDIA's configuration (its recompute choice as plan names it, where plan searches it)."""
    import numpy as np

    from symbolic.config.training_checks import RECOMPUTE
    from symbolic.plan.proxy import Hardware
    from symbolic.plan.proxy import terms as proxy_terms

    par = training.parallel
    grid = {
        "d": par.d,
        "t": par.t,
        "p": par.p,
        "c": par.c,
        "e": par.e,
        "t_e": par.t_e,
        "vpp": training.vpp,
        "b": training.b,
        "m": training.gbs // (training.b * training.d),
        "zero": training.zero,
        "recompute": RECOMPUTE.index(training.recompute),
        "max_layers": shape.L / training.p,
    }
    grid = {k: np.atleast_1d(np.asarray(v, dtype=np.float64)) for k, v in grid.items()}
    keys = [(q.recompute, q.modules if q.recompute == "selective" else None) for q in scores["policies"]]
    mine = (training.recompute, training.recompute_modules if training.recompute == "selective" else None)
    policies = scores["policies"] if mine in keys else ()
    if policies:
        grid["policy"] = np.array([keys.index(mine)])
    return float(proxy_terms(scores["cluster"], grid, Hardware(), policies)["score"][0])


def plan_rank(shape, training, sys_, cache: dict, threshold: float = PLAN_THRESHOLD) -> dict:
    """NVIDIA's configuration among plan's fitting ones for its cluster: the share predicted strictly faster (percent,
    0 = plan's first) by the step-time model and by the proxy, whether it fits at plan's limit by mem4d's estimate,
    and plan's best predicted tokens/s/GPU; a one-line reason where plan cannot state the cluster."""
    from symbolic.estimator.estimate import estimate
    from symbolic.plan.why_not import shared_reason
    from symbolic.plan.search import policy_reason

    key = (
        shape,
        training.d * training.t * training.p * training.c,
        training.s,
        training.gbs,
        training.fp8,
        training.fp8_param_gather,
        sys_,
    )
    if key not in cache:
        cache[key] = plan_scores(shape, training, sys_, threshold)
    scores = cache[key]
    if not len(scores["time"]):
        c = scores["cluster"]
        why = policy_reason(c, "paper", (0, 1, 2, 3)) or shared_reason(c, "paper", (0, 1, 2, 3))
        return {"plan": f"plan states no fitting configuration: {why or 'none fits'}"}
    try:
        fits = estimate(shape, training).peak < scores["limit"]
    except ConfigError as err:  # NVIDIA's uneven layouts are not in the table: L % (pp vpp) != 0 is left unjudged
        fits = "not judged: " + str(err).split(":")[0]
    me = step_time(shape, training, scores["sys"])["tokens_per_s_per_gpu"]
    return {
        "fitting": len(scores["time"]),
        "fits": fits,
        "best": float(scores["time"].max()),
        "nvidia": me,
        "best_config": scores["best"],
        "time_pct": 100 * float((scores["time"] > me).mean()),
        "proxy_pct": 100 * float((scores["proxy"] > nvidia_proxy(scores, shape, training)).mean()),
    }


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
        d=n // (t * p * c),
        t=t,
        p=p,
        c=c,
        vpp=_int(row["vp"]),
        s=int(row["seq"]),
        b=int(row["mbs"]),
        gbs=int(row["gbs"]),
        ep=_int(row["ep"]),
        etp=_int(row["etp"], None) if row["etp"] else None,
        fp8=fp8,
        fp8_param_gather=fp8 == "tensorwise",
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


def _label(t: Training | None) -> str:
    """A plan row as one short label."""
    if t is None:
        return ""
    modules = f"({t.recompute_modules})" if t.recompute == "selective" else ""
    return (
        f"d{t.d} t{t.t} p{t.p} c{t.c} vpp{t.vpp} ep{t.ep} etp{t.etp_size} b{t.b} zero{t.zero} "
        f"{t.recompute}{modules}{' uneven' if t.stage_layers else ''}"
    )


RANK_KEYS = (
    "plan_fitting",
    "nvidia_fits",
    "time_pct",
    "proxy_pct",
    "plan_best",
    "best_vs_published_pct",
    "best_vs_nvidia_predicted_pct",
    "plan_best_config",
)


def _rank_cells(r: dict) -> tuple[str, ...]:
    """plan_rank's figures as RANK_KEYS' cells (the reason in the first where plan states none)."""
    if "plan" in r:
        return (r["plan"], *[""] * (len(RANK_KEYS) - 1))
    fits = r["fits"] if isinstance(r["fits"], str) else ("yes" if r["fits"] else "no")
    return (
        str(r["fitting"]),
        fits,
        f"{r['time_pct']:.2f}",
        f"{r['proxy_pct']:.2f}",
        f"{r['best']:.0f}",
        f"{100 * (r['best'] / r['published'] - 1):+.1f}",
        f"{100 * (r['best'] / r['nvidia'] - 1):+.1f}",
        _label(r["best_config"]),
    )


def rank_summary(stated: list[dict]) -> str:
    """The issue's goals on the ranked rows: NVIDIA's configuration in the top 1 %, plan's best within 10 %."""
    ranked = [r for r in stated if "time_pct" in r]
    if not ranked:
        return "# rank: no row's cluster has a fitting configuration in plan"
    t, q = [r["time_pct"] for r in ranked], [r["proxy_pct"] for r in ranked]
    near = sum(r["best"] >= 0.9 * r["published"] for r in ranked)
    fit = [r["time_pct"] for r in ranked if r["fits"] is True]
    gain = statistics.median(100 * (r["best"] / r["nvidia"] - 1) for r in ranked)
    return (
        f"# rank in plan ({len(ranked)} rows; % of plan's fitting configurations predicted strictly faster): "
        f"step time median {statistics.median(t):.1f} %, top 1 % in {sum(x <= 1 for x in t)}, top 10 % in "
        f"{sum(x <= 10 for x in t)}; proxy median {statistics.median(q):.1f} %, top 1 % in "
        f"{sum(x <= 1 for x in q)}, top 10 % in {sum(x <= 10 for x in q)}; plan's best predicted >= 0.9 x "
        f"published in {near}, its prediction over NVIDIA's configuration's median {gain:+.1f} %; NVIDIA's "
        f"configuration fits at plan's limit in {len(fit)}"
        + (f" (step time median {statistics.median(fit):.1f} %, top 1 % in {sum(x <= 1 for x in fit)})" if fit else "")
    )


def class_summary(stated: list[dict]) -> str:
    """One line: median and largest |error| and rows within 35 % of the dense and the MoE rows apart."""
    parts = []
    for label, moe in (("dense", False), ("MoE", True)):
        errors = [abs(r["error_pct"]) for r in stated if (r["model"].split(" (")[0] in MOE) == moe]
        if errors:
            parts.append(
                f"{label} {len(errors)} rows: median {statistics.median(errors):.1f} %, max "
                f"{max(errors):.1f} %, within 35 %: {sum(e <= 35 for e in errors)}"
            )
    return "# " + "; ".join(parts)


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
    if not ROWS.exists():
        print(f"throughput.py: reference data absent: {ROWS}", file=sys.stderr)
        return 2
    rows = list(csv.DictReader(ROWS.open(), delimiter="\t"))
    if args.tiny:
        rows = [r for r in rows if r["model"].startswith("LLAMA3_8B")]
    stated, skipped = evaluate(rows, args.rank, args.threshold)
    keys = (
        "release",
        "system",
        "model",
        "n_gpus",
        "precision",
        "gbs",
        "mbs",
        "seq",
        "fsdp",
        "tp",
        "pp",
        "cp",
        "vp",
        "ep",
        "etp",
    )
    extra = RANK_KEYS if args.rank else ()
    lines = ["\t".join((*keys, "dispatcher", "published", "predicted", "error_pct", "largest_parts", *extra, "reason"))]
    for r in stated:
        lines.append(
            "\t".join(
                (
                    *(r[k] for k in keys),
                    r["dispatcher"],
                    r["tokens_per_s_per_gpu"],
                    f"{r['predicted']:.0f}",
                    f"{r['error_pct']:+.1f}",
                    r["top"],
                    *(_rank_cells(r) if args.rank else ()),
                    "",
                )
            )
        )
    for r in skipped:
        lines.append(
            "\t".join(
                (*(r[k] for k in keys), "", r["tokens_per_s_per_gpu"], "", "", "", *[""] * len(extra), r["reason"])
            )
        )
    errors = [abs(r["error_pct"]) for r in stated]
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout
    summary = (
        f"# {len(stated)} of {len(rows)} rows stated at {commit.strip()}"
        + (f" (plan's limit {args.threshold} x the card's memory)" if args.rank else "")
        + ": median |error| "
        f"{statistics.median(errors):.1f} %, max {max(errors):.1f} %, within 15 %: "
        f"{sum(e <= 15 for e in errors)}, within 35 %: {sum(e <= 35 for e in errors)}"
    )
    text = "\n".join([summary, class_summary(stated), *([rank_summary(stated)] if args.rank else []), *lines]) + "\n"
    if args.out:
        args.out.write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
