"""MiMo-V2-Flash under the megatron recipe: value heads d_v = 128 beside query/key heads dh = 192, and the
sliding-window layers' own KV heads (k_w = 8 beside k = 4) and sinks, held to hand derivations on the published
config.json.

Sources of truth: transformers 5.25.0 models/mimo_v2_flash/modeling_mimo_v2_flash.py (MiMoV2FlashAttention: q_proj
[h, a dh], k_proj [h, kv dh], v_proj [h, kv d_v], o_proj [a d_v, h], sinks [a] in the sliding-window layers) for the
tensors, and megatron-core 0.16.1's layout for their split (linear_qkv column-parallel and linear_proj row-parallel over
t, attention.py; the learnable softmax_offset [a / t], dot_product_attention.py; per-layer num_query_groups,
heterogeneous_config.py; the fused attention's saved q, k, v and output at k_channels / v_channels,
extensions/transformer_engine.py), written out here as plain arithmetic. Exact (integers) throughout.
"""

import dataclasses
import json
from pathlib import Path

import pytest
import sympy as sp

from symbolic.cli import main
from symbolic.components.activations import mixer_tensors
from symbolic.components.attention import attention_tensors
from symbolic.components.weights import attention_params, swa_attention_params
from symbolic.config.glossary import inputs_for
from symbolic.config.hfconfig import from_hf_config
from symbolic.config.switches import Switches
from symbolic.config.symbols import BY_NAME
from symbolic.config.training import Training
from symbolic.estimator.estimate import estimate

MIMO = Path(__file__).resolve().parent.parent / "grids" / "models" / "published" / "mimo-v2-flash.json"
SHAPE = from_hf_config(MIMO)
h, f, a, k, dh, dv, v, E, f_e = 4096, 16384, 64, 4, 192, 128, 152576, 256, 2048
k_w = 8
TRAIN = Training(d=8, t=2, p=4, ep=8, s=4096, b=1)


def _value(expr, training: Training) -> int:
    return int(sp.sympify(expr).xreplace({BY_NAME[n]: x for n, x in inputs_for(SHAPE, training).items()}))


def test_the_published_file_reads_as_the_hand_letters():
    assert (SHAPE.h, SHAPE.f, SHAPE.a, SHAPE.k, SHAPE.dh, SHAPE.v_dim, SHAPE.v, SHAPE.E, SHAPE.f_e, SHAPE.swa_k) == (
        h,
        f,
        a,
        k,
        dh,
        dv,
        v,
        E,
        f_e,
        k_w,
    )
    assert SHAPE.L_w == 39 and SHAPE.swa_sinks and SHAPE.L_e == 47


@pytest.mark.parametrize("t", [1, 2, 8])
def test_attention_weights_per_tensor_rank(t):
    """Q [h, a dh] and K [h, k dh] at dh, V [h, k d_v] and O [a d_v, h] at d_v, all split over t; a sliding-window
    layer's K, V at k_w heads and its sinks [a] split with the heads; at t = 1 the config's own counts."""
    sw = Switches.of(Training(t=t), shape=SHAPE)
    full = h * a * dh + h * k * dh + h * k * dv + a * dv * h
    window = h * a * dh + h * k_w * dh + h * k_w * dv + a * dv * h + a
    assert _value(attention_params(sw), Training(t=t)) == full // t
    assert _value(swa_attention_params(sw), Training(t=t)) == window // t
    if t == 1:
        assert (full, window) == (SHAPE.attention_count, SHAPE.swa_attention_count)


def test_attention_tensors_at_their_widths():
    """Per micro batch, bf16, t = 2 with SP, c = 2: q [s, b, a dh] and k [s, b, kv dh] at dh, v [s, b, kv d_v] and
    the attention output (flash attention's saved output, linear_proj's input) [s, b, a d_v] at d_v, each split over
    t c; the sliding-window layer's k and v at k_w heads."""
    training = dataclasses.replace(TRAIN, c=2)
    sw = Switches.of(training, shape=SHAPE)
    token = 2 * training.s * training.b // (training.t * training.c)
    for tensors, kv in ((attention_tensors(sw), k), (mixer_tensors(sw, "swa"), k_w)):
        got = {part.name: _value(part.expr, training) for part in tensors if part.name in ("q", "k", "v", "attn_out")}
        assert got == {"q": token * a * dh, "k": token * kv * dh, "v": token * kv * dv, "attn_out": token * a * dv}


