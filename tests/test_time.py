"""The step-time model: its card figures against ../shared/data/hardware/CARDS.tsv (exact, where the data is there),
each group's link by hand, FLOPs against the parameter counts (exact: 2 FLOPs per weight per token), the step's
components summing to it and its bubble (p - 1)/(vpp m) of the rest (1e-9 relative)."""

import csv
import re
from pathlib import Path

import pytest

from symbolic.config.errors import ConfigError
from symbolic.config.shapes import PRESETS as MODELS
from symbolic.config.training import Training
from symbolic.time import flops, links
from symbolic.time.cards import CARDS
from symbolic.time.evaluate import step_time
from symbolic.time.systems import SYSTEMS, system

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "hardware" / "CARDS.tsv"
ROW = {
    "a100-40gb": "A100 SXM4 40GB",
    "a100-80gb": "A100 SXM4 80GB",
    "h100-80gb": "H100 SXM5 80GB",
    "h200-141gb": "H200 SXM 141GB",
    "b200-192gb": "B200",
    "b300-288gb": "B300",
    "gb200-186gb": "GB200",
    "gb300-288gb": "GB300",
}


def _number(cell: str) -> float:
    found = re.match(r"\s*([0-9][0-9,.]*)", cell)
    return float(found.group(1).replace(",", "")) if found else 0.0


@pytest.mark.parametrize("name", CARDS)
def test_card_figures_are_cards_tsv(name):
    if not DATA.exists():
        pytest.skip(f"reference data absent: {DATA}")
    rows = {r["card"]: r for r in csv.DictReader(DATA.open(), delimiter="\t")}
    row = next(r for key, r in rows.items() if key.startswith(ROW[name]))
    card = CARDS[name]
    assert card.bf16 == _number(row["bf16_dense_TFLOPs"])
    assert card.fp8 == _number(row["fp8_dense_TFLOPs"])
    assert card.hbm == _number(row["hbm_bw_TBps"])
    assert card.nvlink == _number(row["nvlink_bw_per_gpu_GBps_bidir"])
    assert card.fp4 in (0.0, _number(row["fp4_dense_TFLOPs"])) or name == "b300-288gb"  # B300: sources conflict


def test_systems_domains_and_toml(tmp_path):
    assert {s.domain for n, s in SYSTEMS.items() if n.startswith("dgx")} == {8}
    assert SYSTEMS["gb200-nvl72"].domain == SYSTEMS["gb300-nvl72"].domain == 72
    path = tmp_path / "mine.toml"
    path.write_text('[system]\ncard = "b200-192gb"\ndomain = 16\nnet_ring = 90\n')
    mine = system(str(path))
    assert (mine.name, mine.domain, mine.net_ring, mine.nvl_ring) == ("mine", 16, 90, SYSTEMS["dgx-b200"].nvl_ring)
    path.write_text('[system]\ncard = "b200-192gb"\ndomain = 0\n')
    with pytest.raises(ConfigError, match="domain must be a positive"):
        system(str(path))
    with pytest.raises(ConfigError, match="unknown system"):
        system("dgx-z100")


def test_links_by_hand():
    h100 = SYSTEMS["dgx-h100"]
    assert links.ring(h100, 8, 1) == pytest.approx(362.9e9)  # one node: NVLink
    assert links.ring(h100, 4, 8) == pytest.approx(46e9)  # one rank per node: its NIC
    # 4 ranks per node (stride 2) over 4 nodes: NIC x 15 / 3 = 230 GB/s, under NVLink's
    assert links.ring(h100, 16, 2) == pytest.approx(46e9 * 15 / 3)
    nvl = SYSTEMS["gb200-nvl72"]
    assert links.ring(nvl, 64, 1) == pytest.approx(680e9)  # 64 GPUs on one NVL72 domain
    # all-to-all over 16 ranks, 8 per node: 7/16 of a rank's bytes over NVLink, 8/16 over its NIC, at once
    expected = 15 / 16 / max(7 / 16 / 320e9, 8 / 16 / 36e9)
    assert links.all_to_all(h100, 16, 1) == pytest.approx(expected)
    assert links.point_to_point(h100, 4, 8) == pytest.approx(46e9)


