"""Megatron-Core 0.16.1's layer-wise distributed optimizer under Muon (optimizer/layer_wise_optimizer.py
LayerWiseDistributedOptimizer.shard_params): every parameter of a pipeline stage stays whole, sorted by numel and dealt
to the d c data-parallel ranks in a ping-pong order (0, 1, .., D - 1, D - 1, .., 0, 0, ..), the routed experts' on
their own counter over the d t c / (e t_e) expert data-parallel ranks; a rank keeps the fp32 master weight and the
Muon momentum (or AdamW's m, v) of the parameters it drew alone, while weights and main gradients stay whole.

The sorted list is a list of kinds (Tensor, below: one numel, a count, Muon or AdamW); a kind's place in it and the
number of its tensors a rank draws are closed forms: a kind starts after every smaller kind (equal numels keep the
code's stable order: Muon's parameter groups before AdamW's), and rank r draws the indices i with i mod 2D in
{r, 2D - 1 - r}. The rank shown is the one that draws the stage's largest tensor (the peak rank: the embedding or
LM head where the stage has one)."""

from __future__ import annotations

from typing import NamedTuple

import sympy as sp

from ..config.precision import ADAM_BYTES
from ..config.switches import Switches
from ..config.symbols import B_o, E, a, d_l, dh, e, f, f_e, f_s, h, k, p, s_p, t, t_e, v
from .base import GROUPS, Component
from .experts import expert_data_parallel
from .weights import final_norm_params, norm_params


class Tensor(NamedTuple):
    """`count` parameter tensors of `numel` elements each on one GPU, under Muon (2-D layer weights) or AdamW."""

    name: str
    numel: sp.Expr
    count: sp.Expr
    muon: bool


def layer_tensors(layers: sp.Expr, moe_layers: sp.Expr, sw: Switches) -> list[Tensor]:
    """The parameter tensors of `layers` layers (`moe_layers` of them MoE) but the routed experts, as Megatron-Core's
    TE layers hold them on one TP rank: linear_qkv [(a + 2k) dh / t, h], linear_proj [h, a dh / t], a dense MLP's fc1
    [n f / t, h] and fc2 [h, f / t], an MoE layer's router [E, h], shared experts' fc1 and fc2, a latent MoE's two
    projections [d_l, h], and every norm's weight (and LayerNorm bias) [h], AdamW's (muon.py: 1-D)."""
    n = 2 if sw.mlp == "swiglu" else 1
    dense = layers - moe_layers
    return [
        Tensor("linear_qkv", (a + 2 * k) * dh * h / t, layers, True),
        Tensor("linear_proj", a * dh * h / t, layers, True),
        Tensor("mlp_fc1", n * f * h / t, dense, True),
        Tensor("mlp_fc2", f * h / t, dense, True),
        Tensor("router", E * h, moe_layers if sw.moe else 0, True),
        Tensor("shared_fc1", n * f_s * h / t, moe_layers if sw.shared else 0, True),
        Tensor("shared_fc2", f_s * h / t, moe_layers if sw.shared else 0, True),
        Tensor("latent_proj", d_l * h, 2 * moe_layers if sw.latent else 0, True),
        Tensor("norm", h, layers * norm_params(sw) / h, False),
    ]


def end_tensors(stage: str, sw: Switches, at_p1: bool = False) -> list[Tensor]:
    """A stage's tensors besides its layers: the word embedding [v / t, h] (AdamW: is_embedding_or_output_parameter)
    and learned positions [s_p, h] (Muon: a 2-D weight) on the first, the final norm and the LM head [v / t, h] (a
    copy of the embedding when tied at p > 1) on the last; `at_p1`: the first stage's, with the head it holds at p = 1."""
    first, last = stage in ("first", "only"), stage in ("last", "only")
    one = sp.Piecewise((1, sp.Eq(p, 1)), (0, True)) if at_p1 else sp.Integer(int(last))
    head = one * (0 if sw.tied else 1) if at_p1 or stage == "only" else one  # at p = 1 the embedding is the head
    return [
        Tensor("word_embeddings", v * h / t, int(first), False),
        Tensor("position_embeddings", s_p * h, int(first and sw.positions), True),
        Tensor("final_norm", h, one * final_norm_params(sw) / h, False),
        Tensor("output_layer", v * h / t, head, False),
    ]


