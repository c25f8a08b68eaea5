"""Multi-head latent attention, multi-token prediction and the score-correction bias in the symbolic half: MLA's
parameters per tensor-parallel rank, its per-layer tensors under each recompute policy, the MTP modules on the last
stage, and plan and --balance with DeepSeek-V3's dense-first layers placed exactly.

Sources of truth: Megatron-Core's MLASelfAttention layout and saved tensors (NVIDIA/Megatron-LM d98e8a6,
multi_latent_attention.py: replicated down-projections and latent norms, column-parallel up-projections, row-parallel
output; query, key, value and output kept for the attention core), written out here as plain arithmetic; the
published config.json files; a brute force over every split. Exact (integers) unless a test says otherwise.
"""

import dataclasses
import itertools

import pytest
import sympy as sp

from model_files import PUBLISHED as FOLDER
from model_files import cli, cli_json

from symbolic.components.activations import layer_activation
from symbolic.components.attention import attention_tensors
from symbolic.components.mtp import mtp_params
from symbolic.components.weights import attention_params
from symbolic.config.glossary import inputs_for
from symbolic.config.hfconfig import from_hf_config
from symbolic.config.shapes import ModelShape
from symbolic.config.switches import Switches
from symbolic.config.symbols import BY_NAME
from symbolic.config.training import Training
from symbolic.estimator.estimate import estimate
from symbolic.plan.balance import balance

V3 = from_hf_config(FOLDER / "deepseek-v3.json")
LITE = from_hf_config(FOLDER / "deepseek-v2-lite.json")


def _value(expr, shape, training) -> int:
    return int(sp.sympify(expr).xreplace({BY_NAME[n]: v for n, v in inputs_for(shape, training).items()}))


@pytest.mark.parametrize("shape", [V3, LITE], ids=["v3", "v2-lite"])
@pytest.mark.parametrize("t", [1, 2, 8])
def test_attention_parameters_per_tensor_rank(shape, t):
    """q_a, the latents' norms and kv_a whole on every rank; q_b (or q), kv_b and o split over t; at t = 1 the
    config's own count (ModelShape.attention_count)."""
    h, a, dh, d_r, d_v, q_r, kv_r = shape.h, shape.a, shape.dh, shape.rope_dim, shape.v_dim, shape.q_lora, shape.kv_lora
    replicated = (h * q_r + q_r if q_r else 0) + h * (kv_r + d_r) + kv_r
    split = (q_r * a * (dh + d_r) if q_r else h * a * (dh + d_r)) + kv_r * a * (dh + d_v) + a * d_v * h
    sw = Switches.of(Training(t=t), shape=shape)
    assert _value(attention_params(sw), shape, Training(t=t)) == replicated + split // t
    if t == 1:
        assert replicated + split == shape.attention_count


@pytest.mark.parametrize("t, sp_on", [(1, True), (8, True), (8, False)])
def test_mla_layer_tensors_per_token(t, sp_on):
    """DeepSeek-V3, no recompute, bf16: per token and layer the norm input and the down-projections' input h each,
    the two latents before and after their norms (2 q_r + 2 kv_r), all split over t only with SP; the query and key
    a (dh + d_r) and the value and output a d_v each, split over t (t = 1: 100,352 elements, the worked count of
    the MLA notes plus the norm input); selective keeps the same with flash attention; full keeps the layer input."""
    h, a, tokens = 7168, 128, 4096
    sp_t = t if sp_on else 1
    per_token = (2 * h + 2 * 1536 + 2 * 512) / sp_t + a * (2 * 192 + 2 * 128) / t
    train = Training(t=t, s=tokens, sp=sp_on)
    sw = Switches.of(train, shape=V3)
    assert _value(sp.Add(*(x.expr for x in attention_tensors(sw))), V3, train) == 2 * tokens * per_token
    if t == 1:
        assert per_token == 100_352
    selective = Switches.of(dataclasses.replace(train, recompute="selective"), shape=V3)
    assert layer_activation(selective) == layer_activation(sw)
    full = Switches.of(dataclasses.replace(train, recompute="full"), shape=V3)
    assert _value(layer_activation(full), V3, train) == 2 * tokens * h // sp_t


def test_mtp_parameters_on_the_last_stage():
    """The MTP module's parameters but its routed experts and shared embedding and head, on one rank at t = 1 and
    e = 1: ModelShape.mtp_count less its 256 routed experts and its score bias (a buffer in Megatron-Core)."""
    train = Training(ep=1)
    sw = Switches.of(train, shape=V3)
    routed = V3.E * 3 * V3.h * V3.f_e
    assert _value(mtp_params(sw), V3, train) == V3.mtp_count - routed - V3.E == 11_610_068_224 - routed - V3.E


