"""plan.policies: the recompute choices plan searches, against the rule table, `estimate` and the proxy's formula.

Sources of truth: Training.check (every searched choice is a valid configuration of its recipe), estimate (the
memory premise of leaving a set out: adding the matmul-free modules never raises a peak; core_attn drops nothing
under flash attention), FORMULAS' F_r (by hand). Tolerance: none (bytes), 1e-12 relative (seconds).
"""

import dataclasses

import numpy as np
import pytest

from plan_shapes import MLA_MOE
from symbolic.config.shapes import PRESETS
from symbolic.config.training import Training
from symbolic.estimator.estimate import estimate
from symbolic.plan.enumerate import Cluster
from symbolic.plan.policies import Policy, label_of, policies, short_label
from symbolic.plan.proxy import terms
from symbolic.recipes import widths


def _labels(profile, shape, flash=True):
    return [policy.label for policy in policies(profile, shape, flash)]


def test_megatron_sets_per_model():
    assert _labels("paper", PRESETS["llama3-8b"]) == [
        "none",
        "selective",
        "selective layernorm",
        "selective core_attn,layernorm",
        "full",
    ]
    assert _labels("paper", PRESETS["mixtral-8x7b"]) == [
        "none",
        "selective",
        "selective layernorm,moe_act",
        "selective core_attn,layernorm,moe_act",
        "full",
    ]
    assert _labels("paper", MLA_MOE) == [
        "none",
        "selective",
        "selective layernorm,moe_act",
        "selective mla_up_proj,layernorm,moe_act",
        "selective core_attn,mla_up_proj,layernorm,moe_act",
        "full",
    ]
    # without flash attention core_attn drops the s x s scores: its sets with the free modules come too
    assert _labels("paper", PRESETS["llama3-8b"], flash=False) == [
        "none",
        "selective",
        "selective layernorm",
        "selective core_attn,layernorm",
        "full",
    ]
    assert "selective core_attn,mla_up_proj,layernorm,moe_act" in _labels("paper", MLA_MOE, flash=False)
    assert "selective core_attn,layernorm,moe_act" in _labels("paper", MLA_MOE, flash=False)


def test_other_recipes_keep_their_own_selective():
    assert _labels("torchtitan", PRESETS["llama3-8b"]) == ["none", "selective"] + [
        f"selective every {n}" for n in range(2, 9)
    ] + ["full"]
    assert (
        _labels("deepspeed", PRESETS["llama3-8b"])
        == _labels("jax", PRESETS["llama3-8b"])
        == ["none", "selective", "full"]
    )
    # with experts torchtitan's --ac-every is refused (which blocks it checkpoints, dense or MoE, is not modelled)
    assert _labels("torchtitan", PRESETS["mixtral-8x7b"]) == ["none", "selective", "full"]
    assert _labels("deepspeed", PRESETS["mixtral-8x7b"]) == []  # the recipe refuses experts: nothing to search


@pytest.mark.parametrize(
    "profile, shape",
    [("paper", PRESETS["tiny"]), ("paper", PRESETS["tiny-moe"]), ("paper", MLA_MOE), ("torchtitan", PRESETS["tiny"])],
)
def test_every_searched_choice_is_a_valid_training(profile, shape):
    for policy in policies(profile, shape):
        Training(d=2, s=256, gbs=4, zero=3, **policy.fields, **widths(profile)).check(shape, profile)  # or raises


@pytest.mark.parametrize(
    "shape, p", [(PRESETS["tiny"], 1), (PRESETS["tiny"], 2), (PRESETS["tiny-moe"], 2), (MLA_MOE, 2), (MLA_MOE, 1)]
)
def test_matmul_free_modules_never_raise_a_peak(shape, p):
    """The premise of leaving out sets without layernorm (and moe_act): adding them never holds more; with flash
    attention core_attn drops nothing, so a set with it holds what the set without it holds."""
    base = Training(d=2, p=p, s=512, gbs=8, recompute="selective", zero=1)
    free = "layernorm" + (",moe_act" if shape.E else "")
    plain = estimate(shape, base).peak
    freed = estimate(shape, dataclasses.replace(base, recompute_modules=free)).peak
    both = estimate(shape, dataclasses.replace(base, recompute_modules="core_attn," + free)).peak
    assert freed <= plain and both == freed
    assert estimate(shape, dataclasses.replace(base, recompute="none")).peak == plain


