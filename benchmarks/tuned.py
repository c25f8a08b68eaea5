"""mem4d's peak beside the card of NVIDIA's tuned pre-training runs (../shared/data/throughput/ROWS.tsv, Megatron-Bridge's
performance summaries): every row mem4d can state with its MODELS.md settings, its predicted peak as a fraction of
the card's memory (the runs ran, so none may be above 100 %), the component that is largest on that stage for rows
over 80 %; every row it cannot state, with the reason.

    python benchmarks/tuned.py [--out records/published/tuned.tsv]

No term of mem4d is set from these rows: they are the references deliverable 3's "none above 100 %" is judged against.
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from symbolic.config.errors import ConfigError
from symbolic.config.hfconfig import resolve_model
from symbolic.config.training import Training
from symbolic.estimator.estimate import estimate

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tuned_llama.py beside it
from tuned_llama import llama_settings  # noqa: E402  (benchmarks/tuned_llama.py: FSDP + CPU offload, recompute layers)

DATA = ROOT.parent / "shared" / "data"
ROWS = DATA / "throughput" / "ROWS.tsv"
CARDS = DATA / "hardware" / "CARDS.tsv"
GiB = 2**30
CARD = {
    "H100": "H100 SXM5 80GB",
    "B200": "B200 (HGX/DGX B200)",
    "B300": "B300 (HGX/DGX B300, Blackwell Ultra)",
    "GB200": "GB200 (per GPU, GB200 NVL72)",
    "GB300": "GB300 (per GPU, GB300 NVL72)",
}
MODELS = {
    "LLAMA3_8B": "llama3-8b",
    "LLAMA3_70B": "llama3-70b",
    "LLAMA3.1_405B": "llama3.1-405b",
    "Qwen3_30B_a3B": "qwen3-30b-a3b",
    "Qwen3_235B_a22B": "qwen3-235b-a22b",
    "GPT OSS 120B": str(DATA / "configs/gpt-oss-120b.json"),
}
# MODELS.md 0: "FP8" / "FP8-CS" = bf16_with_fp8_current_scaling_mixed (tensorwise, fp8_param_gather=True);
# "MXFP8" / "FP8-MX" = bf16_with_mxfp8_mixed (fp8_param_gather=True); "FP8-CS (FP8-MX)": the first named; MODELS.md 0:
# "NVFP4" = bf16_with_nvfp4_mixed (TE NVFP4BlockScaling, fp4_param_gather=True, first_last_layers_bf16=False)
FP8 = {
    "BF16": "none",
    "FP8": "tensorwise",
    "FP8-CS": "tensorwise",
    "FP8-CS (FP8-MX)": "tensorwise",
    "MXFP8": "mxfp8",
    "FP8-MX": "mxfp8",
    "NVFP4": "nvfp4",
}
# Megatron-Bridge 0.3.1 models/llama/llama_provider.py:45 and gpt_oss/gpt_oss_provider.py:81: bias_activation_fusion
# True (Megatron-Core's fused SwiGLU); Qwen3's provider keeps TransformerConfig's False (megatron-core 0.16.1
# transformer/transformer_config.py:354)
SWIGLU_FUSION = {"LLAMA3_8B", "LLAMA3_70B", "LLAMA3.1_405B", "GPT OSS 120B"}
# every family's perf script sets mixed_precision.grad_reduce_in_fp32 = False and ddp.grad_reduce_in_fp32 = False
# (Megatron-Bridge v0.2.0 to v0.4.2 scripts/performance/configs/llama/llama3_llm_pretrain.py:43-44,
# llama31_llm_pretrain.py:42-43, qwen/qwen3_llm_pretrain.py:41-42, gpt_oss/gpt_oss_llm_pretrain.py:32-33 at v0.4.2):
# the DDP gradient buffers in the parameters' bf16, not the library recipes' fp32 (llama3.py@v0.4.2:1183; r0.1.0's
# scripts/performance/configs/*/*_llm_pretrain.yaml "grad_reduce_in_fp32: false" too; megatron-core 0.16.1
# distributed/param_and_grad_buffer.py)
GRAD_DTYPE = "bf16"
# the Blackwell cards (compute capability 10.x: B200, GB200, B300, GB300): their FP8 GEMMs take either layout, so a
# delayed or tensorwise Float8Tensor keeps one copy for both usages (Transformer Engine 2.20.2 pytorch/utils.py
# is_non_tn_fp8_gemm_supported; config/precision.py FLOAT8_RECIPES): Training.fp8_transpose off
BLACKWELL = {"B200", "GB200", "B300", "GB300"}
# MODELS.md 5 and 13: the recipes set account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split
# (Megatron-Bridge llama3.py@v0.4.2:1132-1133, qwen3_moe.py@v0.6.0:261-262): the layers placed as Megatron-Core does
ACCOUNTED = {"LLAMA3.1_405B", "Qwen3_235B_a22B"}


def card_bytes(gpu: str) -> int:
    """The card's memory as nvidia-smi reports it (CARDS.tsv hbm_total_as_reported_MiB)."""
    for row in csv.DictReader(CARDS.open(), delimiter="\t"):
        if row["card"] == CARD[gpu]:
            return int(row["hbm_total_as_reported_MiB"].split()[0]) * 2**20
    raise KeyError(gpu)