@pytest.mark.parametrize("model", ["llama3-8b", "qwen3-30b-a3b"])
def test_flops_are_twice_the_weights_a_token_meets(model):
    shape = MODELS[model]
    values = {
        "h": shape.h,
        "a": shape.a,
        "k": shape.k,
        "dh": shape.dh,
        "f": shape.f,
        "E": shape.E,
        "k_e": shape.k_e,
        "f_e": shape.f_e,
        "f_s": shape.f_s,
        "v": shape.v,
    }
    evaluate = lambda c: float(c.expr.subs({x: values[str(x)] for x in c.expr.free_symbols}))
    norms = {"none": 0, "head": 2 * shape.dh}[shape.qk_norm]
    assert evaluate(flops.attention_proj(False, False)) == 2 * (shape.attention_count - norms)
    if shape.moe:
        active = shape.h * shape.E + shape.k_e * shape.expert_count + 3 * shape.h * shape.f_s
        assert evaluate(flops.moe()) == 2 * active
    else:
        assert evaluate(flops.mlp(3)) == 2 * shape.dense_mlp_count
    assert evaluate(flops.head()) == 2 * shape.h * shape.v


def test_step_sums_and_bubble():
    shape = MODELS["llama3-70b"]
    plain = Training(d=2, t=4, p=8, vpp=5, s=8192, b=1, gbs=256, fp8="tensorwise")
    out = step_time(shape, plain, SYSTEMS["dgx-h100"])
    parts = out["breakdown"]
    assert out["step_s"] == pytest.approx(sum(parts.values()), rel=1e-12)
    per_micro = sum(v for k, v in parts.items() if k not in ("T_bubble", "T_dp", "T_opt")) / plain.m
    assert parts["T_bubble"] == pytest.approx(per_micro * (plain.p - 1) / plain.vpp, rel=1e-9)
    assert out["tokens_per_s_per_gpu"] == pytest.approx(256 * 8192 / (out["step_s"] * 64), rel=1e-12)
    # the same job in BF16 spends longer in its GEMMs by the two measured rates' ratio (794.5 / 1402.6)
    bf16 = step_time(shape, Training(d=2, t=4, p=8, vpp=5, s=8192, b=1, gbs=256), SYSTEMS["dgx-h100"])
    assert bf16["breakdown"]["T_lin"] / parts["T_lin"] == pytest.approx(1402.6 / 794.5, rel=1e-9)


def test_nvl72_keeps_expert_all_to_all_on_nvlink():
    shape = MODELS["qwen3-30b-a3b"]
    job = Training(d=32, ep=32, s=4096, b=1, gbs=256, zero=1)
    on_dgx = step_time(shape, job, system("dgx-b200"))["breakdown"]["T_ep"]
    on_rack = step_time(shape, job, system("gb200-nvl72"))["breakdown"]["T_ep"]
    # 32 ranks: 8 per DGX node (7/32 of the bytes on NVLink, 24/32 on the NIC) vs all 32 on one NVL72 domain
    dgx_bw = 31 / 32 / max(7 / 32 / 640, 24 / 32 / 36)
    assert on_dgx / on_rack == pytest.approx(640 / dgx_bw, rel=1e-9)


def test_gemm_share_reads_the_cublaslt_table():
    from symbolic.time import gemm

    assert gemm.share("h100-80gb", 8192, 8192, 8192) == pytest.approx(1290.1 / 1382.2, rel=1e-12)  # GEMM.md 2 row
    assert gemm.share("gb200-186gb", 16384, 16384, 16384) == pytest.approx(1.0)
    assert gemm.share("h100-80gb", 2048, 4096, 8192) == pytest.approx(1216.9 / 1382.2, rel=1e-12)  # cube root 4096
    small, large = gemm.share("b200-192gb", [1500, 6000], 2048, 2048)
    assert small < large <= 1.0