def test_estimate_places_mtp_and_the_bias_buffers():
    """DeepSeek-V3 on 16 stages: the MTP modules' tensors on the last stage only; the last stage holds the MTP
    layer's experts beside its own, and its weights and an embedding copy; every MoE layer keeps two fp32 [E] router
    buffers."""
    train = Training(d=128, p=16, ep=64, s=4096, gbs=1920, recompute="full", stage_layers=(4,) * 15 + (1,))
    est = estimate(V3, train)
    by_rank = {stage["rank"]: stage for stage in est.stages}
    assert by_rank[15]["bytes"]["mtp_activations"] > 0 and by_rank[1]["bytes"]["mtp_activations"] == 0
    experts = lambda r: by_rank[r]["bytes"]["expert_weights"]  # noqa: E731
    assert experts(15) * 4 == experts(1) * 2  # rank 15: one MoE layer + the MTP layer's; rank 1: four MoE layers
    assert by_rank[1]["bytes"]["router_expert_bias"] == 4 * 2 * 4 * 256
    # the last stage's bf16 weights: the MTP module's (its routed experts apart) and, at p > 1, the embedding's own
    # copy (Megatron-Core builds it where mtp_process), against the same model without MTP
    without = {s["rank"]: s for s in estimate(dataclasses.replace(V3, mtp=0), train).stages}
    routed = V3.E * 3 * V3.h * V3.f_e
    assert by_rank[15]["bytes"]["weights"] - without[15]["bytes"]["weights"] == 2 * (
        V3.v * V3.h + V3.mtp_count - routed - V3.E
    )
    assert by_rank[1]["bytes"]["weights"] == without[1]["bytes"]["weights"]


def _mixed(L=7) -> ModelShape:
    """A small dense-first MoE model (two dense layers, then MoE), sizes distinct."""
    return ModelShape("mixed", h=256, f=688, a=16, k=4, L=L, v=1024, E=8, k_e=2, f_e=176, dense_layers=(0, 1))


