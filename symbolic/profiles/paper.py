"""Profile `paper`: Megatron-LM training of a Llama model as modelled by Fujii, Watanabe, Yokota 2024 (arXiv 2411.06465)."""
from __future__ import annotations

import sympy as sp

from ..components import (
    RANK, Component, embedding_input_paper, gradients, layer_activation, optimizer, output_layer, overheads,
    paper_params, stage_params, token_ids, weights, zero_buffers,
)
from ..components import in_flight as _in_flight
from ..components import layer_tensors as _layer_tensors
from ..config.switches import Switches
from ..config.symbols import L, p

TITLE = "Megatron-LM as in Fujii et al. 2024"
DESCRIPTION = (
    "bf16 weights (B_w), fp32 main gradients (B_g), fp32 master weights and Adam moments (B_o) sharded over d*c "
    "with the distributed optimizer (ZeRO-1; ZeRO-2 also shards gradients, ZeRO-3 also weights), 1F1B or "
    "interleaved pipeline schedule, Llama layers (RMSNorm, GQA, SwiGLU). At ZeRO-1 the total reproduces the "
    "published closed form of the most loaded GPU; the stage breakdown places each tensor where Megatron-LM "
    "allocates it, with each stage's own layers and in-flight micro batches."
)


def layer_tensors(sw: Switches) -> list[Component]:
    """The activation tensors one Llama layer keeps for one micro batch."""
    return _layer_tensors(sw)


def in_flight(rank: sp.Expr) -> sp.Expr:
    """Micro batches of a whole stage that pipeline rank `rank` holds at its peak (1F1B or interleaved 1F1B)."""
    return _in_flight(rank)


def _activations(micro: sp.Expr, layers: sp.Expr, sw: Switches) -> Component:
    return Component(
        "activations", micro * layers * layer_activation(sw),
        f"per-layer tensors x the stage's layers x its in-flight micro batches (1F1B; {sw.recompute} recompute)",
    )


def _with_overheads(parts: list[Component], params: sp.Expr, sw: Switches) -> list[Component]:
    if not sw.overheads:
        return parts
    return parts + overheads(params, sp.Add(*(part.expr for part in parts)), sw)


def components(sw: Switches) -> list[Component]:
    """Most loaded GPU as the paper counts it, faithful to the published closed form: the first stage's weights,
    gradients and optimizer states, min(m, p) in-flight micro batches of L/p layers, the embedding input counted as
    8*s*b*h bytes per micro batch (Megatron-LM holds 8*s*b bytes of ids) and the last stage's output layer and fp32
    logits on top (Megatron-LM places them on the last stage). The total ignores `tied` (the closed form charges one
    v x h matrix either way)."""
    params = paper_params()
    micro = in_flight(RANK["first"])
    parts = [
        weights(params, sw), gradients(params, sw), optimizer(params, sw), _activations(micro, L / p, sw),
        embedding_input_paper(micro, sw), output_layer(sw), *zero_buffers("first", sw),
    ]
    return _with_overheads(parts, params, sw)


def stage_components(sw: Switches, stage: str, layers: sp.Expr | None = None,
                     micro: sp.Expr | None = None) -> list[Component]:
    """Exact breakdown of one GPU of a pipeline stage (first, middle, last, or only at p = 1) holding `layers` layers
    (default L/p, L on the only stage) and `micro` in-flight micro batches (default: the 1F1B count of the stage's
    representative rank, RANK), each tensor where Megatron-LM allocates it; with tied embeddings the p = 1 stage
    holds one v x h matrix instead of two."""
    layers = (L if stage == "only" else L / p) if layers is None else layers
    micro = in_flight(RANK[stage]) if micro is None else micro
    params = stage_params(stage, sw.tied, layers)
    has_embedding = stage in ("first", "only")
    has_head = stage in ("last", "only")
    ids = token_ids(micro) if has_embedding else Component("embedding_input", sp.Integer(0), "not on this stage")
    head = output_layer(sw) if has_head else Component("output_layer", sp.Integer(0), "not on this stage")
    parts = [weights(params, sw), gradients(params, sw), optimizer(params, sw), _activations(micro, layers, sw), ids,
             head, *zero_buffers(stage, sw)]
    return _with_overheads(parts, params, sw)