# GPT-OSS 120B BF16 V2 (GBS 1280) off H100 at the release's Megatron-Bridge tag (MODELS.md 0: 26.02 v0.3.0, 26.02.01
# v0.3.1, 26.04 v0.4.0, 26.04.01 v0.4.2), scripts/performance/configs/gpt_oss/gpt_oss_workload_base_configs.py
# (GB300/B300 V1 lines 45-52 and 62-69 at every tag: EP64, MBS4, TE CUDA graphs attn, moe_router, moe_preprocess;
# GB200/B200 V1 54-60 and 71-77: EP64, MBS4, recompute layernorm, moe_act; V2 at v0.4.0 and v0.4.2 lines 96-122):
# (ep, recompute modules, CUDA-graph scope) of the presets that dispatch all-to-all; the others' reasons
GPT_OSS_BF16 = {
    ("GB300", rel): (64, None, "attn,moe_router,moe_preprocess") for rel in ("26.02", "26.02.01", "26.04", "26.04.01")
}
GPT_OSS_BF16.update(
    {
        ("B300", "26.02"): (64, None, "attn,moe_router,moe_preprocess"),
        ("B300", "26.02.01"): (64, None, "attn,moe_router,moe_preprocess"),
        ("GB200", "26.02"): (64, "layernorm,moe_act", None),
        ("GB200", "26.02.01"): (64, "layernorm,moe_act", None),
        ("B200", "26.02"): (64, "layernorm,moe_act", None),
        ("B200", "26.02.01"): (64, "layernorm,moe_act", None),
        ("B200", "26.04.01"): (8, "layernorm,moe_act", None),
    }
)
GPT_OSS_UNSTATED = {
    ("GB200", "26.04"): "HybridEP flex dispatcher with EP-comm overlap (v0.4.0 V2)",
    ("GB200", "26.04.01"): "EP-comm overlap with delayed wgrad (v0.4.2 V2)",
    ("B300", "26.04"): "HybridEP flex dispatcher (v0.4.0 V2)",
    ("B300", "26.04.01"): "HybridEP flex dispatcher (v0.4.2 V2)",
    ("B200", "26.04"): "HybridEP flex dispatcher (v0.4.0 V2)",
}


def gpt_oss_reason(row: dict) -> str | None:
    """Why a GPT-OSS BF16 row off H100 is not stated, or None where its tag's preset is modelled and its published
    EP is the preset's (26.02.01's B200/B300 rows publish EP8 where v0.3.1's preset has EP64: not stated)."""
    key = (row["gpu"], row["release"])
    if key in GPT_OSS_UNSTATED:
        return f"{GPT_OSS_UNSTATED[key]} is not modelled (MODELS.md 3)"
    if key not in GPT_OSS_BF16 or row["precision"] != "BF16":
        return "this release's recipe is not expanded in MODELS.md 3"
    if int(row["ep"]) != GPT_OSS_BF16[key][0]:
        return f"the published EP{row['ep']} is not the tag's preset (EP{GPT_OSS_BF16[key][0]}, MODELS.md 0 and 3)"
    return None