def test_formula_time_prints_the_components():
    import json
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "symbolic.cli", "formula", "--time", "--recompute", "full", "--json"],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert done.returncode == 0, done.stderr
    names = [item["name"] for item in json.loads(done.stdout)["formulas"]]
    assert (
        names
        == "T_lin T_attn T_last T_rec T_tp T_etp T_cp T_ep T_pp T_perm T_mexp T_sort T_pad T_clamp T_rgrad T_bias T_norm T_rope T_bda T_resid T_act T_cast T_route T_ncast T_loss T_bubble T_dp T_opt".split()
    )


def test_layer_kernels_by_hand():
    # Llama 3 8B (32 layers, h 4096, 32 heads, 8 KV heads of 128, f 14336, v 128256) on 8 B200s (8.0 TB/s), s b
    # tokens a micro batch, m of them, BF16 (2 bytes) passes: two RMSNorms of [h], 5 passes each (TE 2.9.0
    # layernorm_linear.py), RoPE on (a + k) dh, 4 passes, two residual adds, 6 passes of [h], SwiGLU 8 passes of [f]
    # (fused_bias_swiglu.py), TE's cross entropy 5 passes of [v] (triton/cross_entropy.py); under FP8 the casts of
    # the attention output [a dh] and fc2's input [f] forward and of the output gradients [(a + 2k) dh], [h], [2f],
    # [h] backward at 4 bytes each (exact to 1e-9); Qwen3-30B-A3B adds its QK norm over (a + k) dh and the router's
    # 18 FP32 passes of [E]
    shape = MODELS["llama3-8b"]
    job = Training(d=8, s=4096, b=2, gbs=128, fp8="mxfp8")
    parts = step_time(shape, job, system("dgx-b200"))["breakdown"]
    per = job.m * 4096 * 2 * 2 / 8.0e12  # seconds a BF16 element of every token of the step moves once
    assert parts["T_norm"] == pytest.approx(per * 32 * 2 * 4096 * 5, rel=1e-9)
    assert parts["T_rope"] == pytest.approx(per * 32 * (32 + 8) * 128 * 4, rel=1e-9)
    assert parts["T_resid"] == pytest.approx(per * 32 * 2 * 4096 * 6, rel=1e-9)
    assert parts["T_act"] == pytest.approx(per * 32 * 14336 * 8, rel=1e-9)
    assert parts["T_loss"] == pytest.approx(per * 128256 * 5, rel=1e-9)
    casts = 32 * (32 * 128 + 14336 + (32 + 16) * 128 + 4096 + 2 * 14336 + 4096)
    assert parts["T_cast"] == pytest.approx(per / 2 * 4 * casts, rel=1e-9) and parts["T_route"] == 0
    bf16 = step_time(shape, Training(d=8, s=4096, b=2, gbs=128), system("dgx-b200"))["breakdown"]
    assert bf16["T_cast"] == 0
    qwen, moe_job = MODELS["qwen3-30b-a3b"], Training(d=8, ep=8, s=4096, b=4, gbs=512)
    moe = step_time(qwen, moe_job, system("dgx-b200"))["breakdown"]
    per = moe_job.m * 4096 * 4 * 2 / 8.0e12
    assert moe["T_norm"] == pytest.approx(per * 48 * (2 * 2048 + (32 + 4) * 128) * 5, rel=1e-9)
    assert moe["T_route"] == pytest.approx(per / 2 * 48 * 4 * 128 * 18, rel=1e-9) and moe["T_act"] == 0


