"""Mixtures of experts in the symbolic half: the paper profile's expert layout against Megatron-LM's own weight and
optimizer formula, the MoE tensors' sizes, plan's expert search against `estimate`, and the CLI.

Sources of truth: NVIDIA/Megatron-LM megatron/training/theoretical_memory_usage.py after PR #4687 (commit a7c9e8c,
read at d98e8a6), written out below with the distributed optimizer over d*c for the dense part (Megatron's own
code divides by d; its optimizer shards over d*c); ModelShape.param_count (published counts, test_hf_models.py);
`estimate` one configuration at a time for plan. Tolerances: exact (integers), 1 byte for float64 rounding.
"""

import json
import subprocess
import sys

import numpy as np
import pytest
import sympy as sp

from symbolic.components.moe import expert_rows, moe_tensors
from symbolic.config.shapes import PRESETS
from symbolic.config.switches import Switches
from symbolic.config.symbols import BY_NAME, e
from symbolic.config.training import Training
from symbolic.estimator.estimate import estimate
from symbolic.plan.enumerate import Cluster
from symbolic.plan.search import search

MIXTRAL = PRESETS["mixtral-8x7b"]
TINY_MOE = PRESETS["tiny-moe"]  # shared experts too


def _megatron_states(shape, tr: Training) -> float:
    """Weights, gradients and optimizer states of the p = 1 GPU as PR #4687 counts them (6 + 12/D bytes per
    parameter): attention, dense MLPs and shared experts over t; norms, router and shared gate replicated; routed
    experts over ep * etp; the embedding and the untied LM head over t; D = d*c for the dense part, the expert
    data-parallel size d t c / (ep etp) for the experts."""
    h, L, E, f_e = shape.h, shape.L, shape.E, shape.f_e
    attn = 2 * h * shape.dh * (shape.a + shape.k)
    tp_sharded = L * (attn + 3 * h * shape.f_s) + 2 * shape.v * h
    replicated = L * (2 * h + h * E + (h if shape.shared_gate else 0)) + h
    experts = L * E * 3 * h * f_e
    dense = tp_sharded / tr.t + replicated
    expert = experts / (tr.ep * tr.etp_size)
    return dense * (6 + 12 / (tr.d * tr.c)) + expert * (6 + 12 / tr.edp)


@pytest.mark.parametrize(
    "shape, tr",
    [
        (MIXTRAL, Training(d=8, t=2, ep=8, etp=1, s=4096, gbs=64)),
        (MIXTRAL, Training(d=4, t=2, c=2, ep=4, s=4096, gbs=32)),  # etp = t
        (TINY_MOE, Training(d=4, t=2, c=2, ep=2, etp=1, s=256, gbs=8)),
    ],
)
def test_states_equal_megatrons_expert_parallel_formula(shape, tr):
    result = estimate(shape, tr, overheads=False)
    (only,) = result.stages
    parts = only["bytes"]
    ours = sum(
        parts[name]
        for name in ("weights", "gradients", "optimizer", "expert_weights", "expert_gradients", "expert_optimizer")
    )
    assert abs(ours - _megatron_states(shape, tr)) <= 6  # one byte of rounding per component


def test_expert_rows_do_not_grow_with_ep_and_grow_with_etp():
    """R = C_f k_e T t_e rows per GPU, T = s b / (t c): independent of e (the all-to-all evens the load out), and
    each of the MoE layer's tensors too (Megatron-LM PR #6782's correction, the research note's section 2)."""
    assert expert_rows().diff(e) == 0
    for part in moe_tensors(Switches(moe=True, shared=True, shared_gate=True)):
        assert sp.diff(part.expr, e) == 0, part.name
    values = {BY_NAME[n]: v for n, v in dict(C_f=1, k_e=2, s=4096, b=1, t=2, c=1, t_e=2).items()}
    assert int(expert_rows().xreplace(values)) == 1 * 2 * 4096 // 2 * 2


