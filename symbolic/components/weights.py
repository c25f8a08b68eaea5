"""Parameter counts per GPU and per pipeline stage, and the bf16 weights they occupy (Fujii et al. 2024, Megatron-LM):
head width h/a, Q, O h x h, K, V h x h*k/a, three h x f SwiGLU matrices; matrices split over t, norms replicated."""
from __future__ import annotations

import sympy as sp

from ..config.switches import Switches
from ..config.symbols import B_w, L, a, c, d, f, h, k, p, t, v
from .base import Component


def attention_params() -> sp.Expr:
    """Q, O (h x h each) and K, V (h x h*k/a each) of one layer on one TP rank: 2h^2(1 + k/a)/t."""
    return 2 * h**2 * (1 + k / a) / t


def mlp_params() -> sp.Expr:
    """SwiGLU gate, up (h x f) and down (f x h) of one layer on one TP rank: 3hf/t."""
    return 3 * h * f / t


def norm_params() -> sp.Expr:
    """Two RMSNorm weight vectors of one layer, replicated over TP ranks: 2h."""
    return 2 * h


def layer_params() -> sp.Expr:
    """Every parameter of one transformer layer on one TP rank."""
    return attention_params() + mlp_params() + norm_params()


def embedding_params() -> sp.Expr:
    """Input embedding v x h, vocabulary-parallel over t (first stage)."""
    return h * v / t


def final_norm_params() -> sp.Expr:
    """Final RMSNorm weight vector, replicated over TP ranks: h."""
    return h


def head_params() -> sp.Expr:
    """Final RMSNorm h plus LM head v x h split over t (last stage; Megatron keeps a copy even when tied)."""
    return final_norm_params() + h * v / t


def end_params(stage: str, tied: bool = False) -> sp.Expr:
    """Parameters a stage holds besides its layers: the embedding (first), final norm + LM head (last), both (only).

    Tied embeddings change only p = 1: Megatron-LM (tie_embeddings_and_output_weights) keeps a separate copy of the
    embedding on the last stage when p > 1, synchronised by an all-reduce of its gradients, so first and last stages
    count a v x h matrix each; with p = 1 the one matrix is both embedding and LM head."""
    only_head = final_norm_params() if tied else head_params()
    return {"first": embedding_params(), "middle": sp.Integer(0), "last": head_params(),
            "only": embedding_params() + only_head}[stage]


def stage_params(stage: str, tied: bool = False, layers: sp.Expr | None = None) -> sp.Expr:
    """Parameters held by one GPU of the given pipeline stage: `layers` layers (default L/p; L on the only stage)
    and its end_params."""
    if layers is None:
        layers = L if stage == "only" else L / p
    return end_params(stage, tied) + layers * layer_params()


def paper_params() -> sp.Expr:
    """Parameters the paper charges to the most loaded GPU: the first stage, embedding plus L/p layers."""
    return stage_params("first")


def weights(params: sp.Expr, sw: Switches) -> Component:
    """The model weights the GPU keeps between steps: all of its stage's, sharded over d*c by ZeRO-3."""
    if sw.zero >= 3:
        return Component("weights", B_w * params / (d * c), "bf16 model weights, B_w bytes per parameter, sharded over "
                         "the d*c data-parallel ranks (ZeRO-3; torch FSDP FULL_SHARD, Megatron-LM FSDP optim_grads_params)")
    return Component("weights", B_w * params, "bf16 model weights, B_w bytes per parameter (Megatron mixed precision)")