def moe_reason(name: str, row: dict) -> str | None:
    """Why an MoE row's recipe is not stated (MODELS.md 3-5), or None for the alltoall recipes mem4d models."""
    gpu, rel = row["gpu"], row["release"]
    if name == "GPT OSS 120B" and gpu == "H100" and rel >= "26.02":
        return None  # MODELS.md 3: alltoall, recompute layernorm + moe_act, no CUDA graph
    if name == "GPT OSS 120B" and gpu != "H100" and rel >= "26.02":
        return gpt_oss_reason(row)
    if name == "Qwen3_235B_a22B" and gpu == "B200" and rel == "26.04.01":
        return None  # MODELS.md 5: alltoall, no CUDA graph, no recompute
    if name == "Qwen3_235B_a22B" and gpu == "H100" and rel == "26.04.01":
        return "EP-comm overlap with delayed wgrad (MODELS.md 5) is not modelled"
    if gpu != "H100":
        return "flex dispatcher (HybridEP/DeepEP) and/or CUDA graphs of this recipe (MODELS.md 1, 3-5) are not modelled"
    return "this release's H100 recipe is not expanded in MODELS.md (dispatcher, overlap, graphs unknown)"


def unstated(row: dict) -> str | None:
    """Why a row cannot be stated with MODELS.md's settings, or None."""
    name = row["model"].split(" (")[0]
    if name == "Kimi_K2":
        return (
            "Megatron-Bridge's distributed (layer-wise) Muon over latent attention (MODELS.md 6: mem4d deals a "
            "plain transformer's parameters, components/layerwise.py; Muon's split of MLA's and MTP's is not "
            "modelled) and FP8 with MLA are not modelled"
        )
    if name == "Nemotron_3_Super":  # its MoE blocks are modelled (configs/nvidia-nemotron-3-super-...json)
        return (
            "MXFP8/NVFP4 with Mamba-2 layers, the HybridEP flex dispatcher and TE CUDA graphs (MODELS.md 9) are "
            "not modelled (its MTP layer repeated by one shared module is)"
        )
    if name.startswith("Nemotron"):
        return (
            "no mem4d model for Nemotron 3 Nano (MODELS.md 7 gives its shape but no published config.json here); "
            "also FP8/MXFP8 with Mamba-2 layers, HybridEP and TE CUDA graphs are not modelled"
        )
    if name == "DeepSeekV3":
        return (
            "flex dispatcher (HybridEP/DeepEP), CUDA graphs and PP layouts of unequal chunks over dense and MoE "
            "layers (MODELS.md 1) are not modelled"
        )
    if name not in MODELS:
        return f"no mem4d model for {name}"
    if row["precision"] not in FP8:
        return f"precision {row['precision']!r} not stated in the table (25.09's rows name none)"
    if name == "Qwen3_235B_a22B":
        return moe_reason(name, row)
    if name == "LLAMA3_8B" and row["release"] == "25.11" and row["gpu"] != "H100":  # H100: recompute, no graphs
        return "local full-iteration CUDA graphs (MODELS.md 11) are not modelled"
    if name == "LLAMA3_70B" and row["gpu"].startswith("GB") and row["vp"] in ("", "n/a") and row["fsdp"] == "0":
        return "no published preset with this layout in MODELS.md 12"
    return moe_reason(name, row) if name.startswith(("Qwen", "GPT")) else None


def userbuffers(row: dict) -> bool:
    """The rows whose recipe sets the userbuffers TP-comm overlap (MODELS.md 12: Llama 3 70B and 405B on H100)."""
    return row["model"] in ("LLAMA3_70B", "LLAMA3.1_405B") and row["gpu"] == "H100"


def caveat(row: dict) -> str:
    """What a stated row's recipe also sets that mem4d leaves out of its figure (said in the table, not hidden)."""
    return ""


def _int(x: str, default: int = 1) -> int:
    return int(x) if x.strip() not in ("", "n/a") else default


