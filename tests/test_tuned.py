"""benchmarks/tuned.py: NVIDIA's tuned Megatron-Bridge runs (../shared/data/throughput/ROWS.tsv) as fractions of
their card.

Source of truth: ROWS.tsv (every row accounted for: stated or refused with its reason), CARDS.tsv's nvidia-smi MiB
(H100 81559 MiB), and that the runs ran: no stated row may be predicted above 100 % of its card. Tolerance: exact."""

import csv
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ROWS = ROOT.parent / "shared" / "data" / "throughput" / "ROWS.tsv"
pytestmark = pytest.mark.skipif(not ROWS.exists(), reason="../shared/data/throughput is absent")


def _module():
    spec = importlib.util.spec_from_file_location("tuned", ROOT / "benchmarks" / "tuned.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Llama 3.1 405B on GB200 (FP8-CS V2 preset, TP4 PP16 VP4, no recompute, no offload: Megatron-Bridge v0.4.2
# scripts/performance/configs/llama/llama31_workload_base_configs.py:262-272) was predicted at 100.2 % of the card
# while its FP8 weights counted Hopper's transposed copy; on Blackwell a Float8Tensor keeps none (96.8 %)
BLACKWELL_FP8 = ("GB200", "LLAMA3.1_405B", "FP8", "16", "4")


def _key(row: dict) -> tuple:
    return row["gpu"], row["model"], row["precision"].split("-")[0], row["pp"], row["vp"]


@pytest.fixture(scope="module")
def evaluated():
    tuned = _module()
    rows = list(csv.DictReader(ROWS.open(), delimiter="\t"))
    return tuned, rows, *tuned.evaluate(rows)


def test_every_row_stated_or_refused_and_none_above_the_card(evaluated):
    tuned, rows, stated, skipped = evaluated
    assert len(stated) + len(skipped) == len(rows)
    assert all(r["reason"].strip() for r in skipped)
    assert stated, "no row stated: the table says nothing"
    assert all(r["fraction"] <= 1.0 for r in stated), [(r["model"], r["gpu"], r["fraction"]) for r in stated]
    assert tuned.card_bytes("H100") == 81559 * 2**20
    assert not [r for r in stated if r["model"] == "LLAMA3_70B" and r["fraction"] > 1.0]


def test_the_405b_gb200_fp8_rows_keep_no_fp8_transpose(evaluated):
    """TE 2.20.2 is_non_tn_fp8_gemm_supported on compute capability 10.x: the FP8 weights (fp8_param_gather) are the
    one copy both GEMM layouts read, so rank 1 holds no fp8_weight_cache; Hopper's rows keep the transposed copy."""
    tuned, rows = evaluated[:2]
    row = next(r for r in rows if _key(r) == BLACKWELL_FP8)
    shape, training = tuned.job(row)
    assert not training.fp8_transpose and training.cache_bytes == 0
    hopper = next(r for r in rows if (r["gpu"], r["model"], r["precision"]) == ("H100", "LLAMA3.1_405B", "FP8"))
    assert tuned.job(hopper)[1].cache_bytes == 1
    over = [r for r in evaluated[2] if _key(r) == BLACKWELL_FP8]
    assert len(over) == 5 and all(0.9 < r["fraction"] <= 1.0 for r in over), [r["fraction"] for r in over]


def test_accounted_units_place_405b_and_qwen3_235b_as_megatron_core(evaluated):
    """MODELS.md 5 and 13: the embedding and the loss are pipeline units; 126 + 2 over pp 16 x vpp 4: chunks of 2,
    the first rank's first and the last rank's last one layer short."""
    tuned, rows = evaluated[:2]
    row = next(r for r in rows if _key(r) == ("GB200", "LLAMA3.1_405B", "FP8", "16", "4"))
    shape, training = tuned.job(row)
    assert training.account_embedding and training.account_loss and training.grad_dtype == "bf16"
    assert training.chunks(shape.L)[0] == (1, 2, 2, 2) and training.layers(shape.L)[1:-1] == (8,) * 14


def test_llama3_70b_h100_uses_the_recipes_fused_swiglu_and_fp8_weights():
    tuned = _module()
    row = next(
        r
        for r in csv.DictReader(ROWS.open(), delimiter="\t")
        if (r["release"], r["gpu"], r["model"]) == ("26.04.01", "H100", "LLAMA3_70B")
    )
    _, training = tuned.job(row)
    assert training.swiglu_fusion and training.fp8 == "tensorwise" and training.fp8_param_gather
    assert (training.t, training.p, training.vpp, training.d, training.sp) == (4, 8, 5, 2, True)


def test_mxfp8_rows_keep_their_weights_in_mxfp8(evaluated):
    """MODELS.md 0: "MXFP8" is bf16_with_mxfp8_mixed, fp8_param_gather with the gradient buffer reused: every such
    row is stated (none refused for its weights), its weights 1 + 1/32 bytes and no Llama 3 70B row above its card."""
    tuned, rows, stated, skipped = evaluated
    assert not [r for r in skipped if r["precision"] == "MXFP8" and "param-gather" in r["reason"]]
    mx = [r for r in stated if r["precision"] == "MXFP8"]
    assert len(mx) >= 16 and all(tuned.job(r)[1].weight_bytes == 1 + 1 / 32 for r in mx[:2])


def test_moe_rows_run_grouped_gemm_experts_on_their_card():
    """Megatron-Bridge 0.3.1's MoE providers and recipes set moe_grouped_gemm (tuned.GROUPED_GEMM); a dense row not;
    each row's card is mem4d's (--gpu), whose compute capability decides the FP8 transposes and the workspaces."""
    tuned = _module()
    rows = list(csv.DictReader(ROWS.open(), delimiter="\t"))
    for key, grouped, gpu in (
        (("26.04.01", "H100", "GPT OSS 120B"), True, "h100-80gb"),
        (("26.04.01", "B200", "Qwen3_235B_a22B"), True, "b200-192gb"),
        (("26.04.01", "H100", "LLAMA3_70B"), False, "h100-80gb"),
    ):
        row = next(r for r in rows if (r["release"], r["gpu"], r["model"]) == key and not tuned.unstated(r))
        _, training = tuned.job(row)
        assert (training.moe_grouped_gemm, training.gpu) == (grouped, gpu), key
