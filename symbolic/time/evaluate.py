"""One configuration's step time on a system: the step components evaluated, and what follows from them
(tokens/s/GPU, model TFLOP/s/GPU, MFU against the card's dense BF16 peak)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

from ..config.errors import ConfigError
from ..config.glossary import inputs_for
from . import flash, gemm
from .links import group_bandwidths
from .choices import DISPATCHERS, Choices
from .provider import CROSS_ENTROPY, Provider
from .cast import cast_bytes
from .systems import System

TERA = 1e12


def refusal(shape) -> str | None:
    """Why the step-time model cannot state this model, or None."""
    if shape.gdn or shape.mamba:
        return "Gated DeltaNet and Mamba-2 layers (their scans) are not in the step-time model"
    if shape.blocks:
        return "a hybrid stack's attention-only and MLP-only blocks are not in the step-time model"
    if shape.dsa:
        return "DeepSeek Sparse Attention's indexer is not in the step-time model"
    if len({w for w in shape.layer_window if w}) > 1:
        return "sliding windows of different sizes are not in the step-time model (one window, its layers' share)"
    return None


@lru_cache(maxsize=64)
def _compiled(ch: Choices):
    """The step components' numpy functions with their argument names, through the estimators' on-disk cache
    (estimator.codegen.cached, keyed by these sources too): a warm start imports no sympy."""
    from ..config.switches import Switches
    from ..estimator.codegen import cached, compile_source

    sources = sorted(Path(__file__).parent.glob("*.py"))
    table = cached("time", Switches(), lambda: _sources(ch), kind="time", sources=sources, extra=repr(ch))
    return [(name, names, compile_source(source, f"_{name}")) for name, names, source in table["parts"]]


def _sources(ch: Choices) -> dict:
    """Each step component's numpy source (sympy's lambdify printer, modules fully qualified)."""
    import inspect

    import sympy as sp
    from sympy.printing.numpy import NumPyPrinter

    from ..components.base import Component
    from .flops import model_flops
    from .step import step

    class _Shape:  # model_flops reads these of a shape
        moe, mla, q_lora, narrow_v, swa, window = ch.moe, ch.mla, ch.q_latent, ch.narrow_v, ch.swa, ch.window

    parts = []
    for part in [*step(ch), Component("F_model", model_flops(_Shape, ch.n_f)[1], "")]:
        symbols = sorted(part.expr.free_symbols, key=str)
        fn = sp.lambdify(symbols, part.expr, "numpy", printer=NumPyPrinter({"fully_qualified_modules": True}), cse=True)
        source = inspect.getsource(fn).replace("def _lambdifygenerated(", f"def _{part.name}(", 1)
        parts.append((part.name, [str(x) for x in symbols], source))
    return {"parts": parts}


def precision_of(training) -> str:
    """The linear layers' GEMM precision: fp4 under NVFP4 (Transformer Engine's NVFP4BlockScaling runs fprop, dgrad and
    wgrad in FP4: TE 2.20.2 pytorch/module/linear.py quantizes the wgrad GEMM's input and output gradient column-wise
    too, quantization.py NVFP4BlockScalingRecipeState makes an NVFP4Quantizer for every slot), fp8 under any other
    --fp8 recipe, else bf16."""
    return "bf16" if training.fp8 == "none" else "fp4" if training.fp8 == "nvfp4" else "fp8"


def hardware_values(system: System, shape, par, s, b, precision: str) -> dict:
    """R_g, R_e, R_f, R_h, R_at, W_hbm and the group bandwidths for one job on `system`: each GEMM rate the card's best
    times the share its shape gets (gemm.py) - a dense model's MLP [s b/c, h] x [h, f/t], else the QKV projection
    [s b/c, h] x [h, (a + 2k) dh/t]; the experts' [M_e, h] x [h, f_e/t_e] with M_e = s b k_e e t_e / (c t E) tokens
    per expert, as many as reach it when the tokens are balanced; the head [s b/c, h] x [h, v/t]; attention at
    cuDNN's rate where learned sinks rule FlashAttention out (cards.CUDNN_SHARE), times flash.share at the head width and
    the rank's s/c keys."""
    card = system.card
    tokens = s * b / par.c
    dv = shape.v_dim if shape.v_dim and not shape.mla else shape.dh  # GQA values narrower than dh (MiMo-V2-Flash)
    width = shape.f if not shape.moe else shape.a * shape.dh + shape.k * (shape.dh + dv)
    best = card.gemm(precision) * TERA
    per_expert = tokens * shape.k_e * par.e * par.t_e / (par.t * shape.E) if shape.moe else tokens
    return {
        "R_g": best * gemm.share(card.name, tokens, width / par.t, shape.h, precision),
        "R_e": best * gemm.share(card.name, per_expert, max(shape.f_e, 1) / par.t_e, shape.h, precision),
        "R_h": card.gemm_bf16 * TERA * gemm.share(card.name, tokens, shape.v / par.t, shape.h),
        # TF32 (an FP32 router's backward): half the BF16 GEMM, as every card's dense TF32 peak in CARDS.tsv is half
        # its BF16 one; the dgrad's [tokens, E] x [E, h] share
        "R_f": card.gemm_bf16 / 2 * TERA * gemm.share(card.name, tokens, shape.h, max(shape.E, 1)),
        "R_at": (card.attn_cudnn if shape.sinks else card.attn) * TERA * flash.share(shape.dh, s / par.c),
        "W_hbm": card.hbm_rate * TERA,
        "B_x": cast_bytes(precision),
        "N_q": 0.0 if precision == "bf16" else 1.0,
        "N_n": 1.0 if precision == "fp4" else 0.0,
        **group_bandwidths(system, par),
    }