def test_fp32_router_backward_by_hand():
    # Qwen3-30B-A3B (48 MoE layers, h 2048, E 128) on 8 B200s at EP8, BF16: an FP32 router's dgrad and wgrad GEMMs,
    # 2 h E FLOPs a token each, at TF32 = half B200's 1745.0 BF16 MAMF times the [tokens, E] x [E, h] share, and the
    # input's and gradient's casts, (2 + 4) bytes each of [h] a token, at 8.0 TB/s (exact to 1e-9); a BF16 router
    # (gpt-oss's provider) has none, its backward in T_lin at R_g
    from symbolic.time import gemm
    from symbolic.time.provider import Provider

    shape, job = MODELS["qwen3-30b-a3b"], Training(d=8, ep=8, s=4096, b=4, gbs=512)
    tokens = job.m * 4096 * 4
    r_f = 1745.0e12 / 2 * float(gemm.share("b200-192gb", 4096 * 4, 2048, 128))
    fp32 = step_time(shape, job, system("dgx-b200"))["breakdown"]
    assert fp32["T_rgrad"] == pytest.approx(48 * tokens * (4 * 2048 * 128 / r_f + 2 * 2048 * 6 / 8.0e12), rel=1e-9)
    bf16 = step_time(shape, job, system("dgx-b200"), provider=Provider(router_dtype="bf16"))["breakdown"]
    assert bf16["T_rgrad"] == 0 and bf16["T_lin"] > fp32["T_lin"]


def test_experts_memory_bound_kernels_by_hand():
    # Qwen3-30B-A3B (48 MoE layers, h 2048, f_e 768, top-8) on 8 B200s at EP8: the weighted SwiGLU moves 8 f_e
    # BF16 elements per token copy (forward 3, backward 5); FP8 adds TE's casts of [h], [f_e] forward and [h], [2 f_e]
    # backward at 4 bytes each; all at the card's 8.0 TB/s, m micro batches of s b tokens (exact to 1e-9)
    shape = MODELS["qwen3-30b-a3b"]
    per_copy = {"none": 2 * 8 * 768, "mxfp8": 2 * 8 * 768 + 4 * (2 * 2048 + 3 * 768)}
    for fp8, moved in per_copy.items():
        job = Training(d=8, ep=8, s=4096, b=4, gbs=512, fp8=fp8)
        got = step_time(shape, job, system("dgx-b200"))["breakdown"]["T_mexp"]
        assert got == pytest.approx(job.m * 48 * 4096 * 4 * 8 * moved / 8.0e12, rel=1e-9)
    assert (
        step_time(MODELS["llama3-8b"], Training(d=8, s=4096, b=1, gbs=64), system("dgx-h100"))["breakdown"]["T_mexp"]
        == 0
    )


def test_dispatcher_sort_and_fp8_padding_by_hand():
    # Qwen3-30B-A3B (48 MoE layers, h 2048, top-8) on 8 B200s at EP8, 16 experts a rank: the all-to-all dispatcher's
    # sort and unsort by local expert (megatron-core 0.16.1 token_dispatcher.py:732, :767) and, under FP8, TE's
    # Fp8Padding/Fp8Unpadding of the grouped MLP's rows (experts.py:648, :762) each read and write the k_e copies of
    # the s b tokens in BF16 forward and backward: 8 passes at the card's 8.0 TB/s, m micro batches (exact to 1e-9);
    # at EP128 each rank holds one expert and nothing is sorted; without FP8 nothing is padded
    shape = MODELS["qwen3-30b-a3b"]
    job = Training(d=8, ep=8, s=4096, b=4, gbs=512, fp8="mxfp8")
    parts = step_time(shape, job, system("dgx-b200"))["breakdown"]
    by_hand = job.m * 48 * 8 * (4096 * 4 * 8) * 2048 * 2 / 8.0e12
    assert parts["T_sort"] == pytest.approx(by_hand, rel=1e-9) and parts["T_pad"] == pytest.approx(by_hand, rel=1e-9)
    assert parts["T_perm"] == pytest.approx(by_hand, rel=1e-9)  # permute and unpermute move as much
    bf16 = step_time(shape, Training(d=8, ep=8, s=4096, b=4, gbs=512), system("dgx-b200"))["breakdown"]
    assert bf16["T_pad"] == 0 and bf16["T_sort"] == pytest.approx(by_hand, rel=1e-9)
    one_each = Training(d=128, ep=128, s=4096, b=4, gbs=512, fp8="mxfp8")
    assert step_time(shape, one_each, system("gb200-nvl72"))["breakdown"]["T_sort"] == 0
    # DeepEP's dispatcher permutes by local expert at once (no sort) but leaves TE's padding; HybridEP delivers the
    # rows grouped and padded (token_dispatcher.py:1036, :1079): neither term
    deepep = step_time(shape, job, system("dgx-b200"), "deepep")["breakdown"]
    assert deepep["T_sort"] == 0 and deepep["T_pad"] == pytest.approx(by_hand, rel=1e-9)
    hybridep = step_time(shape, job, system("dgx-b200"), "hybridep")["breakdown"]
    assert hybridep["T_sort"] == hybridep["T_pad"] == 0 and hybridep["T_perm"] == pytest.approx(by_hand, rel=1e-9)
    with pytest.raises(ConfigError, match="unknown MoE token dispatcher 'nccl'"):
        step_time(shape, job, system("dgx-b200"), "nccl")


