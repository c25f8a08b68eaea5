"""What the Llama 3 rows of NVIDIA's tuned runs (../shared/data/throughput/ROWS.tsv) set beyond their parallel sizes:
Megatron-FSDP with CPU activation offload (70B on GB300/GB200) and full recompute of a number of layers (8B on H100),
as Training fields, for benchmarks/tuned.py (memory) and benchmarks/throughput.py (step time) alike.

Megatron-Bridge scripts/performance/configs/llama/llama3_workload_base_configs.py (MB@v0.4.2, MODELS.md 11-12; the
V1 and V2 presets alike): LLAMA3_70B_PRETRAIN_CONFIG_GB300_FP8_CS_V2 micro_batch_size=2, use_megatron_fsdp=True,
cpu_offloading_num_layers=20 (:211-216), GB200_FP8_CS_V2 the same with 40 (:241-246); llama3_llm_pretrain.py:74-77
turns gradient-accumulation fusion off with Megatron-FSDP; LLAMA3_8B_PRETRAIN_CONFIG_H100_FP8_CS_V1
context_parallel_size=1, recompute_num_layers=5, which scripts/performance/utils/overrides.py
_set_recompute_overrides (MB@v0.5.1:139-162) makes recompute_granularity "full", recompute_method "block". The
25.11 rows are read with the same presets (MODELS.md 11 cites MB@v0.2.0 for the 8B's; the 70B's FSDP rows publish the
same sizes)."""

from __future__ import annotations

# cpu_offloading_num_layers of the 70B Megatron-FSDP FP8 rows, by GPU
FSDP_OFFLOAD = {"GB300": 20, "GB200": 40}
# recompute_num_layers of the 8B FP8 rows on H100 (the published row says FSDP 8; the preset has none)
RECOMPUTE_LAYERS = {"H100": 5}


def llama_settings(name: str, row: dict) -> dict:
    """The Training fields a Llama 3 row's preset sets beyond its parallel sizes (empty for the others)."""
    fsdp = row["fsdp"] not in ("", "0")
    if name == "LLAMA3_70B" and fsdp and row["gpu"] in FSDP_OFFLOAD:
        return {"zero": 3, "cpu_offload_layers": FSDP_OFFLOAD[row["gpu"]], "grad_accum_fusion": False}
    if name == "LLAMA3_8B" and row["gpu"] in RECOMPUTE_LAYERS and row["release"] == "25.11":
        return {
            "recompute": "full",
            "recompute_method": "block",
            "recompute_num_layers": RECOMPUTE_LAYERS[row["gpu"]],
            **({"zero": 3} if fsdp else {}),
        }
    return {}
