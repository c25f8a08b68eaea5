"""Pipeline stages that hold different layers: an MoE model's dense layers in its first stage (DeepSeek-V3's, at
p > 1), or uneven stages (Megatron-LM's --decoder-first/last-pipeline-num-layers, --stage-layers).

One SPMD program has one shape on every device, so jaxcheck stacks each kind's layers [p, n/p, ...] and every stage
runs its dense layers, then its MoE layers (jaxcheck.model.llama.stack_layers). A pipeline whose stages differ
compiles as one program per stage kind: program r gives every stage rank r's layers (a model of p L_r layers, dense
ones first in each stage as in rank r), so a device of it holds exactly what rank r's devices hold (the ends,
replicated over pipe, and the residual rings of K = min(m, p) slots are the same on every rank in either program).
verify, sweep and compile report each program and the largest.
"""
from __future__ import annotations

from dataclasses import replace

from symbolic.config.errors import ConfigError
from symbolic.config.shapes import ModelShape
from symbolic.config.training import Training


def alike(shape: ModelShape, p: int) -> bool:
    """Whether every one of p even stages holds the same layers, its dense ones first: what one program builds
    (ModelShape.stages_alike, which the rule "mixed layers: stages alike, dense first (jax)" reads too)."""
    return bool(shape.stages_alike(p))


def rank_kinds(shape: ModelShape, training: Training) -> tuple[tuple[bool, ...], ...]:
    """Each rank's layers in model order (Training.layer_ranges: uneven stages too), True for an MoE layer."""
    return tuple(tuple(shape.is_moe_layer(i) for chunk in ranges for i in chunk)
                 for ranges in training.layer_ranges(shape.L))


def stage_shape(shape: ModelShape, p: int, layers: tuple[bool, ...], ranks: tuple[int, ...]) -> ModelShape:
    """The model of p len(layers) layers whose every stage holds `layers` (rank ranks[0]'s: k dense, then MoE)."""
    k, n = layers.count(False), len(layers)
    if not shape.moe:
        return replace(shape, name=_name(shape, ranks), L=p * n)
    if not all(layers[k:]):
        raise ConfigError(f"{shape.name}: pipeline rank {ranks[0]} holds dense layers after MoE layers; jaxcheck "
                          "runs a stage's dense layers first")
    if k == n:
        raise ConfigError(f"{shape.name}: pipeline rank {ranks[0]} holds dense layers only; jaxcheck builds every "
                          "stage of an MoE model with one MoE layer or more (choose a split whose first stage holds "
                          "one)")
    return replace(shape, name=_name(shape, ranks), L=p * n,
                   dense_layers=tuple(q * n + j for q in range(p) for j in range(k)))


def _name(shape: ModelShape, ranks: tuple[int, ...]) -> str:
    """The program's model name: the model's and the pipeline ranks it stands for."""
    return f"{shape.name} ranks {','.join(map(str, ranks))}"


def stage_programs(shape: ModelShape, training: Training) -> tuple[tuple[tuple[int, ...], ModelShape, Training], ...]:
    """(ranks, model, training) per program to compile: the configuration itself when its p even stages hold the
    same layers (or it is one jaxcheck refuses for another reason: its rules say why), else one per distinct stage,
    each with even stages (stage_shape), ranks in order."""
    p, hybrid = training.p, shape.gdn or shape.mamba or shape.blocks
    even = training.stage_layers is None
    if hybrid or training.vpp > 1 or (even and (shape.L % p or alike(shape, p))):
        return ((tuple(range(p)), shape, training),)
    groups: dict[tuple[bool, ...], list[int]] = {}
    for r, layers in enumerate(rank_kinds(shape, training)):
        groups.setdefault(layers, []).append(r)
    one = replace(training, stage_layers=None)
    if len(groups) == 1 and alike(shape, p):  # --stage-layers spelling out the even split: the model itself
        return ((tuple(range(p)), shape, one),)
    return tuple((tuple(ranks), stage_shape(shape, p, layers, tuple(ranks)), one) for layers, ranks in groups.items())


def stage_holds(shape: ModelShape, p: int) -> dict[str, int]:
    """What one stage of a program holds: its layers, dense ones and MoE ones (verify's and compile's "stages")."""
    layers = shape.L // p
    moe = layers - len(shape.dense_layers) // p if shape.moe else 0
    return {"layers": layers, "dense_layers": layers - moe, "moe_layers": moe}


def doubled(shape: ModelShape, p: int) -> ModelShape:
    """The model with twice the layers in each of p even stages, each stage's dense share (a hybrid's Gated DeltaNet
    share) doubled with them (dense ones, Gated DeltaNet ones, still first): explain's per-layer variant."""
    if shape.gdn:
        n, g = shape.L // p, shape.L_g // p
        return replace(shape, L=2 * shape.L, linear_layers=tuple(q * 2 * n + j for q in range(p) for j in range(2 * g)))
    if shape.L_e in (0, shape.L):
        return replace(shape, L=2 * shape.L)
    n, k = shape.L // p, len(shape.dense_layers) // p
    return replace(shape, L=2 * shape.L, dense_layers=tuple(q * 2 * n + j for q in range(p) for j in range(2 * k)))
