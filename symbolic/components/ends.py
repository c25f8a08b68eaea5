"""The two ends of the pipeline: the embedding input on the first stage, the output layer and loss on the last stage."""
from __future__ import annotations

import sympy as sp

from ..config.switches import Switches
from ..config.symbols import B_a, b, c, h, s, v
from .base import FP32, INT64, Component, per_gpu_tokens



def embedding_input_paper(n: sp.Expr, sw: Switches) -> Component:
    """The paper's embedding-input term 8*s*b*h per in-flight micro batch (it departs from Megatron's 8*s*b ids)."""
    return Component(
        "embedding_input", per_gpu_tokens(INT64 * s * b * h * n, False, sw),
        "embedding input as the paper counts it, 8*s*b*h bytes per in-flight micro batch (Megatron-LM stores 8*s*b int64 ids; kept for parity)",
    )


def token_ids(n: sp.Expr) -> Component:
    """int64 token ids [b, s/c] of each in-flight micro batch, replicated on TP ranks (Megatron-LM)."""
    return Component(
        "embedding_input", INT64 * s * b * n / c,
        "int64 token ids [b, s/c] per in-flight micro batch, replicated on the TP ranks (Megatron-LM)",
    )


def output_tensors(sw: Switches) -> list[Component]:
    """Last stage, one micro batch: final-norm input, LM-head input, fp32 logits for the loss (Fujii et al. 2024: 4sbh(1 + v/h))."""
    return [
        Component("final_norm_input", per_gpu_tokens(B_a * s * b * h, False, sw), "input of the final RMSNorm"),
        Component("head_input", per_gpu_tokens(B_a * s * b * h, False, sw), "normed input of the LM head"),
        Component("logits_fp32", per_gpu_tokens(FP32 * s * b * v, True, sw),
                  "fp32 logits [b, s/c, v/t] of the vocabulary-parallel cross entropy, kept for its backward"),
    ]


def output_layer(sw: Switches) -> Component:
    return Component(
        "output_layer", sp.Add(*(part.expr for part in output_tensors(sw))),
        "final-norm input + LM-head input (B_a*s*b*h each) + fp32 logits 4*s*b*v/t for the loss, one micro batch (Fujii et al. 2024)",
    )
