"""Recipe `deepspeed`: ZeRO stages 1-3 with bf16 as DeepSpeed allocates them (deepspeedai/DeepSpeed edaa7221)."""

from __future__ import annotations

from functools import partial

import sympy as sp

from ...components import Component, output_layer, overheads, stage_params, token_ids
from ...components.activations import layer_activation
from .zero import buffers, optimizer_step, states
from ...components.ends import logits_source, recompute_working_set
from ...config.switches import Switches
from ..shared import absent
from ..shared import stage_components as _stage
from ..shared import in_flight, layer_tensors  # noqa: F401  (Megatron-DeepSpeed's layer; its PipelineEngine runs 1F1B)

TITLE = "DeepSpeed ZeRO (bf16) as its code allocates"
DESCRIPTION = (
    "DeepSpeed at edaa7221 with bf16 enabled: bf16 weights, bf16 gradients (grad_accum_dtype unset), the fp32 master "
    "partition and Adam moments over d*c (stage 1: optimizer states; 2: also gradients; 3: also weights), one "
    "5e8-element reduce bucket, stage 3's gathered and prefetched weights. DeepSpeed trains a model it does not "
    "define: the activations are Megatron-LM's Llama layer (Megatron-DeepSpeed). The optimizer step's gradient "
    "copies come after the activations are freed: the total is the larger of the backward and the step."
)


def _parts(
    stage: str, sw: Switches, layers: sp.Expr, moe_layers: sp.Expr, micro: sp.Expr, head: bool
) -> list[Component]:
    """One GPU of `stage` holding `layers` layers and `micro` micro batches (a dense model: `moe_layers` none)."""
    params = stage_params(stage, sw, layers)
    parts = [
        *states(params, sw),
        Component(
            "activations",
            micro * layers * layer_activation(sw),
            f"per-layer tensors x the stage's layers x its in-flight micro batches ({sw.recompute} recompute)",
        ),
        token_ids(micro) if stage in ("first", "only") else absent("embedding_input"),
        output_layer(sw) if head else absent("output_layer"),
        *([logits_source(sw)] if head else []),
        *buffers(stage, params, sw, layers),
        recompute_working_set(sw),
    ]
    held = {"weights", "gradients", "optimizer", "grad_partition", "lp_grads"}  # the step's besides its temporaries
    parts.append(optimizer_step(params, sw, sp.Add(*(x.expr for x in parts if x.name not in held))))
    if sw.overheads:
        parts += overheads(params, sp.Add(*(x.expr for x in parts)), sw, workspaces=2, megatron=False)
    return parts


def components(sw: Switches) -> list[Component]:
    """The most loaded GPU as the paper's total counts it: the first stage (L/p layers, its in-flight micro
    batches), with the last stage's output layer and loss on top."""
    return _stage(_parts, sw, "first", head=True)


stage_components = partial(_stage, _parts)  # one GPU of a stage at the contract's defaults (shared.stage_components)
