"""Which MoE token dispatcher each of NVIDIA's tuned runs (../shared/data/throughput/ROWS.tsv) ran, read from the
Megatron-Bridge configs of its release, so benchmarks/throughput.py times the dispatcher the row used."""

from __future__ import annotations

RELEASES = ("25.09", "25.11", "26.02", "26.02.01", "26.04", "26.04.01")
# the flex dispatcher's backend a row ran: (table model, GPUs, first and last release, backend), read from each
# release's Megatron-Bridge configs (MODELS.md 0: 25.11 -> MB@v0.2.0 scripts/performance/configs/<family>/
# workload_base_configs.py; 26.02 -> v0.3.0, 26.02.01 -> v0.3.1, 26.04 -> v0.4.0, 26.04.01 -> v0.4.2
# scripts/performance/configs/<family>/<model>_workload_base_configs.py, moe_flex_dispatcher_backend); every other
# row ran the all-to-all dispatcher (MODELS.md 0: MB@v0.5.1 scripts/performance/utils/overrides.py:258-261). The H100
# Qwen3-30B-A3B row of 26.02.01 has v0.3.0's layout (PP2 VP12 EP8, DeepEP), not v0.3.1's (EP16, HybridEP).
FLEX = (
    ("DeepSeekV3", ("GB200", "GB300"), "25.11", "26.04.01", "hybridep"),
    ("DeepSeekV3", ("B200", "B300"), "26.02", "26.04.01", "hybridep"),
    ("Qwen3_235B_a22B", ("GB200", "GB300"), "25.11", "26.04.01", "hybridep"),
    ("Qwen3_235B_a22B", ("B300",), "26.02.01", "26.02.01", "deepep"),
    ("Qwen3_235B_a22B", ("B300",), "26.04.01", "26.04.01", "hybridep"),
    ("Qwen3_30B_a3B", ("GB200", "GB300"), "25.11", "26.04.01", "hybridep"),
    ("Qwen3_30B_a3B", ("B300",), "26.02", "26.04.01", "hybridep"),
    ("Qwen3_30B_a3B", ("B200",), "26.02.01", "26.04.01", "hybridep"),
    ("Qwen3_30B_a3B", ("H100",), "26.02", "26.02.01", "deepep"),
    ("Qwen3_30B_a3B", ("H100",), "26.04", "26.04.01", "hybridep"),
    ("GPT OSS 120B", ("B200", "GB200"), "26.04", "26.04", "hybridep"),
    ("GPT OSS 120B", ("B300",), "26.04", "26.04.01", "hybridep"),
)


def dispatcher(row: dict) -> str:
    """The MoE token dispatcher the row ran: a flex backend where FLEX names one, else Megatron's all-to-all one."""
    name, gpu = row["model"].split(" (")[0], row["gpu"]
    at = RELEASES.index(row["release"]) if row["release"] in RELEASES else -1
    for model, gpus, first, last, backend in FLEX:
        if model == name and gpu in gpus and RELEASES.index(first) <= at <= RELEASES.index(last):
            return backend
    return "alltoall"