def test_first_stage_weights_hand_derived():
    """Rank 0 of pp 4 holds layers 0-11: full attention in 0, 5 and 11, sliding-window in the other 9; layer 0 dense,
    11 MoE layers. Its bf16 weights: the embedding v h / t, 3 full and 9 sliding-window attentions, 24 RMSNorm
    weights h (replicated), one dense SwiGLU 3 h f / t, 11 routers [h, E] (replicated); the experts apart: 11 layers of
    E / e experts of 3 h f_e split over t_e = t."""
    t, e = TRAIN.t, TRAIN.ep
    full = (h * a * dh + h * k * dh + h * k * dv + a * dv * h) // t
    window = (h * a * dh + h * k_w * dh + h * k_w * dv + a * dv * h + a) // t
    params = v * h // t + 3 * full + 9 * window + 24 * h + 3 * h * f // t + 11 * h * E
    first = estimate(SHAPE, TRAIN).stages[0]
    assert first["rank"] == 0 and first["layers"] == 12
    assert first["bytes"]["weights"] == 2 * params
    assert first["bytes"]["expert_weights"] == 2 * 11 * (E // e) * 3 * h * f_e // t


def test_first_stage_activations_against_plain_attention():
    """The same stage of the same model with every layer's attention plain GQA at dh (k heads, no sinks) keeps, per
    micro batch in flight (4 on rank 0), B_a s b / (t c) times: in each of the 3 full-attention layers v and the
    attention output narrower by k (dh - d_v) and a (dh - d_v); in each of the 9 sliding-window layers k and v at k_w
    heads (k_w dh + k_w d_v in place of 2 k dh) and the output a (dh - d_v) narrower."""
    plain = dataclasses.replace(SHAPE, v_dim=0, swa_layers=(), swa_k=0, swa_sinks=False)
    ours, theirs = (estimate(shape, TRAIN).stages[0] for shape in (SHAPE, plain))
    token = 2 * TRAIN.s * TRAIN.b // TRAIN.t
    full = k * dv + a * dv - (k * dh + a * dh)
    window = k_w * dh + k_w * dv + a * dv - (2 * k * dh + a * dh)
    assert ours["in_flight"] == theirs["in_flight"] == 4
    assert ours["bytes"]["activations"] - theirs["bytes"]["activations"] == 4 * token * (3 * full + 9 * window)


def test_parameters_through_the_recipe_are_the_count():
    """On one GPU the weights and expert weights are the config's parameters at B_w = 2 each, but the 47 MoE layers'
    score-correction biases [E], buffers Megatron-Core keeps in fp32 (router_expert_bias)."""
    only = estimate(SHAPE, Training(s=1024)).stages[0]["bytes"]
    assert only["weights"] + only["expert_weights"] == 2 * (SHAPE.param_count - 47 * E)


def test_estimate_prints_and_json(capsys):
    assert main(["estimate", "--model", str(MIMO), "--tp", "2", "--pp", "4", "--ep", "8", "--dp", "8", "--json"]) == 0
    out = capsys.readouterr().out
    report = json.loads(out[out.index("{") :])
    assert report["param_count"] == SHAPE.param_count and len(report["stages"]) == 4


@pytest.mark.parametrize(
    "args",
    [
        ["estimate", "--recipe", "torchtitan"],
        ["estimate", "--recipe", "deepspeed"],
        ["estimate", "--profile", "jax", "--seq", "256"],
    ],
)
def test_the_other_recipes_refuse_it_by_name(capsys, args):
    assert main(args + ["--model", str(MIMO)]) == 2
    err = [line for line in capsys.readouterr().err.strip().splitlines() if not line.startswith("note: ")]
    assert len(err) == 1 and "which only the megatron recipe models" in err[0]  # the checkpoint's fp8 note apart


def test_plan_rows_match_estimate():
    """plan on 16 GPUs (s 256, gbs 16) evaluates MiMo-V2-Flash's rows; 60 of them, spread evenly, equal estimate() of
    its configuration, each rank with its own layers of each kind (bytes to 1, the peak and where it is; source of
    truth: estimate, one configuration at a time)."""
    from symbolic.plan.enumerate import Cluster
    from symbolic.plan.search import search

    plan = search(Cluster(SHAPE, gpus=16, s=256, gbs=16), limit=2**31, zero=(1,))
    assert plan.evaluated > 20
    for i in range(0, plan.evaluated, plan.evaluated // 60):
        one, got = estimate(SHAPE, plan.training(i)), plan.config(i)
        assert max(abs(one.bytes[name] - got["bytes"][name]) for name in got["bytes"]) <= 1
        assert (got["peak_bytes"], got["peak_from"]) == (one.peak, one.peak_from)


def test_model_flops_per_token_hand_derived():
    """The step-time model's forward FLOPs per token (Narayanan et al. 2021 eq. 3, 2 per multiply-add): Q, K, V, O
    GEMMs 2 h (a + kv)(dh + d_v) in each layer at its KV heads (k in the 9 full-attention layers, k_w in the 39
    sliding-window ones), the causal core s a (dh + d_v) (QK^T at dh, AV at d_v, s/2 keys on average), one dense
    SwiGLU 6 h f, 47 MoE layers' router 2 h E and top-8 experts 6 h f_e k_e, the head 2 h v."""
    from types import SimpleNamespace

    from symbolic.time.flops import model_flops

    kinds = SimpleNamespace(moe=True, mla=False, q_lora=0, narrow_v=True, swa=True)
    s, L, L_w, L_e, k_e = TRAIN.s, 48, 39, 47, 8
    hand = (
        2 * h * ((L - L_w) * (a + k) + L_w * (a + k_w)) * (dh + dv)
        + L * s * a * (dh + dv)
        + (L - L_e) * 6 * h * f
        + L_e * (2 * h * E + 6 * h * f_e * k_e)
        + 2 * h * v
    )
    assert _value(model_flops(kinds, 3)[1], TRAIN) == hand
