"""Parameter counts per GPU and per pipeline stage, and the bf16 weights they occupy (Fujii et al. 2024, Megatron-LM):
head width h/a, Q, O h x h, K, V h x h*k/a, three h x f SwiGLU matrices; matrices split over t, norms replicated."""
from __future__ import annotations

import sympy as sp

from ..config.symbols import B_w, L, a, f, h, k, p, t, v
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


def stage_params(stage: str, tied: bool = False) -> sp.Expr:
    """Parameters held by one GPU of the given pipeline stage (L/p layers each).

    Tied embeddings change only p = 1: Megatron-LM (tie_embeddings_and_output_weights) keeps a separate copy of the
    embedding on the last stage when p > 1, synchronised by an all-reduce of its gradients, so first and last stages
    count a v x h matrix each; with p = 1 the one matrix is both embedding and LM head."""
    layers = (L / p) * layer_params()
    only_head = final_norm_params() if tied else head_params()
    return {
        "first": embedding_params() + layers,
        "middle": layers,
        "last": layers + head_params(),
        "only": embedding_params() + L * layer_params() + only_head,
    }[stage]


def paper_params() -> sp.Expr:
    """Parameters the paper charges to the most loaded GPU: the first stage, embedding plus L/p layers."""
    return stage_params("first")


def weights(params: sp.Expr) -> Component:
    return Component("weights", B_w * params, "bf16 model weights, B_w bytes per parameter (Megatron mixed precision)")
