"""Routed experts' parameters, weights, gradients and optimizer states per GPU, laid out as Megatron-Core does:
the E experts of a layer split over e expert-parallel ranks, each expert's SwiGLU over t_e expert tensor-parallel
ranks, and their gradients and optimizer states sharded over the expert data-parallel group of d t c / (e t_e) ranks
(Megatron-Core parallel_state's expert groups; Liu et al. 2025, MoE Parallel Folding; the expert-parallel weight
formula of NVIDIA/Megatron-LM PR #4687)."""

from __future__ import annotations

import sympy as sp

from ..config.switches import Switches
from ..config.parallel import Parallel
from ..config.symbols import B_g, B_o, B_w, E, d_l, e, f_e, h, t_e
from .base import Component


def expert_data_parallel() -> sp.Expr:
    """Ranks that hold the same experts: the d t c ranks of a pipeline stage over the e t_e an expert layer spans."""
    return Parallel.symbols().edp


def experts_params(sw: Switches = Switches()) -> sp.Expr:
    """Routed-expert parameters of one MoE layer on one GPU: E/e experts of gate, up (x f_e) and down (f_e x), x the
    hidden size h or a latent MoE's width d_l (megatron-core 0.16.1 experts.py: moe_latent_size is fc1's input and
    fc2's output), split over t_e (a GeLU or squared-ReLU expert, Megatron-Core's TEGroupedMLP without --swiglu, has
    no gate); with moe_bias each expert's gate-up bias [2 f_e] split with its columns and its down bias [h]
    replicated over t_e, as a row-parallel bias is (gpt-oss's GptOssExperts)."""
    n = 2 if sw.mlp == "swiglu" else 1  # fc1's outputs per hidden unit: gate and up, or up alone
    x = d_l if sw.latent else h
    return E / e * ((n + 1) * x * f_e / t_e + ((n * f_e / t_e + h) if sw.moe_bias else 0))


def _state(name: str, width: sp.Expr, params: sp.Expr, sharded: bool, sharded_doc: str, local_doc: str) -> Component:
    """One routed-expert state of `width` bytes per parameter: over the d t c / (e t_e) expert data-parallel ranks
    where the ZeRO stage shards it, else whole on this GPU."""
    if sharded:
        return Component(name, width * params / expert_data_parallel(), sharded_doc)
    return Component(name, width * params, local_doc)


def expert_weights(params: sp.Expr, sw: Switches) -> Component:
    """The routed experts' weights, B_w bytes per parameter; ZeRO-3 shards them over the expert data-parallel group."""
    return _state(
        "expert_weights",
        B_w,
        params,
        sw.sharded_weights,
        "bf16 routed-expert weights, B_w bytes per parameter, sharded over the d t c / (e t_e) expert "
        "data-parallel ranks (ZeRO-3)",
        "bf16 routed-expert weights of this GPU's E/e experts (each split over t_e), B_w bytes per parameter",
    )


def expert_gradients(params: sp.Expr, sw: Switches) -> Component:
    """The routed experts' main gradients, B_g bytes per parameter, sharded over the expert data-parallel group from
    ZeRO-2 on."""
    return _state(
        "expert_gradients",
        B_g,
        params,
        sw.sharded_grads,
        "fp32 routed-expert main gradients, sharded over the d t c / (e t_e) expert data-parallel ranks (ZeRO-2/3)",
        "fp32 routed-expert main-gradient buffer, B_g bytes per local expert parameter (Megatron-LM)",
    )


def expert_optimizer(params: sp.Expr, sw: Switches) -> Component:
    """The routed experts' master weights and Adam moments, sharded over the expert data-parallel group from ZeRO-1
    on (Megatron-Core's distributed optimizer shards expert parameters over the expert data-parallel group)."""
    return _state(
        "expert_optimizer",
        B_o,
        params,
        sw.dist_opt,
        "fp32 master weights + Adam m, v of the routed experts (B_o bytes/param) sharded over the d t c / "
        "(e t_e) expert data-parallel ranks (Megatron distributed optimizer)",
        "fp32 master weights + Adam "
        "m, v of the routed experts (B_o bytes/param) replicated on every expert data-parallel rank",
    )


def expert_states(moe_layers: sp.Expr, sw: Switches) -> list[Component]:
    """Weights, gradients and optimizer states of the routed experts of `moe_layers` MoE layers (none without them)."""
    if not sw.moe:
        return []
    params = moe_layers * experts_params(sw)
    return [expert_weights(params, sw), expert_gradients(params, sw), expert_optimizer(params, sw)]
