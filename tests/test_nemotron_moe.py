"""Nemotron-H with MoE blocks (Nemotron 3: 'E' in hybrid_override_pattern): latent MoE blocks of squared-ReLU experts
and a shared squared-ReLU MLP, sigmoid routing with a score-correction bias, an MTP layer of an attention and an MoE
block; read from config.json, counted to the parameter, each block's tensors as Megatron-Core 0.16.1 keeps them, each
pipeline stage with the E blocks it holds, planned with expert parallelism, and the limits refused in one line.

Sources of truth: the parameter count of transformers 5.25.0's own modeling code on the meta device (benchmarks/
hf_count.py on this file without its MTP layer, which transformers does not build; torch 2.14.1, run 2026-12-07:
the number below is its output, its e_score_correction_bias buffers listed apart); the MoE block's tensors from
megatron-core 0.16.1 transformer/moe/ (moe_layer.py latent projections, experts.py TEGroupedMLP's unfused
squared_relu x probs, router.py, token_dispatcher.py) written out literally here; plan's rows from estimate(), one
configuration at a time. Tolerances: counts and bytes exact (plan's rows to 1 byte)."""

import numpy as np
import pytest

from refusals import assert_profiles_refuse, assert_refused
from model_files import NEMOTRON_H, read as _read

from symbolic.config.training import Training
from symbolic.estimator.estimate import estimate

# blocks M E * E - E with sizes that all differ: h 256, f 688, E 8 experts (top 2) of 176 over a latent of 96, a shared
# MLP of 352, one MTP layer
SMALL = {
    **NEMOTRON_H,
    "hybrid_override_pattern": "ME*E-E",
    "n_routed_experts": 8,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 176,
    "moe_shared_expert_intermediate_size": 352,
    "moe_latent_size": 96,
    "num_nextn_predict_layers": 1,
    "mtp_hybrid_override_pattern": "*E",
}
HF_PARAMETERS, HF_BIAS_BUFFERS = 2_919_344, 24  # transformers' count of SMALL without its MTP layer


def test_counted_as_transformers_counts_it(tmp_path):
    """The blocks and the MoE fields read off the pattern; the count is transformers' parameters plus the score-
    correction bias [E] of each MoE block (a buffer there, Megatron-Core's expert_bias) plus the MTP layer: enorm,
    hnorm, eh_proj [h, 2h], an attention block, an MoE block (each with its norm) and its final norm."""
    shape = _read(tmp_path, SMALL)
    assert (shape.mamba_layers, shape.mixerless_layers, shape.mlpless_layers, shape.dense_layers) == (
        (0,),
        (1, 3, 4, 5),
        (0, 2),
        (0, 2, 4),
    )
    assert (shape.E, shape.k_e, shape.f_e, shape.f_s, shape.moe_latent, shape.mlp, shape.sigmoid) == (
        8,
        2,
        176,
        352,
        96,
        "relu2",
        True,
    )
    h, E, f_e, d_l, f_s = 256, 8, 176, 96, 352
    moe = E * h + 2 * E * f_e * d_l + 2 * h * f_s + 2 * h * d_l + E  # router, experts, shared, latent, bias
    assert shape.moe_mlp_count == moe
    assert shape.mtp_count == 5 * h + 2 * h * h + (2 * h * 8 * 32 + 2 * h * 2 * 32) + moe
    assert shape.param_count - shape.mtp_count == HF_PARAMETERS + HF_BIAS_BUFFERS


def _moe_block(s: int, t: int, e: int, te: int, h=256, E=8, k=2, f_e=176, f_s=352, d_l=96) -> int:
    """One latent MoE block's saved bytes (b = 1, bf16, SP, C_f 1, sigmoid routing): the norm's input and output
    [T, h]; the router's fp32 sigmoid [T, E], two [T, 1] denominators, top-k probs [T, k], int64 top-k indices [T, k],
    fp32 aux-loss scores [T, E], int64 permute indices [T, E + k]; the experts' R = k T te received rows [R, d_l],
    relu's output, the square, fc2's input [R, f_e / te] each and the probs [R, 1]; the shared MLP's relu output and
    fc2 input [s, f_s / t]; fc2_latent_proj's input [T, d_l]."""
    T = s // t
    R = k * T * te
    router = 4 * T * E + 4 * T * 2 + 4 * T * k + 8 * T * k + 4 * T * E + 8 * T * (E + k)
    experts = 2 * R * d_l + 3 * 2 * R * f_e // te + 2 * R
    return 2 * 2 * T * h + router + experts + 2 * 2 * s * f_s // t + 2 * T * d_l


