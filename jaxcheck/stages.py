"""Pipeline stages that hold different layer kinds (DeepSeek-V3's three dense layers in the first stage, p > 1).

One SPMD program has one shape on every device, so jaxcheck stacks each kind's layers [p, n/p, ...] and every stage
runs its dense layers, then its MoE layers (jaxcheck.model.llama.stack_layers). A model whose stages differ compiles as
one program per stage kind: program r gives every stage rank r's layers, so a device of it holds exactly what rank r's
devices hold (the ends, replicated over pipe, and the residual rings of K = min(m, p) slots are the same on every rank
in either program). verify reports each program and the largest.
"""
from __future__ import annotations

from dataclasses import replace

from symbolic.config.errors import ConfigError
from symbolic.config.shapes import ModelShape


def rank_kinds(shape: ModelShape, p: int) -> tuple[tuple[bool, ...], ...]:
    """Each rank's layers in order, True for an MoE layer (an even split: L/p layers per rank)."""
    n = shape.L // p
    return tuple(tuple(shape.is_moe_layer(r * n + j) for j in range(n)) for r in range(p))


def alike(shape: ModelShape, p: int) -> bool:
    """Whether every stage holds the same layers, its dense ones first (ModelShape.dense_period; a model of one kind:
    always): what one program builds."""
    return shape.L_e in (0, shape.L) or shape.L == p * shape.dense_period


def stage_shape(shape: ModelShape, p: int, ranks: tuple[int, ...]) -> ModelShape:
    """The model whose every stage holds the layers of `ranks` (each of them the same: k dense, then MoE)."""
    layers = rank_kinds(shape, p)[ranks[0]]
    k, n = layers.count(False), len(layers)
    if not all(layers[k:]):
        raise ConfigError(f"{shape.name} at pp={p}: rank {ranks[0]} holds dense layers after MoE layers; jaxcheck "
                          "runs a stage's dense layers first")
    if k == n:
        raise ConfigError(f"{shape.name} at pp={p}: rank {ranks[0]} holds dense layers only; jaxcheck builds every "
                          "stage of an MoE model with one MoE layer or more (choose a pp whose first stage holds one)")
    name = f"{shape.name} ranks {ranks[0]}" + (f"-{ranks[-1]}" if len(ranks) > 1 else "")
    return replace(shape, name=name, dense_layers=tuple(q * n + j for q in range(p) for j in range(k)))


def stage_programs(shape: ModelShape, p: int) -> tuple[tuple[tuple[int, ...], ModelShape], ...]:
    """(ranks, model) per program to compile: ((0 .. p - 1), shape) when every stage holds the same layers, else one
    per distinct stage of a model whose stages each run their dense layers first (stage_shape), ranks in order."""
    if shape.L % p or alike(shape, p):
        return (tuple(range(p)), shape),
    groups: dict[tuple[bool, ...], list[int]] = {}
    for r, layers in enumerate(rank_kinds(shape, p)):
        groups.setdefault(layers, []).append(r)
    return tuple((tuple(ranks), stage_shape(shape, p, tuple(ranks))) for ranks in groups.values())