def test_proxy_recompute_time_per_choice():
    """F_r by hand: core_attn F_att, mla_up_proj 2 a (q_r (dh + d_r) + kv_r (dh + d_v)), layernorm and moe_act 0,
    --ac-every n the floor(W / n) / W share of the whole layer at the widest stage W, full the whole layer."""
    x = MLA_MOE
    cluster = Cluster(x, gpus=4, s=512, gbs=8)
    choices = policies("paper", x) + (Policy("selective", ac_every=2),)
    n = len(choices)
    grid = dict(
        d=np.full(n, 2),
        t=np.ones(n),
        p=np.full(n, 2),
        c=np.ones(n),
        vpp=np.ones(n),
        b=np.ones(n),
        m=np.full(n, 4),
        zero=np.ones(n, int),
        policy=np.arange(n),
        max_layers=np.full(n, 3.0),
        recompute=np.array([["none", "selective", "full"].index(q.recompute) for q in choices]),
    )
    got = terms(cluster, grid, policies=choices)
    plain = terms(cluster, {**{k: v for k, v in grid.items() if k != "policy"}})
    per_step = cluster.gbs * cluster.s * x.L / (cluster.gpus * 400e12)
    F_att = 2.0 * cluster.s * x.a * x.dh
    F_up = 2.0 * x.a * (x.q_lora * (x.dh + x.rope_dim) + x.kv_lora * (x.dh + x.v_dim))
    F_layer = plain["T_r"][[q.recompute for q in choices].index("full")] / per_step
    want = {
        "none": 0.0,
        "selective": F_att,
        "selective layernorm,moe_act": 0.0,
        "selective mla_up_proj,layernorm,moe_act": F_up,
        "selective core_attn,mla_up_proj,layernorm,moe_act": F_att + F_up,
        "full": F_layer,
        "selective every 2": F_layer * 1 / 3,
    }
    for i, policy in enumerate(choices):
        assert got["T_r"][i] == pytest.approx(per_step * want[policy.label], rel=1e-12, abs=0), policy.label


def test_labels_from_json_configs():
    assert label_of({"recompute": "selective"}) == "selective"
    assert (
        label_of({"recompute": "selective", "recompute_modules": "layernorm,moe_act"}) == "selective layernorm,moe_act"
    )
    assert label_of({"recompute": "selective", "ac_every": 3}) == "selective every 3"
    assert (
        short_label({"recompute": "selective", "recompute_modules": "mla_up_proj,layernorm,moe_act"})
        == "sel. up,ln,act"
    )
    assert short_label({"recompute": "selective", "ac_every": 4}) == "sel./4"
    assert short_label({"recompute": "full"}) == "full"


def test_torchtitan_ac_every_at_tp_2_keeps_eager_blocks():
    """The blocks --ac-every leaves alone keep eager autograd's tensors (fsdp2.layer_tensors), listed at tp = 1 and 2
    (records/torch-saved-cpu.jsonl): --ac-every and --recompute none are accepted with tensor parallelism, and the
    blocks it leaves alone hold what --recompute none's hold."""
    base = dict(d=2, t=2, s=256, gbs=4, zero=3, **widths("torchtitan"))
    tiny, L = PRESETS["tiny"], PRESETS["tiny"].L
    act = {
        policy: estimate(tiny, Training(**base, **kw), "torchtitan").stages[0]["bytes"]["activations"]
        for policy, kw in (
            ("every 2", dict(recompute="selective", ac_every=2)),
            ("none", dict(recompute="none")),
            ("full", dict(recompute="full")),
        )
    }
    assert abs(act["every 2"] - (act["none"] * (L - L // 2) + act["full"] * (L // 2)) / L) <= 1  # whole bytes
    Training(recompute="selective", **base).check(PRESETS["tiny"], "torchtitan")  # op-level SAC is modelled at tp 2