def test_expert_biases_by_hand():
    # experts with biases (gpt-oss) on Qwen3-30B-A3B's shape (48 MoE layers, h 2048, top-8), 8 B200s at EP8:
    # megatron-core 0.16.1 experts.py:609-626 adds fc2's bias times each token's probability outside the GEMM. With
    # BF16 probabilities (the all-to-all dispatcher, the router's dtype) 6 passes of the k_e copies of the s b tokens
    # in BF16 forward and 8 backward, at the card's 8.0 TB/s, m micro batches; the forward again under full
    # recompute (20); HybridEP's FP32 probabilities (token_dispatcher.py:1029-1034) make it 14 + 20 (exact to 1e-9);
    # nothing for experts without biases
    from dataclasses import replace

    shape = replace(MODELS["qwen3-30b-a3b"], moe_bias=True)
    job = Training(d=8, ep=8, s=4096, b=4, gbs=512)
    one_pass = job.m * 48 * (4096 * 4 * 8) * 2048 * 2 / 8.0e12
    assert step_time(shape, job, system("dgx-b200"))["breakdown"]["T_bias"] == pytest.approx(14 * one_pass, rel=1e-9)
    full = replace(job, recompute="full")
    assert step_time(shape, full, system("dgx-b200"))["breakdown"]["T_bias"] == pytest.approx(20 * one_pass, rel=1e-9)
    hybridep = step_time(shape, job, system("dgx-b200"), "hybridep")["breakdown"]
    assert hybridep["T_bias"] == pytest.approx(34 * one_pass, rel=1e-9)
    assert step_time(MODELS["qwen3-30b-a3b"], job, system("dgx-b200"))["breakdown"]["T_bias"] == 0


def test_memory_bound_kernels_run_at_the_measured_copy_bandwidth(monkeypatch):
    # GEMM.md 2 (Azure's STREAM-like copy): H100 2.90 TB/s of its 3.35 peak; no Blackwell figure, so B200 keeps its
    # peak; T_opt (an HBM-bound Adam step) scales by exactly the ratio of the two figures (1e-12)
    assert CARDS["h100-80gb"].hbm_rate == 2.90 and CARDS["b200-192gb"].hbm_rate == CARDS["b200-192gb"].hbm == 8.0
    from dataclasses import replace

    job, shape = Training(d=8, s=4096, b=1, gbs=64), MODELS["llama3-8b"]
    measured = step_time(shape, job, system("dgx-h100"))["breakdown"]["T_opt"]
    monkeypatch.setitem(CARDS, "h100-80gb", replace(CARDS["h100-80gb"], hbm_copy=0.0))
    peak_only = step_time(shape, job, system("dgx-h100"))["breakdown"]["T_opt"]
    assert measured / peak_only == pytest.approx(3.35 / 2.90, rel=1e-12)


def test_learned_positions_run_no_rope():
    """A GPT's learned absolute positions run no RoPE kernel (T_rope 0); a rotary model's does (exact)."""
    training = Training(d=8, t=8, p=8, s=2048, gbs=512, recompute="selective")
    gpt = step_time(MODELS["gpt3-175b"], training, system("dgx-a100"))["breakdown"]
    llama = step_time(MODELS["llama3-70b"], training, system("dgx-a100"))["breakdown"]
    assert gpt["T_rope"] == 0 and llama["T_rope"] > 0
