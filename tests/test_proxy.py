"""`symbolic.plan.proxy`: the ranking proxy's terms on hand-checked cases.

Sources of truth: the 1F1B bubble (p - 1)/(m + p - 1) and its interleaved form (Narayanan et al. 2021); Megatron's
two all-reduces forward and two backward per layer under TP (Shoeybi et al. 2019) with ring all-reduce volume
2 (t - 1)/t; ring reduce-scatter + all-gather moving the same bytes as one all-reduce. Tolerance: 1e-12 relative.
"""

import numpy as np
import pytest

from symbolic.config.shapes import PRESETS
from symbolic.config.training_checks import RECOMPUTE
from symbolic.plan.enumerate import Cluster
from symbolic.plan.proxy import FORMULAS, Hardware, explain, terms

TINY = PRESETS["tiny"]


def _grid(**rows):
    """One-row-per-value grid; defaults give a single GPU with m = 4 micro batches."""
    base = dict(d=1, t=1, p=1, c=1, vpp=1, b=1, m=4, recompute=0, zero=1)
    base.update(rows)
    n = max(len(v) if isinstance(v, (list, tuple)) else 1 for v in base.values())
    return {k: np.broadcast_to(np.asarray(v), (n,)) for k, v in base.items()}


def test_single_gpu_scores_one():
    """N = 1, no recompute: no bubble, nothing to communicate, the proxy step time is the compute time."""
    out = terms(Cluster(TINY, gpus=1, s=256, gbs=4), _grid())
    assert out["score"][0] == 1.0
    for name in ("T_r", "bubble", "T_tp", "T_cp", "T_dp", "T_pp"):
        assert out[name][0] == 0.0


def test_bubble_1f1b_and_interleaved():
    out = terms(Cluster(TINY, gpus=4, s=256, gbs=8), _grid(p=4, m=8, vpp=[1, 2]))
    np.testing.assert_allclose(out["bubble"], [3 / 11, 3 / 19], rtol=1e-12)


def test_tp_volume_is_four_all_reduces_per_layer():
    """t = 2, one layer per GPU, m = 1: 4 all-reduces of s b h bf16 elements at 2 (t-1)/t = 1 -> 4 * 2 s b h bytes."""
    shape = TINY
    cluster = Cluster(shape, gpus=2 * shape.L, s=256, gbs=1)
    out = terms(cluster, _grid(t=2, p=shape.L, m=1))
    assert out["V_tp"][0] == pytest.approx(4 * 2 * 256 * shape.h, rel=1e-12)
    full = terms(cluster, _grid(t=2, p=shape.L, m=1, recompute=RECOMPUTE.index("full")))
    assert full["V_tp"][0] == pytest.approx(1.5 * out["V_tp"][0], rel=1e-12)  # the recomputed forward repeats 2 of 4


def test_tp_wider_than_a_node_pays_inter_node_bandwidth():
    hw = Hardware(gpus_per_node=8, intra_latency=0.0, inter_latency=0.0)
    out = terms(Cluster(TINY, gpus=16, s=256, gbs=4), _grid(t=[8, 16], c=[2, 1]), hw)
    np.testing.assert_allclose(out["T_tp"] / out["V_tp"], [1 / hw.intra_bw, 1 / hw.inter_bw], rtol=1e-12)
    # cp group: c ranks at stride t; t c = 16 > 8 so the cp ring crosses nodes
    assert out["T_cp"][0] == pytest.approx(out["V_cp"][0] / hw.inter_bw, rel=1e-12)


def test_latency_counts_ring_steps():
    """tp: 8 collectives of t - 1 ring steps per layer per micro batch; cp: 3 passes of c - 1 steps; dp: 2 (n - 1)."""
    hw = Hardware(gpus_per_node=8)
    L = TINY.L
    out = terms(Cluster(TINY, gpus=32, s=256, gbs=8), _grid(d=2, t=4, p=2, c=2, m=4), hw)
    assert out["M_tp"][0] == 8 * 3 * (L / 2) * 4
    assert out["M_cp"][0] == 3 * 1 * (L / 2) * 4
    assert out["M_dp"][0] == 2 * (4 - 1)
    assert out["M_pp"][0] == 2 * 1 * 4
    # tp (4 at stride 1) and cp (2 at stride 4) fit in a node of 8; dp (d c = 4 at stride 4) and pp do not
    assert out["T_tp"][0] == pytest.approx(out["M_tp"][0] * hw.intra_latency + out["V_tp"][0] / hw.intra_bw, rel=1e-12)
    assert out["T_cp"][0] == pytest.approx(out["M_cp"][0] * hw.intra_latency + out["V_cp"][0] / hw.intra_bw, rel=1e-12)
    assert out["T_dp"][0] == pytest.approx(out["M_dp"][0] * hw.inter_latency + out["V_dp"][0] / hw.inter_bw, rel=1e-12)


def test_dist_opt_moves_reduce_scatter_plus_all_gather():
    """ZeRO-1 (distributed optimizer): fp32 grads reduce-scattered + bf16 params all-gathered = (4 + 2)/(2 * 4) of an
    fp32 all-reduce."""
    out = terms(Cluster(TINY, gpus=8, s=256, gbs=8), _grid(d=8, m=1, zero=[1, 0]))
    assert out["V_dp"][0] / out["V_dp"][1] == pytest.approx(0.75, rel=1e-12)
    assert out["V_dp"][1] == pytest.approx(2 * 7 / 8 * TINY.param_count * 4, rel=1e-12)


