"""Which MoE recipes of NVIDIA's tuned runs benchmarks/tuned.py states (MODELS.md 3-5): GPT-OSS 120B's BF16 presets off
H100 at each release's Megatron-Bridge tag, and the reason each other MoE recipe is not stated."""

from __future__ import annotations


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