def test_mixtral_expert_weights_per_gpu():
    """d8 t2 p4 ep8 etp1: each GPU holds one expert of 3 h f_e in each of its 8 layers, bf16; the optimizer of the
    experts over the expert data-parallel d t c / (e t_e) = 2 ranks."""
    result = estimate(MIXTRAL, Training(d=8, t=2, p=4, ep=8, etp=1, s=4096, gbs=256), overheads=False)
    first = result.stages[0]["bytes"]
    per_layer = 3 * 4096 * 14336
    assert first["expert_weights"] == 2 * 8 * per_layer
    assert first["expert_optimizer"] == 12 * 8 * per_layer // 2


def test_dense_model_has_no_expert_terms():
    result = estimate(PRESETS["llama3-8b"], Training(d=8, s=4096, gbs=32))
    assert not any(name.startswith(("expert_", "moe_")) for name in result.bytes)
    assert "ep" not in result.as_json(80 * 2**30)["config"]


def test_plan_rows_with_expert_layouts_match_estimate_alone():
    """Every row of a small MoE search (ep in divisors(E), etp in {1, tp}, uneven splits too) equals estimate().
    ZeRO-1 only, as test_plan_best's tiny-moe cases (so a cold session derives its recompute choices' estimators
    once); plan against estimate at every ZeRO stage: test_cli_plan's dense search."""
    cluster = Cluster(TINY_MOE, gpus=8, s=256, gbs=16)
    plan = search(cluster, limit=0.8 * 2**30, zero=(1,))
    assert set(np.unique(plan.rows["e"]).tolist()) == {1, 2, 4, 8}
    assert set(np.unique(plan.rows["t_e"]).tolist()) == {1, 2, 4}  # t | gcd(a, k) = 4
    rng = np.random.default_rng(0)
    for i in rng.choice(plan.evaluated, size=min(400, plan.evaluated), replace=False):
        one = estimate(cluster.shape, plan.training(int(i)))
        got = plan.config(int(i))
        assert max(abs(one.bytes[name] - got["bytes"][name]) for name in got["bytes"]) <= 1
        assert (got["peak_bytes"], got["peak_from"]) == (one.peak, one.peak_from)


def mem4d(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "symbolic.cli", *argv], capture_output=True, text=True, timeout=120)


def test_cli_estimate_json_of_mixtral_with_ep():
    done = mem4d(
        "estimate",
        "--model",
        "mixtral-8x7b",
        "--dp",
        "8",
        "--tp",
        "2",
        "--pp",
        "4",
        "--ep",
        "8",
        "--etp",
        "1",
        "--seq",
        "4096",
        "--gbs",
        "256",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["param_count"] == 46_702_792_704 and out["config"]["ep"] == 8 and out["config"]["etp"] == 1
    assert {"expert_weights", "expert_optimizer", "moe_dispatch"} <= set(out["bytes"])
    assert all("moe_layers" in stage for stage in out["stages"])


def test_cli_formula_of_an_moe_model_lists_its_tensors():
    done = mem4d("formula", "--model", "tiny-moe", "--json")
    assert done.returncode == 0, done.stderr
    names = {item["name"] for item in json.loads(done.stdout)["formulas"]}
    assert {"expert_weights", "moe_layer", "moe_layer.expert_fc1_output", "moe_layer.shared_fc1_output"} <= names


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--model", "tiny-moe", "--dp", "6", "--ep", "3"], "does not divide the E=8 routed experts"),
        (["--model", "tiny-moe", "--dp", "2", "--ep", "4"], "must divide the dp x tp x cp"),
        (["--model", "tiny", "--dp", "2", "--ep", "2"], "has no routed experts"),
        (["--model", "tiny-moe", "--moe-capacity", "0"], "--moe-capacity"),
        (["--model", "tiny-moe", "--moe-capacity", "nan"], "--moe-capacity"),
        (["--model", "tiny-moe", "--ep", "0"], "--ep"),
        (
            ["--model", "tiny-moe", "--dp", "3", "--tp", "2", "--etp", "3"],
            "expert tensor parallel etp=3 does not divide",
        ),
        (["--model", "tiny-moe", "--tp", "2", "--no-sp"], "requires sequence parallelism"),
    ],
)
def test_cli_bad_expert_flags_are_one_line_exit_2(argv, needle):
    done = mem4d("estimate", "--seq", "256", "--gbs", "24", *argv)
    assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1, done.stderr
    assert needle in done.stderr