def test_recompute_costs_order_scores():
    out = terms(Cluster(TINY, gpus=2, s=256, gbs=8), _grid(t=2, m=8, recompute=[0, 1, 2]))
    assert out["score"][0] > out["score"][1] > out["score"][2]
    assert out["T_r"][0] == 0.0
    # full recompute reruns every layer's forward: a third of the layers' forward + backward compute
    layers = TINY.L * (2 * (2 * TINY.h**2 * (1 + TINY.k / TINY.a) + 3 * TINY.h * TINY.f) + 2 * 256 * TINY.h)
    assert out["T_r"][2] / out["T_c"][2] == pytest.approx(layers / (3 * (layers + 2 * TINY.h * TINY.v)), rel=1e-12)


def test_cp_volume_zero_without_cp_and_grows_with_c():
    out = terms(Cluster(TINY, gpus=8, s=256, gbs=4), _grid(c=[1, 2, 8]))
    assert out["V_cp"][0] == 0.0 and 0 < out["V_cp"][1] < out["V_cp"][2]


def test_explain_prints_every_formula_and_says_proxy():
    text = explain(Hardware(gpus_per_node=4))
    assert "not a throughput prediction" in text
    assert "gpus_per_node=4" in text
    for name, formula, _ in FORMULAS:
        assert f"{name}" in text and formula in text


def test_zero_stages_and_uneven_stages_in_the_proxy():
    """Per step and parameter, DP moves 2 B_g (all-reduce), B_g + B_w (ZeRO-1: reduce-scatter, all-gather), m B_g +
    B_w (ZeRO-2: every micro batch's gradients reduce-scattered), m (B_g + 2 B_w) (ZeRO-3: weights gathered for each
    micro batch's forward and backward); the slowest of uneven stages stretches the step by p max_r L_r / L."""
    cluster = Cluster(TINY, gpus=16, s=256, gbs=32)
    out = terms(cluster, _grid(d=2, p=4, m=16, zero=[0, 1, 2, 3]))
    per = out["V_dp"] / out["V_dp"][0] * 2 * 4  # in bytes per parameter: B_g = 4, B_w = 2 (the default widths)
    np.testing.assert_allclose(per, [8, 6, 16 * 4 + 2, 16 * (4 + 4)], rtol=1e-12)
    even, uneven = terms(cluster, _grid(p=4, m=16, max_layers=[2, 3]))["skew"]
    assert even == 1.0 and uneven == pytest.approx(4 * 3 / TINY.L, rel=1e-12)


def _published_models():
    """Every built-in model, every published config.json the repository keeps (grids/models/published) and those of
    ../shared/data/configs where it is beside the checkout (Nemotron 3 Super's latent squared-ReLU MoE among them)."""
    import json
    from pathlib import Path

    from symbolic.config.hfconfig import resolve_model

    folder = Path(__file__).resolve().parent.parent / "grids" / "models" / "published"
    shared = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "configs"
    files = sorted([*folder.glob("*.json"), *shared.glob("*.json")])  # a multimodal wrapper without its tower: text
    return [
        *PRESETS.values(),
        *(resolve_model(str(path), text_only="text_config" in json.loads(path.read_text())) for path in files),
    ]


def test_score_at_most_one_and_volumes_non_negative_on_every_model():
    """T = skew (T_c + T_r) / (1 - bubble) + communication, skew >= 1: the score T_c / T is at most 1 and no volume is
    negative, for every model's experts (a squared-ReLU or latent MoE's experts counted as SwiGLU ones made the dense
    parameters negative: Nemotron 3 Super scored 18). Source of truth: FORMULAS; exact (no tolerance)."""
    for shape in _published_models():
        e = [1, 2] if shape.E and shape.E % 2 == 0 else [1, 1]
        out = terms(
            Cluster(shape, gpus=64, s=1024, gbs=64),
            _grid(d=[8, 4], t=[2, 4], p=[4, 4], m=[8, 4], e=e, max_layers=[-(-shape.L // 4)] * 2),
        )
        assert (out["score"] <= 1).all() and (out["score"] > 0).all(), (shape.name, out["score"])
        assert all((out[name] >= 0).all() for name in ("V_tp", "V_cp", "V_dp", "V_pp", "V_ep", "V_etp")), shape.name


def test_latent_squared_relu_experts_by_hand():
    """A latent MoE of squared-ReLU experts (Nemotron 3 Super's kind: 2 matrices of d_l x f_e each, projections
    [h, d_l] and [d_l, h] per token): F_lin by hand from its letters (1e-12)."""
    from dataclasses import replace

    base = PRESETS["qwen3-30b-a3b"]
    shape = replace(base, name="latent-relu2", mlp="relu2", moe_latent=512, dense_layers=())
    out = terms(Cluster(shape, gpus=1, s=256, gbs=4), _grid())
    x, s = shape, 256
    moe = 2 * 512 * x.k_e * 1.0 * x.f_e + 2 * x.h * x.f_s + x.h * x.E + 2 * x.h * 512
    F_lin = 2 * (2 * x.h * x.dh * (x.a + x.k) + moe)  # every layer an MoE layer
    T_c = 3 * 4 * s * (x.L * (F_lin + 2 * s * x.a * x.dh) + 2 * x.h * x.v) / Hardware().flops
    assert out["T_c"][0] == pytest.approx(T_c, rel=1e-12)