def test_an_moe_block_keeps_its_tensors(tmp_path):
    """One more E block at the end (t = 2, ep = 2, etp = 2, s = 512, no MTP, no recompute) adds one latent MoE
    block's saved tensors to the activations, and its E/e experts' weights (2 d_l f_e / t_e each, bf16) and the
    router, shared MLP over t and latent projections (replicated over t) to the weights."""
    base = SMALL | {"num_nextn_predict_layers": 0}
    one, two = (_read(tmp_path, base | {"hybrid_override_pattern": pattern}) for pattern in ("ME*E-E", "ME*E-EE"))
    train = Training(d=2, t=2, s=512, b=1, gbs=2, ep=2, recompute="none")
    a, b = (estimate(shape, train).stages[0]["bytes"] for shape in (one, two))
    assert b["activations"] - a["activations"] == _moe_block(512, 2, 2, 2)
    assert b["expert_weights"] - a["expert_weights"] == 2 * (8 // 2) * 2 * 96 * 176 // 2
    assert b["weights"] - a["weights"] == 2 * (256 + 256 * 8 + 2 * 256 * 352 // 2 + 2 * 256 * 96)  # norm, router ...


def test_each_stage_holds_its_own_e_blocks(tmp_path):
    """p = 2 over M E * | E - E: MoE blocks 1 and 2, and the last stage the MTP layer's MoE block too: expert
    weights of 1 and 3 blocks (t = 1, ep = 2)."""
    est = estimate(_read(tmp_path, SMALL), Training(d=2, p=2, s=256, gbs=8, ep=2))
    assert [
        (st["moe_layers"], st["mamba_layers"], st["mixerless_layers"], st["mlpless_layers"]) for st in est.stages
    ] == [(1, 1, 1, 2), (2, 0, 3, 0)]
    per_layer = 2 * (8 // 2) * 2 * 96 * 176
    assert [st["bytes"]["expert_weights"] for st in est.stages] == [per_layer, 3 * per_layer]


def test_limits_are_one_line_and_plan_rows_match_estimate(tmp_path):
    """The all-gather dispatcher and the other recipes: one line each; every row plan evaluates for SMALL on 4 GPUs
    with ep > 1 (every 10th; ep searched) equals estimate() of its configuration (bytes to 1, the peak and where it is)."""
    from symbolic.plan.enumerate import Cluster
    from symbolic.plan.search import search

    shape = _read(tmp_path, SMALL)
    assert_refused(shape, [(Training(d=2, s=256, ep=2, moe_dispatcher="allgather"), "latent MoE")])
    assert_profiles_refuse(shape, dict.fromkeys(("jax", "torchtitan", "deepspeed"), "latent MoE"))
    plan = search(Cluster(shape, gpus=4, s=256, gbs=8), limit=2**31, zero=(1,))
    assert plan.evaluated and np.any(plan.rows["e"] > 1)
    for i in np.flatnonzero(plan.rows["e"][: plan.evaluated] > 1)[::10]:  # every 10th (of 385), for time
        training = plan.training(i)
        one, got = estimate(shape, training), plan.config(i)
        assert max(abs(one.bytes[name] - got["bytes"][name]) for name in got["bytes"]) <= 1
        assert (got["peak_bytes"], got["peak_from"]) == (one.peak, one.peak_from)


@pytest.mark.parametrize(
    "change, needle",
    [
        ({"mtp_hybrid_override_pattern": "*-"}, "key 'mtp_hybrid_override_pattern'"),
        ({"n_shared_experts": 2}, "key 'n_shared_experts'"),
        ({"hybrid_override_pattern": "ME*E-M"}, "multi-token-prediction module repeats the last layer"),
    ],
)
def test_what_an_moe_file_may_not_say_is_one_line(tmp_path, change, needle):
    from symbolic.config.errors import ConfigError

    with pytest.raises(ConfigError) as err:
        _read(tmp_path, SMALL | change)
    assert "\n" not in str(err.value) and needle in str(err.value), str(err.value)


MEGATRON = """MODEL_ARGS:
  --hybrid-layer-pattern: ME*E-E
  --hidden-size: 256
  --ffn-hidden-size: 688
  --num-attention-heads: 8
  --group-query-attention: true
  --num-query-groups: 2
  --kv-channels: 32
  --mamba-num-heads: 16
  --mamba-head-dim: 24
  --mamba-state-dim: 40
  --mamba-num-groups: 4
  --position-embedding-type: none
  --normalization: RMSNorm
  --untie-embeddings-and-output-weights: true
  --disable-bias-linear: true
  --squared-relu: true
  --num-experts: 8
  --moe-router-topk: 2
  --moe-ffn-hidden-size: 176
  --moe-latent-size: 96
  --moe-shared-expert-intermediate-size: 352
  --moe-router-score-function: sigmoid
  --moe-router-enable-expert-bias: true
  --seq-length: 512
  --vocab-size: 1000
  --micro-batch-size: 1
  --global-batch-size: 8
"""


def test_a_megatron_hybrid_pattern_places_the_e_blocks(tmp_path):
    """Megatron-LM's --hybrid-layer-pattern with E blocks (the pattern, not --moe-layer-freq, places them:
    megatron-core 0.16.1 ssm/mamba_block.py) and --moe-latent-size read into the shape SMALL's config.json makes (but
    the MTP layer and the conv width, which Megatron-LM fixes at 4); --use-fused-weighted-squared-relu, the fused
    function of the grouped squared-ReLU experts the hybrid stack builds, read as srelu_fusion (test_srelu_fusion)."""
    from symbolic.readers.megatron import read

    path = tmp_path / "run.yaml"
    path.write_text(MEGATRON)
    fields = read(path).model
    hf = _read(tmp_path, SMALL)
    for name in (
        "dense_layers",
        "mixerless_layers",
        "mlpless_layers",
        "mamba_layers",
        "E",
        "k_e",
        "f_e",
        "f_s",
        "moe_latent",
        "mlp",
        "sigmoid",
        "expert_bias",
    ):
        assert fields[name] == getattr(hf, name), name
    assert read(path).training["srelu_fusion"] is False
    path.write_text(MEGATRON + "  --use-fused-weighted-squared-relu: true\n")
    assert read(path).training["srelu_fusion"] is True