def drawn(x: sp.Expr, rank: sp.Expr, ranks: sp.Expr) -> sp.Expr:
    """How many of the indices 0 .. x - 1 the ping-pong order deals to `rank` of `ranks` (D): two per round of 2D,
    and of the last round's x mod 2D indices the one at `rank` and the one at 2D - 1 - `rank` where it reaches them
    (shard_params' dp_cp_loop; [m > y] = 1 + floor((m - y - 1) / 2D) for 0 <= m < 2D and 0 <= y < 2D)."""
    left = sp.Mod(x, 2 * ranks)
    return (
        2 * sp.floor(x / (2 * ranks))
        + 2
        + sp.floor((left - rank - 1) / (2 * ranks))
        + sp.floor((left - 2 * ranks + rank) / (2 * ranks))
    )


def _start(i: int, tensors: list[Tensor]) -> sp.Expr:
    """Index in the sorted list of the first tensor of kind i: the tensors of every smaller kind, and of equal kinds
    the ones the sort (stable) keeps before it (a Heaviside step of the numels' difference)."""
    mine = tensors[i]
    return sp.Add(
        *(
            other.count * sp.Heaviside(mine.numel - other.numel, 1 if j < i else 0)
            for j, other in enumerate(tensors)
            if j != i
        )
    )


def peak_rank(tensors: list[Tensor], ranks: sp.Expr) -> sp.Expr:
    """The rank that draws the last (largest) tensor of the sorted list: i mod 2D on the way out, 2D - 1 - that on
    the way back (D - 1/2 - |i mod 2D - D + 1/2|)."""
    left = sp.Mod(sp.Add(*(x.count for x in tensors)) - 1, 2 * ranks)
    return ranks - sp.Rational(1, 2) - sp.Abs(left - ranks + sp.Rational(1, 2))


def dealt_bytes(tensors: list[Tensor], ranks: sp.Expr, muon_bytes: sp.Expr, adam_bytes: sp.Expr) -> sp.Expr:
    """Optimizer bytes of the peak rank: each kind's tensors it draws x numel x the kind's bytes per parameter."""
    ordered = sorted(tensors, key=lambda x: not x.muon)  # Muon's groups come first (muon.py: optimizers order)
    rank = peak_rank(ordered, ranks)
    return sp.Add(
        *(
            (muon_bytes if x.muon else adam_bytes)
            * x.numel
            * (drawn(_start(i, ordered) + x.count, rank, ranks) - drawn(_start(i, ordered), rank, ranks))
            for i, x in enumerate(ordered)
        )
    )


def layerwise_optimizer(
    stage: str, layers: sp.Expr, moe_layers: sp.Expr, sw: Switches, at_p1: bool = False
) -> Component:
    """fp32 master weights + Muon momentum (B_o) or AdamW m, v of the whole parameters the peak data-parallel rank
    draws (megatron-core 0.16.1 layer_wise_optimizer.py shard_params: sorted by numel, dealt ping-pong over d c)."""
    tensors = [x for x in layer_tensors(layers, moe_layers, sw) + end_tensors(stage, sw, at_p1) if x.count != 0]
    return Component(
        "optimizer",
        dealt_bytes(tensors, GROUPS.zero_group, B_o, sp.Integer(ADAM_BYTES)),
        "fp32 master weights + Muon momentum (B_o bytes/param) or AdamW m, v of the whole parameters the peak rank "
        "draws, sorted by numel and dealt ping-pong over the d*c data-parallel ranks (Megatron-Core layer-wise "
        "distributed optimizer, layer_wise_optimizer.py shard_params)",
    )


def expert_tensors(moe_layers: sp.Expr, sw: Switches) -> list[Tensor]:
    """The routed experts' tensors of `moe_layers` MoE layers on one GPU: each local expert's fc1 [n f_e / t_e, x] and
    fc2 [x, f_e / t_e] (TEGroupedMLP's weight<i>: one tensor per expert), x = h or a latent MoE's d_l; all Muon's."""
    n = 2 if sw.mlp == "swiglu" else 1
    x = d_l if sw.latent else h
    return [
        Tensor("expert_fc1", n * f_e * x / t_e, moe_layers * E / e, True),
        Tensor("expert_fc2", f_e * x / t_e, moe_layers * E / e, True),
    ]


def layerwise_expert_optimizer(moe_layers: sp.Expr, sw: Switches) -> Component:
    """fp32 master weights + Muon momentum (B_o) of the whole routed-expert tensors the peak expert data-parallel rank
    draws (layer_wise_optimizer.py shard_params: expt_dp_loop, its own ping-pong over d t c / (e t_e))."""
    return Component(
        "expert_optimizer",
        dealt_bytes(expert_tensors(moe_layers, sw), expert_data_parallel(), B_o, B_o),
        "fp32 master weights + Muon momentum (B_o bytes/param) of the whole routed-expert tensors the peak rank "
        "draws, dealt ping-pong over the d t c / (e t_e) expert data-parallel ranks (Megatron-Core layer-wise "
        "distributed optimizer)",
    )
