"""gpt-oss's clamped GLU experts keep one more [R, 2 f_e / t_e] tensor than an unclamped SwiGLU.

Source of truth: megatron-core 0.16.1 fusions/fused_bias_geglu.py weighted_bias_quick_geglu_impl (called by
transformer/moe/experts.py TEGroupedMLP.bias_act_func with Megatron-Bridge 0.3.1's GPT-OSS provider:
activation_func_clamp_value 7.0): x_glu.clamp and x_linear.clamp keep their inputs (views of fc1's output) and
WeightedBiasQuickGeGLUFunction keeps the torch.cat of the clamped halves; measured with torch 2.13.0 on CPU in
records/expert-saved-gptoss-cpu.jsonl (benchmarks/expert_saved_gptoss.py). Hand counts; exact."""

import json
from pathlib import Path

import sympy as sp

from symbolic.components.activations import RECOMPUTED
from symbolic.components.moe import expert_tensors
from symbolic.components.moe_rows import expert_rows
from symbolic.components.offload import offloaded_names
from symbolic.config.switches import Switches
from symbolic.config.symbols import B_a, f_e, t_e

RECORD = Path(__file__).resolve().parents[1] / "records" / "expert-saved-gptoss-cpu.jsonl"


def test_the_record_shows_two_fc1_wide_storages_clamped_and_one_without():
    rows = {row["variant"]: row for row in map(json.loads, RECORD.read_text().splitlines())}
    assert rows["clamped"]["clamp"] == 7.0 and rows["unclamped"]["clamp"] is None
    wide = rows["clamped"]["rows"] * 2 * rows["clamped"]["f_e"] * 2  # bytes of one bf16 [R, 2 f_e]
    for variant, count in (("clamped", 2), ("unclamped", 1)):
        full = [x for x in rows[variant]["saved"] if x["bytes"] == wide]
        assert rows[variant]["fc1_wide_tensors"] == count and len(full) == count, variant
        assert all(x["dtype"] == "torch.bfloat16" for x in full)


def test_gpt_oss_experts_keep_one_more_2_f_e_wide_tensor():
    plain = {p.name: p.expr for p in expert_tensors(Switches(moe=True))}
    clamped = {p.name: p.expr for p in expert_tensors(Switches(moe=True, moe_bias=True))}
    assert set(clamped) - set(plain) == {"expert_fc1_clamped"}
    # R rows x 2 f_e / t_e columns x B_a bytes each
    extra = sp.Add(*clamped.values()) - sp.Add(*plain.values())
    assert sp.simplify(extra - B_a * expert_rows() * 2 * f_e / t_e) == 0


def test_moe_act_recompute_and_offload_drop_it():
    assert "expert_fc1_clamped" in RECOMPUTED["moe_act"]
    assert "expert_fc1_clamped" in offloaded_names(Switches(moe=True, moe_bias=True, offload="moe_act"), moe=True)
