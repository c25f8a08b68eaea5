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
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the modules beside it
from nvidia_rows import DATA, FP8, KEYS, MODELS, ROOT  # noqa: E402
from nvidia_rows import cell_int, layout, model_name, read_rows, short_commit, written  # noqa: E402

sys.path.insert(0, str(ROOT))

from symbolic.config.errors import ConfigError  # noqa: E402
from symbolic.config.hfconfig import resolve_model  # noqa: E402
from symbolic.config.training import Training  # noqa: E402
from symbolic.estimator.estimate import estimate  # noqa: E402
from symbolic.time.cards import card  # noqa: E402
from tuned_moe import GPT_OSS_BF16, moe_reason  # noqa: E402

from tuned_llama import llama_settings  # noqa: E402  (benchmarks/tuned_llama.py: FSDP + CPU offload, recompute layers)

CARDS = DATA / "hardware" / "CARDS.tsv"
GiB = 2**30
CARD = {
    "H100": "H100 SXM5 80GB",
    "B200": "B200 (HGX/DGX B200)",
    "B300": "B300 (HGX/DGX B300, Blackwell Ultra)",
    "GB200": "GB200 (per GPU, GB200 NVL72)",
    "GB300": "GB300 (per GPU, GB300 NVL72)",
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
# the table's card as mem4d's (--gpu: time/cards.py, whose compute capability sizes the cuBLAS workspaces)
GPU = {"H100": "h100-80gb", "B200": "b200-192gb", "B300": "b300-288gb", "GB200": "gb200-186gb", "GB300": "gb300-288gb"}
# from compute capability 10.0 (Blackwell: B200, GB200, B300, GB300) FP8 GEMMs take either layout, so a delayed or
# tensorwise Float8Tensor keeps one copy for both usages (Transformer Engine 2.20.2 pytorch/utils.py
# is_non_tn_fp8_gemm_supported; config/precision.py FLOAT8_RECIPES): Training.fp8_transpose off
NON_TN_FP8 = (10, 0)
# Megatron-Bridge's MoE providers and recipes run the experts as TEGroupedMLP (0.3.1 models/qwen/qwen_provider.py:395
# and models/gpt_oss/gpt_oss_provider.py:71 moe_grouped_gemm True; recipes/qwen/qwen3_moe.py:78 and
# recipes/gpt_oss/gpt_oss.py:93 set it again); no perf script of MODELS.md 3-5 turns it off
GROUPED_GEMM = True
# MODELS.md 5 and 13: the recipes set account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split
# (Megatron-Bridge llama3.py@v0.4.2:1132-1133, qwen3_moe.py@v0.6.0:261-262): the layers placed as Megatron-Core does
ACCOUNTED = {"LLAMA3.1_405B", "Qwen3_235B_a22B"}


def card_bytes(gpu: str) -> int:
    """The card's memory as nvidia-smi reports it (CARDS.tsv hbm_total_as_reported_MiB)."""
    for row in csv.DictReader(CARDS.open(), delimiter="\t"):
        if row["card"] == CARD[gpu]:
            return int(row["hbm_total_as_reported_MiB"].split()[0]) * 2**20
    raise KeyError(gpu)


def unstated(row: dict) -> str | None:
    """Why a row cannot be stated with MODELS.md's settings, or None."""
    name = model_name(row)
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


def job(row: dict) -> tuple:
    """The row's model and Training, with MODELS.md's settings (distributed optimizer, SP with TP, the recipe's
    recompute, fp8 with fp8_param_gather, the card, grouped-GEMM experts, the provider's fused SwiGLU, the fused cross
    entropy's bf16 logits, the embedding and loss as pipeline units) and the perf scripts' bf16 gradient buffers."""
    name = model_name(row)
    shape = resolve_model(MODELS[name])
    t = cell_int(row["tp"])
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
        **layout(row),
        sp=t > 1,
        fp8=fp8,
        fp8_param_gather=fp8 != "none",
        swiglu_fusion=name in SWIGLU_FUSION,
        logits="bf16",  # gpt_provider.py:185 fused CE
        grad_dtype=GRAD_DTYPE,
        account_embedding=name in ACCOUNTED,
        account_loss=name in ACCOUNTED,
        tp_comm_overlap=userbuffers(row) and t > 1,  # Megatron-LM turns it off at t = 1
        gpu=GPU[row["gpu"]],
        fp8_transpose=card(GPU[row["gpu"]]).capability < NON_TN_FP8,
        moe_grouped_gemm=moe and GROUPED_GEMM,
        **graphs,
        **{"zero": 1, "recompute": recompute, "recompute_modules": modules, **llama_settings(name, row)},
        **({"ep": cell_int(row["ep"]), "etp": cell_int(row["etp"])} if moe else {}),
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
        memory = card_bytes(row["gpu"])
        stated.append(
            {
                **row,
                "peak": est.peak,
                "card": memory,
                "fraction": est.peak / memory,
                "largest": " ".join(f"{k}={v / GiB:.1f}" for k, v in parts[:3]),
            }
        )
    return stated, skipped


def table(stated: list[dict], skipped: list[dict]) -> str:
    """The TSV: a summary line, the stated rows (peak GiB, card GiB, percent, largest components, what
    is left out), the refused with their reason."""
    commit = short_commit()
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
    rows = read_rows("tuned.py")
    if rows is None:
        return 2
    return written(table(*evaluate(rows)), args.out)


if __name__ == "__main__":
    sys.exit(main())
