"""--optimizer muon --zero 1: Megatron-Core's layer-wise distributed optimizer (components.layerwise).

Source of truth: megatron-core 0.16.1 optimizer/layer_wise_optimizer.py LayerWiseDistributedOptimizer.shard_params,
ported below line for line (sort every parameter by numel, stably, Muon's groups before AdamW's: muon.py chains
TensorParallelMuon first; deal the dense ones ping-pong over the d c ranks and the routed experts' over the expert
data-parallel ranks), over the parameter list a GPT MoE model of Transformer Engine layers holds (named_parameters:
linear_qkv's fused layer norm, linear_qkv, linear_proj, pre_mlp_layernorm, router, TEGroupedMLP's weight<i> per local
expert; word and learned position embeddings on the first stage, final layer norm and LM head or its tied copy on
the last). Shape: MB-48's (gpt3_moe_mcore_te_ep8_resume_torch_dist_dist_muon). Tolerance: exact bytes."""

import itertools

import pytest

from symbolic.config.errors import ConfigError
from symbolic.config.shapes import ModelShape
from symbolic.config.training import Training
from symbolic.estimator.estimate import estimate

MB48 = ModelShape(
    "mb48-layerwise",
    h=512,
    f=2048,
    L=12,
    v=50304,
    tied=True,
    positions=1024,
    a=8,
    k=8,
    norm="layer",
    mlp="gelu",
    dropout=True,
    E=8,
    k_e=2,
    f_e=1024,
)
MUON, ADAM = 8, 12  # fp32 master + momentum; fp32 master + exp_avg + exp_avg_sq


def _params(shape: ModelShape, t: int, p: int, e: int, t_e: int, stage: int) -> list[tuple[int, bool, bool]]:
    """(numel, muon, expert) of pipeline stage `stage`'s parameters in named_parameters order."""
    h, dh = shape.h, shape.h // shape.a
    first, last, per = stage == 0, stage == p - 1, shape.L // p
    out = [(shape.v * h // t, False, False), (shape.positions * h, True, False)] if first else []
    for _ in range(per):
        out += [
            (h, False, False),
            (h, False, False),
            ((shape.a + 2 * shape.k) * dh * h // t, True, False),
            (h * shape.a * dh // t, True, False),
            (h, False, False),
            (h, False, False),
            (shape.E * h, True, False),
        ]
        out += [(shape.f_e * h // t_e, True, True)] * (shape.E // e) * 2  # fc1 weight<i>, fc2 weight<i> (GeLU)
    if last:
        out += [(h, False, False), (h, False, False)] + ([(shape.v * h // t, False, False)] if p > 1 else [])
    return out


def _shard_params(params, ranks: int, expert_ranks: int) -> tuple[list[int], list[int]]:
    """layer_wise_optimizer.py shard_params: each dense rank's and each expert rank's optimizer bytes."""
    listed = sorted([x for x in params if x[1]] + [x for x in params if not x[1]], key=lambda x: x[0])  # stable
    dense, experts = [0] * ranks, [0] * expert_ranks
    loops = {
        False: list(range(ranks)) + list(range(ranks))[::-1],
        True: list(range(expert_ranks)) + list(range(expert_ranks))[::-1],
    }
    index = {False: 0, True: 0}
    for numel, muon, expert in listed:
        loop = loops[expert]
        rank = loop[index[expert]]
        (experts if expert else dense)[rank] += numel * (MUON if muon else ADAM)
        index[expert] = (index[expert] + 1) % len(loop)
    return dense, experts


def _drawer(params, expert: bool, ranks: int) -> int:
    """The rank that draws the largest parameter of the kind: the last in sorted order."""
    n = sum(1 for x in params if x[2] == expert)
    loop = list(range(ranks)) + list(range(ranks))[::-1]
    return loop[(n - 1) % len(loop)]


def _training(d: int, t: int, p: int, e: int, t_e: int) -> Training:
    return Training(
        d=d,
        t=t,
        p=p,
        s=1024,
        b=4,
        gbs=4 * d,
        zero=1,
        optimizer="muon",
        ep=e,
        etp=t_e,
        sp=t > 1,
        moe_dispatcher="allgather",
        grad_accum_fusion=False,
        flash_attn=True,
    )


def test_mb48_rank7_holds_the_embedding_states_by_hand():
    """tp1 pp1 dp8 ep8: 88 dense tensors sorted (50 norm vectors of 512, 12 routers of 4096, 12 linear_proj of
    262144, the positions 524288, 12 linear_qkv 786432, the word embedding 25755648); rank 7 draws indices 7, 8,
    23, 24, 39, 40 (norms), 55, 56 (routers), 71, 72 (linear_proj) and 87 (the embedding); the expert group is one
    rank wide (8 GPUs / ep 8), so every local expert's states stay."""
    by_hand = ADAM * (25755648 + 6 * 512) + MUON * (2 * 4096 + 2 * 262144)
    dense, experts = _shard_params(_params(MB48, 1, 1, 8, 1, 0), 8, 1)
    assert by_hand == 313364480 == dense[7] == max(dense) and experts == [MUON * 12 * 2 * 1024 * 512]
    stage = estimate(MB48, _training(8, 1, 1, 8, 1)).stages[0]["bytes"]
    assert stage["optimizer"] == by_hand and stage["expert_optimizer"] == experts[0]


GRID = [
    (d, t, p, e)
    for d, t, p, e in itertools.product((1, 2, 3, 4, 6, 16), (1, 2), (1, 2, 3), (1, 2, 4))
    if (d * t) % e == 0 and 12 % p == 0
][::3]


@pytest.mark.parametrize("d, t, p, e", GRID)
def test_every_stage_is_the_ported_dealing_at_its_peak_rank(d, t, p, e):
    est = estimate(MB48, _training(d, t, p, e, 1), every_rank=True)
    for stage in est.stages:
        params = _params(MB48, t, p, e, 1, stage["rank"])
        dense, experts = _shard_params(params, d, d * t // e)
        assert stage["bytes"]["optimizer"] == dense[_drawer(params, False, d)]
        assert stage["bytes"]["expert_optimizer"] == experts[_drawer(params, True, d * t // e)]


def test_sharded_gradients_stay_refused():
    with pytest.raises(ConfigError, match="layer-wise distributed optimizer"):
        estimate(MB48, Training(d=8, s=1024, b=4, gbs=32, zero=2, optimizer="muon", ep=8))


def test_llama3_8b_tp2_dp8_by_hand():
    """A SwiGLU model with RMSNorm and an untied head (t = 2, one stage): 195 tensors sorted (65 norm weights of
    4096, 32 each of linear_proj 8388608, linear_qkv 12582912, fc2 29360128, fc1 58720256, then the embedding and
    the head, 262668288 each); the last (index 194) goes to rank 194 mod 16 = 2, which draws indices 2 and 13 of
    every round of 16: 8 norms, 4 of each linear kind and the head."""
    from symbolic.config.hfconfig import resolve_model

    est = estimate(resolve_model("llama3-8b"), Training(d=8, t=2, s=4096, b=1, gbs=64, zero=1, optimizer="muon"))
    by_hand = ADAM * (8 * 4096 + 262668288) + MUON * 4 * (8388608 + 12582912 + 29360128 + 58720256)
    assert est.stages[0]["bytes"]["optimizer"] == by_hand == 6642073600