def job(row: dict) -> tuple:
    """The row's model and Training, with MODELS.md's settings (distributed optimizer, SP with TP, the recipe's
    recompute, fp8 with fp8_param_gather, the provider's fused SwiGLU, the fused cross entropy's bf16 logits, the embedding
    and loss as pipeline units) and the perf scripts' bf16 gradient buffers."""
    name = row["model"].split(" (")[0]
    shape = resolve_model(MODELS[name])
    t, p, c = _int(row["tp"]), _int(row["pp"]), _int(row["cp"])
    recompute, modules, graphs = "none", "core_attn", {}
    if name == "GPT OSS 120B" and row["gpu"] == "H100":
        recompute, modules = "selective", "layernorm,moe_act"  # MODELS.md 3 (H100 BF16)
    elif name == "GPT OSS 120B":
        _, recomputed, scope = GPT_OSS_BF16[(row["gpu"], row["release"])]
        recompute, modules = ("selective", recomputed) if recomputed else ("none", "core_attn")
        graphs = {"cuda_graph": "transformer_engine", "cuda_graph_scope": scope} if scope else {}
    fp8 = FP8[row["precision"]]
    moe = name.startswith(("Qwen", "GPT"))
    training = Training(
        d=int(row["n_gpus"]) // (t * p * c),
        t=t,
        p=p,
        c=c,
        vpp=_int(row["vp"]),
        s=int(row["seq"]),
        b=int(row["mbs"]),
        gbs=int(row["gbs"]),
        sp=t > 1,
        fp8=fp8,
        fp8_param_gather=fp8 != "none",
        swiglu_fusion=name in SWIGLU_FUSION,
        logits="bf16",  # gpt_provider.py:185 fused CE
        grad_dtype=GRAD_DTYPE,
        account_embedding=name in ACCOUNTED,
        account_loss=name in ACCOUNTED,
        tp_comm_overlap=userbuffers(row) and t > 1,  # Megatron-LM turns it off at t = 1
        fp8_transpose=row["gpu"] not in BLACKWELL,
        **graphs,
        **{"zero": 1, "recompute": recompute, "recompute_modules": modules, **llama_settings(name, row)},
        **({"ep": _int(row["ep"]), "etp": _int(row["etp"])} if moe else {}),
    )
    return shape, training


def evaluate(rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """The stated rows with their peak and fraction of the card, the others with their reason."""
    stated, skipped = [], []
    for row in rows:
        reason = unstated(row)
        if reason is None:
            try:
                shape, training = job(row)
                est = estimate(shape, training)
            except ConfigError as err:
                reason = str(err).replace(str(ROOT.parent) + "/", "../")
        if reason is not None:
            skipped.append({**row, "reason": reason})
            continue
        stage = est.most_loaded_stage["bytes"] if est.peak_from != "total" else est.bytes
        parts = sorted(((k, v) for k, v in stage.items() if k != "total"), key=lambda kv: -kv[1])
        card = card_bytes(row["gpu"])
        stated.append(
            {
                **row,
                "peak": est.peak,
                "card": card,
                "fraction": est.peak / card,
                "largest": " ".join(f"{k}={v / GiB:.1f}" for k, v in parts[:3]),
            }
        )
    return stated, skipped


KEYS = (
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


def table(stated: list[dict], skipped: list[dict]) -> str:
    """The TSV: a summary line, the stated rows (peak GiB, card GiB, percent, largest components, what
    is left out), the refused with their reason."""
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.strip()
    over = [r for r in stated if r["fraction"] > 1]
    high = [r for r in stated if r["fraction"] > 0.8]
    head = (
        f"# {len(stated)} of {len(stated) + len(skipped)} rows stated at {commit}: {len(over)} above 100 % of "
        f"the card, {len(high)} above 80 %"
        + (f", max {100 * max(r['fraction'] for r in stated):.1f} %" if stated else "")
    )
    lines = [head, "\t".join((*KEYS, "peak_GiB", "card_GiB", "card_pct", "largest_GiB", "reason"))]
    for r in sorted(stated, key=lambda r: -r["fraction"]):
        lines.append(
            "\t".join(
                (
                    *(r[k] for k in KEYS),
                    f"{r['peak'] / GiB:.2f}",
                    f"{r['card'] / GiB:.2f}",
                    f"{100 * r['fraction']:.1f}",
                    r["largest"] if r["fraction"] > 0.8 else "",
                    caveat(r),
                )
            )
        )
    for r in skipped:
        lines.append("\t".join((*(r[k] for k in KEYS), "", "", "", "", r["reason"])))
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="write the table as TSV here")
    args = parser.parse_args()
    if not ROWS.exists():
        print(f"tuned.py: reference data absent: {ROWS}", file=sys.stderr)
        return 2
    text = table(*evaluate(list(csv.DictReader(ROWS.open(), delimiter="\t"))))
    if args.out:
        args.out.write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
