"""Recipe `torchtitan`: FSDP2 training of a Llama as torchtitan's code allocates it (pytorch/torchtitan 9dec370)."""

from __future__ import annotations

from functools import partial

import sympy as sp

from ...components import Component, overheads, stage_params, token_ids
from ...components.base import GROUPS
from .allocator import allgather_cache, freed_logits
from .fsdp2 import gathered, output_layer, sharded_states, stage_activation, transient
from .moe import experts_all, experts_gathered, routing_buffers
from .pipeline import (
    accumulated_gradients,
    input_gradients,
    output_chunks,
    stage_buffers,
    step_end,
    symmetric_workspace,
)
from .fsdp2 import layer_tensors  # noqa: F401  (one TransformerBlock's saved tensors)
from ...config.switches import Switches
from ...config.symbols import B_g
from ..shared import absent
from ..shared import stage_components as _stage
from ..shared import in_flight  # noqa: F401  (torchtitan's default schedule is 1F1B)

TITLE = "torchtitan (FSDP2) as its code allocates"
DESCRIPTION = (
    "torchtitan at 9dec370 (its December 2024 H100 benchmark): fp32 parameters, gradients and AdamW moments sharded "
    "over d*c by FSDP2 fully_shard, bf16 weights all-gathered per TransformerBlock and the root group with prefetch, "
    "gradients reduce-scattered in fp32, activation checkpointing per block (full: the block input; selective: op "
    "SAC with its save list), the loss upcasting the bf16 logits to fp32, 1F1B with pipeline parallelism (FSDP2's "
    "unsharded fp32 gradients accumulated across micro batches, the stages' receive buffers), async TP's "
    "symmetric-memory workspace; what the caching allocator keeps reserved beyond them (the copy-in stream's cached "
    "all-gather buffers, the loss's freed bf16 logits)."
)


def _parts(
    stage: str, sw: Switches, layers: sp.Expr, moe_layers: sp.Expr, micro: sp.Expr, has_head: bool
) -> list[Component]:
    params = stage_params(stage, sw, layers, moe_layers)
    if sw.moe:  # the routed experts: E/ep a GPU over efsdp = d c / ep ranks, so 1/(d c) of all of them
        params += moe_layers * experts_all()
    has_embedding = stage in ("first", "only")
    unsharded = params - moe_layers * (experts_all() - experts_gathered(sw)) if sw.moe else params
    per_micro = stage_activation(sw, layers, moe_layers)
    mode = "selective per layer (every n_ac-th block)" if sw.ac_every else sw.recompute
    parts = [
        *sharded_states(params),
        Component(
            "activations",
            micro * per_micro,
            f"per-block tensors x the stage's layers{' (dense and MoE)' if sw.moe else ''} x its in-flight "
            f"micro batches ({mode} checkpointing)",
        ),
        token_ids(micro) if has_embedding else absent("embedding_input"),
        output_layer(sw) if has_head else absent("output_layer"),
        gathered(stage, sw, unsharded, layers, moe_layers),
        transient(sw, has_head, moe_layers),
        accumulated_gradients(unsharded, per_micro, micro),
        stage_buffers(stage, micro),
        input_gradients(stage, micro),
        output_chunks(stage),
        *([routing_buffers(moe_layers)] if sw.moe else []),
    ]
    gone = ("activations", "params_gathered", "transient", "accumulated_gradients")  # by the step's end
    grads = B_g * params / GROUPS.zero_group  # the sharded gradients, which the pipeline's peak does not hold
    parts.append(step_end(stage, sp.Add(*(x.expr for x in parts if x.name in gone)), grads))
    if sw.overheads:
        parts += overheads(params, sp.Add(*(x.expr for x in parts)), sw, workspaces=2, megatron=False)
        parts += [allgather_cache(sw, moe_layers), *([freed_logits(sw, moe_layers)] if has_head else [])]
    return parts + ([symmetric_workspace()] if sw.tp_comm_overlap else [])  # outside the pool: no fragmentation


def moe_layer_tensors(sw: Switches) -> list[Component]:
    """What one MoE block keeps for backward per micro batch (none without experts)."""
    return layer_tensors(sw, moe=True) if sw.moe else []


def components(sw: Switches) -> list[Component]:
    """The most loaded GPU: at p = 1 the only stage (embedding, every layer, the LM head and the loss); with pipeline
    stages the first, as the paper's total (L/p layers, p micro batches in flight), with the last stage's loss on top."""
    return _stage(_parts, sw, "first", head=True)


stage_components = partial(_stage, _parts)  # one GPU of a stage at the contract's defaults (shared.stage_components)