@pytest.mark.parametrize("p, recompute", [(3, "none"), (4, "full")])
def test_balance_of_a_dense_first_model_is_the_best_split(p, recompute):
    """--balance on a model of dense and MoE layers: its split's most loaded stage is the least over every split
    (each from estimate with its own dense and MoE layers placed), and the most even one the least of those with
    no stage above ceil(L/p)."""
    shape = _mixed()
    base = Training(d=2, p=p, s=512, gbs=4 * p, recompute=recompute, zero=1)
    bal = balance(shape, base)
    splits = [x for x in itertools.product(range(1, shape.L), repeat=p) if sum(x) == shape.L]
    peaks = {x: estimate(shape, dataclasses.replace(base, stage_layers=x)).peak for x in splits}
    assert bal.peak == min(peaks.values()) == estimate(shape, bal.training).peak
    cap = -(-shape.L // p)
    assert bal.even_peak == min(v for x, v in peaks.items() if max(x) <= cap) and max(bal.even) <= cap


def test_plan_rows_of_a_dense_first_model_match_estimate():
    """plan on a dense-first MoE model lists pipeline sizes that do not divide L, each uneven row's peak exactly as
    estimate gives it for that --stage-layers (its ranks' own dense and MoE layers)."""
    from symbolic.plan.enumerate import Cluster
    from symbolic.plan.search import search

    shape = _mixed()
    plan = search(Cluster(shape, gpus=12, s=256, gbs=24), limit=2 * 2**30, zero=(1,))  # the split, not the stage
    uneven = [i for i in range(plan.evaluated) if plan.rows["split"][i] > 0]
    assert {3, 4} <= {int(plan.rows["p"][i]) for i in uneven}
    for i in uneven[:: max(1, len(uneven) // 40)]:
        one = estimate(shape, plan.training(i))
        config = plan.config(i)
        assert (one.peak, one.peak_from) == (config["peak_bytes"], config["peak_from"]), plan.training(i)


def test_cli_estimates_deepseek_v3_on_its_published_layout():
    """mem4d estimate reads DeepSeek-V3's config.json (fp8 checkpoint, MTP, noaux_tc) and counts its 16-stage,
    64-way expert-parallel layout (exit 0, JSON)."""
    layout = "--dp 128 --pp 16 --ep 64 --seq 4096 --gbs 1920 --recompute full --balance".split()
    out = cli_json("estimate", "--model", str(FOLDER / "deepseek-v3.json"), *layout)
    assert out["param_count"] == 682_636_487_424 and sum(out["config"]["stage_layers"]) == 61
    assert len(out["stages"]) == 16


def test_glossary_lists_mla_letters_for_mla_models_only():
    """The report's symbol table: q_r, kv_r, d_r, d_v, n_mtp with their values for DeepSeek-V3, absent for a GQA
    model (every one 0)."""
    from symbolic.config.shapes import PRESETS
    from symbolic.render.formulas_tex import glossary

    train = Training()
    with_mla = "\n".join(glossary(inputs_for(V3, train), moe=True))
    assert "$q_{r}$" in with_mla and "$n_{mtp}$" in with_mla and "1,536" in with_mla
    assert "n_{i}" not in with_mla  # the sparse-attention indexer's letters: for a model with one (tests/test_dsa.py)
    without = "\n".join(glossary(inputs_for(PRESETS["llama3-8b"], train)))
    assert "q_{r}" not in without and "kv_{r}" not in without


def test_sigmoid_routing_keeps_its_own_scores():
    """DeepSeek-V3's sigmoid router keeps the routing's fp32 sigmoid [T, E] and two fp32 [T, 1] denominators beside
    the aux loss's [T, E] (Megatron-Core moe_utils.py); DeepSeek-V2's softmax router does not."""
    from symbolic.components.moe import moe_tensors

    V2 = from_hf_config(FOLDER / "deepseek-v2.json")
    train = Training(s=4096)
    for shape, extra in ((V3, 4096 * (V3.E + 2) * 4), (V2, 0)):
        sw = Switches.of(train, shape=shape)
        names = {x.name: x for x in moe_tensors(sw)}
        plain = Switches.of(train, shape=dataclasses.replace(shape, sigmoid=False))
        assert (
            _value(
                sp.Add(*(x.expr for x in moe_tensors(sw))) - sp.Add(*(x.expr for x in moe_tensors(plain))), shape, train
            )
            == extra
        )
        assert ("router_sigmoid" in names) == shape.sigmoid


@pytest.mark.parametrize(
    "modules, per_token",
    [
        # t = 1: norm input and latents before their norms, the RoPE key, the attention output (notes of Megatron-Core's
        # CheckpointWithoutOutput around qkv_up_proj_and_rope_apply); without layernorm also the down-projections' input
        ("core_attn,mla_up_proj,layernorm", 7168 + 1536 + 512 + 64 + 128 * 128),
        ("core_attn,mla_up_proj", 2 * 7168 + 1536 + 512 + 64 + 128 * 128),
        ("core_attn,layernorm", 100_352 - 7168),
    ],
)
def test_recompute_modules_of_an_mla_layer(modules, per_token):
    """Megatron-Core's --recompute-modules on DeepSeek-V3's attention block (t = 1, bf16): mla_up_proj keeps the
    latents before their norms and the RoPE key instead of q, k, v and the normed latents; layernorm drops the normed
    input; what they drop is one layer's working set in its backward."""
    from symbolic.components.activations import recomputed_tensors

    tokens = 4096
    train = Training(s=tokens, recompute="selective", recompute_modules=modules)
    sw = Switches.of(train, shape=V3)
    attention = [x for x in layer_tensors_of(sw) if x.name not in MLP_HALF]
    assert _value(sp.Add(*(x.expr for x in attention)), V3, train) == 2 * tokens * per_token
    from symbolic.components.mla import rope_key

    none = Switches.of(dataclasses.replace(train, recompute="none", recompute_modules="core_attn"), shape=V3)
    kept_instead = rope_key(sw).expr if "mla_up_proj" in modules else 0
    assert sp.simplify(layer_activation(none) - layer_activation(sw) - recomputed_tensors(sw) + kept_instead) == 0


MLP_HALF = {"norm2_input", "mlp_input", "gate", "up", "swiglu", "down_input"}


def layer_tensors_of(sw):
    from symbolic.components.activations import layer_tensors

    return layer_tensors(sw)


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["--model", "llama3-8b", "--recompute", "selective", "--recompute-modules", "core_attn,mla_up_proj"],
            "has no multi-head latent attention",
        ),
        (
            ["--model", "llama3-8b", "--recompute", "selective", "--recompute-modules", "moe_act"],
            "has no routed experts",
        ),
        (
            ["--model", "llama3-8b", "--recompute", "none", "--recompute-modules", "layernorm"],
            "give --recompute selective",
        ),
        (
            ["--model", "llama3-8b", "--recompute", "selective", "--recompute-modules", "moe"],
            "--recompute-modules must be",
        ),
        (
            [
                "--model",
                "llama3-8b",
                "--recompute",
                "selective",
                "--recompute-modules",
                "layernorm",
                "--profile",
                "jax",
            ],
            "Megatron-Core's",
        ),
    ],
)
def test_bad_recompute_modules_are_one_line_exit_2(argv, message):
    done = cli("estimate", *argv)
    assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1 and message in done.stderr, (
        done.stderr
    )
