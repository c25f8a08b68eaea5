"""A multimodal model's vision tower and projector (config.vision: P_v parameters, A_v saved elements per image token)
on the stage that holds the embedding, where the merger's output replaces the image tokens' embeddings. The tower
is held whole on each GPU of that stage (transformers' Qwen3VLVisionModel, Llama4VisionModel, SiglipVisionModel,
PixtralVisionModel: not split over t, and its patches not over c), its states sharded by ZeRO as the language
model's; frozen (--freeze-vision), its weights alone: no gradient, no optimizer state, and no tensor kept for
backward (nothing before it requires a gradient)."""

from __future__ import annotations

import sympy as sp

from ..config.switches import Switches
from ..config.symbols import A_v, B_a, P_v, b, n_v
from .base import Component
from .gradients import gradients
from .optimizer import optimizer
from .weights import weights


def vision_states(sw: Switches) -> list[Component]:
    """The tower's weights, and where it trains its main gradients and optimizer states, P_v parameters each."""
    if not sw.vision:
        return []
    parts = [weights(P_v, sw)] + ([] if sw.frozen_vision else [gradients(P_v, sw), optimizer(P_v, sw)])
    return [
        part._replace(name="vision_" + part.name, doc="the vision tower's and projector's " + part.doc)
        for part in parts
    ]


def vision_activations(micro: sp.Expr, sw: Switches) -> list[Component]:
    """What the tower keeps for backward: A_v elements per image token, n_v image tokens in each of the b samples of
    a micro batch, for the stage's in-flight micro batches; none when frozen."""
    if not sw.vision:
        return []
    if sw.frozen_vision:
        return [Component("vision_activations", sp.Integer(0), "the vision tower is frozen: nothing kept for backward")]
    return [
        Component(
            "vision_activations",
            micro * B_a * b * n_v * A_v,
            "the vision tower's saved tensors: every block's norm, qkv, q, k, v, attention-output, MLP and "
            "GeLU inputs, the patch embedding's and mergers' (adapter's, pooling's) inputs, A_v per image token "
            "x n_v tokens x b samples x the stage's in-flight micro batches (modeling_qwen3_vl.py, "
            "modeling_llama4.py, modeling_siglip.py + modeling_gemma3.py, transformers 5.25.0)",
        )
    ]


def vision_parts(stage: str, micro: sp.Expr, sw: Switches) -> list[Component]:
    """The tower's states and activations on the stage that holds the embedding (first, or only); none elsewhere."""
    return vision_states(sw) + vision_activations(micro, sw) if stage in ("first", "only") else []
