"""NVIDIA's tuned pre-training runs (../shared/data/throughput/ROWS.tsv, Megatron-Bridge's performance summaries) as
benchmarks/throughput.py and benchmarks/tuned.py read them: the rows, the columns that name a run's layout, the
table's model and precision names in mem4d's terms, and the commit a table is stated at."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
ROWS = DATA / "throughput" / "ROWS.tsv"
# the columns that say which run a row is (its layout), written first in both tables
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
# the table's model names -> a mem4d model (preset or config.json)
MODELS = {
    "LLAMA3_8B": "llama3-8b",
    "LLAMA3_70B": "llama3-70b",
    "LLAMA3.1_405B": "llama3.1-405b",
    "Qwen3_30B_a3B": "qwen3-30b-a3b",
    "Qwen3_235B_a22B": "qwen3-235b-a22b",
    "DeepSeekV3": str(ROOT / "grids/models/published/deepseek-v3.json"),
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


def model_name(row: dict) -> str:
    """The row's model as the table names it, without its note ("DeepSeekV3 (w/o MTP)" -> "DeepSeekV3")."""
    return row["model"].split(" (")[0]


def cell_int(x: str, default: int | None = 1) -> int | None:
    """A degree's cell: its integer, or `default` where the table leaves it empty or "n/a"."""
    return int(x) if x.strip() not in ("", "n/a") else default


def layout(row: dict) -> dict:
    """The row's degrees and batch as Training's fields: d from the GPUs over t p c, vpp 1 where the table has none."""
    t, p, c = cell_int(row["tp"]), cell_int(row["pp"]), cell_int(row["cp"])
    return {
        "d": int(row["n_gpus"]) // (t * p * c),
        "t": t,
        "p": p,
        "c": c,
        "vpp": cell_int(row["vp"]),
        "s": int(row["seq"]),
        "b": int(row["mbs"]),
        "gbs": int(row["gbs"]),
    }


def read_rows(script: str) -> list[dict] | None:
    """ROWS.tsv's rows, or None after saying in one line on stderr that the reference data is absent."""
    if not ROWS.exists():
        print(f"{script}: reference data absent: {ROWS}", file=sys.stderr)
        return None
    return list(csv.DictReader(ROWS.open(), delimiter="\t"))


def short_commit() -> str:
    """The checkout's commit, as the tables' first line states it."""
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    return done.stdout.strip()


def written(text: str, out: Path | None) -> int:
    """Print the table, and write it to `out` where one is given: exit status 0."""
    if out:
        out.write_text(text)
    print(text, end="")
    return 0
