"""Pipeline stages that hold different layers: an MoE model's dense layers in its first stage (DeepSeek-V3's, at
p > 1), a hybrid's Gated DeltaNet and attention layers in counts that differ from stage to stage (Qwen3-Next's 48
layers at p = 8), or uneven stages (Megatron-LM's --decoder-first/last-pipeline-num-layers, --stage-layers).

One SPMD program has one shape on every device, so jaxcheck stacks each kind's layers [p, n/p, ...] and every stage
runs its dense layers, then its MoE layers (jaxcheck.model.causal_lm.stack_layers). A pipeline whose stages differ
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
    """Whether every one of p even stages holds the same layers, its dense ones first (a hybrid's: as many Gated
    DeltaNet layers): what one program builds (ModelShape.stages_alike and linear_alike, which the rules "mixed
    layers: stages alike, dense first (jax)" and "Gated DeltaNet: stages alike (jax)" read too)."""
    return bool(shape.stages_alike(p)) and bool(shape.linear_alike(p))


def rank_kinds(shape: ModelShape, training: Training) -> tuple[tuple[bool, ...], ...]:
    """Each rank's layers in model order (Training.layer_ranges: uneven stages too): True for an MoE layer, or for a
    hybrid's attention layer (its Gated DeltaNet layers False, the kind jaxcheck runs first in a stage)."""
    kind = (lambda i: i not in shape.linear_layers) if shape.gdn else shape.is_moe_layer
    return tuple(tuple(kind(i) for chunk in ranges for i in chunk) for ranges in training.layer_ranges(shape.L))


def stage_shape(shape: ModelShape, p: int, layers: tuple[bool, ...], ranks: tuple[int, ...]) -> ModelShape:
    """The model of p len(layers) layers whose every stage holds `layers` (rank ranks[0]'s: k dense, then MoE; a
    hybrid's k Gated DeltaNet layers, then its attention layers, whatever their order in the rank)."""
    k, n = layers.count(False), len(layers)
    if shape.gdn:
        if k in (0, n):
            only = "attention" if k == 0 else "Gated DeltaNet"
            raise ConfigError(
                f"{shape.name}: pipeline rank {ranks[0]} holds {only} layers only; jaxcheck builds "
                "every stage of a hybrid with both kinds (choose a pipeline whose every stage holds both)"
            )
        return replace(
            shape, name=_name(shape, ranks), L=p * n, linear_layers=tuple(q * n + j for q in range(p) for j in range(k))
        )
    if not shape.moe:
        return replace(shape, name=_name(shape, ranks), L=p * n)
    if not all(layers[k:]):
        raise ConfigError(
            f"{shape.name}: pipeline rank {ranks[0]} holds dense layers after MoE layers; jaxcheck "
            "runs a stage's dense layers first"
        )
    if k == n:
        raise ConfigError(
            f"{shape.name}: pipeline rank {ranks[0]} holds dense layers only; jaxcheck builds every "
            "stage of an MoE model with one MoE layer or more (choose a split whose first stage holds "
            "one)"
        )
    return replace(
        shape, name=_name(shape, ranks), L=p * n, dense_layers=tuple(q * n + j for q in range(p) for j in range(k))
    )


def _name(shape: ModelShape, ranks: tuple[int, ...]) -> str:
    """The program's model name: the model's and the pipeline ranks it stands for."""
    return f"{shape.name} ranks {','.join(map(str, ranks))}"


def stage_programs(shape: ModelShape, training: Training) -> tuple[tuple[tuple[int, ...], ModelShape, Training], ...]:
    """(ranks, model, training) per program to compile: the configuration itself when its p even stages hold the
    same layers (or it is one jaxcheck refuses for another reason: its rules say why), else one per distinct stage,
    each with even stages (stage_shape), ranks in order."""
    p, mamba = training.p, shape.mamba or shape.blocks
    even = training.stage_layers is None
    if mamba or training.vpp > 1 or (even and (shape.L % p or alike(shape, p))):
        return ((tuple(range(p)), shape, training),)
    groups: dict[tuple[bool, ...], list[int]] = {}
    for r, layers in enumerate(rank_kinds(shape, training)):  # a hybrid's ranks by their counts (jaxcheck groups)
        groups.setdefault(tuple(sorted(layers)) if shape.gdn else layers, []).append(r)
    one = replace(training, stage_layers=None)
    if len(groups) == 1 and alike(shape, p):  # --stage-layers spelling out the even split: the model itself
        return ((tuple(range(p)), shape, one),)
    return tuple((tuple(ranks), stage_shape(shape, p, layers, tuple(ranks)), one) for layers, ranks in groups.items())


def stage_holds(shape: ModelShape, p: int) -> dict[str, int]:
    """What one stage of a program holds: its layers, dense ones and MoE ones, and a hybrid's Gated DeltaNet ones
    (verify's and compile's "stages")."""
    layers = shape.L // p
    moe = layers - len(shape.dense_layers) // p if shape.moe else 0
    return {
        "layers": layers,
        "dense_layers": layers - moe,
        "moe_layers": moe,
        **({"gdn_layers": shape.L_g // p} if shape.gdn else {}),
    }


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