def components(shape, ch: Choices, values: dict) -> dict:
    """Every step component's seconds for `values` (the glossary's letters and the rates; scalars or arrays), and
    F_model, the model's forward FLOPs per token."""
    experts = shape.L_e * shape.E * shape.expert_count
    values = {"P_d": shape.param_count - experts, "P_x": experts, **values}
    return {name: np.asarray(fn(*(values[n] for n in names)), dtype=float) for name, names, fn in _compiled(ch)}


def step_time(shape, training, system: System, dispatcher: str | None = None, provider: Provider = Provider()) -> dict:
    """The `time` block of estimate's JSON: step_s, tokens_per_s_per_gpu, model_tflops_per_gpu, mfu, breakdown;
    `dispatcher` times a flex backend (choices.DISPATCHERS) in place of Training's dispatcher, `provider` the
    model provider's kernel settings (provider.Provider; the fused defaults otherwise)."""
    reason = refusal(shape)
    if reason:
        raise ConfigError(f"step time of {shape.name}: {reason}")
    if provider.cross_entropy not in CROSS_ENTROPY:
        raise ConfigError(f"unknown cross entropy {provider.cross_entropy!r}: choose from {', '.join(CROSS_ENTROPY)}")
    if dispatcher not in (None, *DISPATCHERS):
        raise ConfigError(f"unknown MoE token dispatcher {dispatcher!r}: choose from {', '.join(DISPATCHERS)}")
    if getattr(training, "cpu_offload_layers", 0):  # offload.py builds sympy: imported only where a job offloads
        from . import offload

        offload.check(shape, training, system.card_name)  # CPU activation offload needs the card's host link
    values = {
        **inputs_for(shape, training),
        "m": training.m,
        **hardware_values(system, shape, training.parallel, training.s, training.b, precision_of(training)),
    }
    if training.uneven:  # the slowest stage: its layers stand for L/p
        values["L"] = max(training.layers(shape.L)) * training.p
        values["L_w"] = shape.L_w * values["L"] / shape.L  # their share of sliding-window layers
    breakdown = {
        name: float(x)
        for name, x in components(shape, Choices.of(shape, training, dispatcher, provider), values).items()
    }
    fwd = breakdown.pop("F_model")  # forward FLOPs per token of the whole model, not a time
    if getattr(training, "cpu_offload_layers", 0):  # p = 1 (the rules): the layers' GEMMs and attention hide copies
        compute = (breakdown["T_lin"] + breakdown["T_attn"]) / training.m
        breakdown["T_off"] = offload.offload_seconds(shape, training, system.card_name, compute)
    step_s = sum(breakdown.values())
    tokens = training.global_batch * training.s
    gpus = training.world
    tflops = 3 * fwd * tokens / (step_s * gpus) / TERA
    return {
        "system": system.name,
        "card": system.card_name,
        "precision": precision_of(training),
        "step_s": step_s,
        "tokens_per_s_per_gpu": tokens / (step_s * gpus),
        "model_tflops_per_gpu": tflops,
        "mfu": tflops / system.card.bf16,
        "breakdown": breakdown,
    }
