"""The two ends of the pipeline: the embedding input on the first stage, the output layer and loss on the last stage."""

from __future__ import annotations

import sympy as sp

from ..config.switches import Switches
from ..config.symbols import (
    B_a,
    B_l,
    B_w,
    a,
    b,
    c,
    d_gk,
    d_gv,
    d_m,
    d_s,
    dh,
    f,
    g_m,
    h,
    k,
    k_w,
    n_gk,
    n_gv,
    n_m,
    s,
    t,
    v,
)
from .base import INT64, Component, per_gpu_tokens
from .weights import value_width


def embedding_input_paper(n: sp.Expr, sw: Switches) -> Component:
    """The paper's embedding-input term 8*s*b*h per in-flight micro batch (it departs from Megatron's 8*s*b ids)."""
    return Component(
        "embedding_input",
        per_gpu_tokens(INT64 * s * b * h * n, False, sw),
        "embedding input as the paper counts it, 8*s*b*h bytes per in-flight micro batch (Megatron-LM stores 8*s*b int64 ids; kept for parity)",
    )


def token_ids(n: sp.Expr) -> Component:
    """int64 token ids [b, s/c] of each in-flight micro batch, replicated on TP ranks (Megatron-LM)."""
    return Component(
        "embedding_input",
        INT64 * s * b * n / c,
        "int64 token ids [b, s/c] per in-flight micro batch, replicated on the TP ranks (Megatron-LM)",
    )


def output_tensors(sw: Switches) -> list[Component]:
    """Last stage, one micro batch: final-norm input, LM-head input, the logits the loss keeps (Fujii et al. 2024:
    4sbh(1 + v/h) with fp32 logits, B_l = 4)."""
    return [
        Component("final_norm_input", per_gpu_tokens(B_a * s * b * h, False, sw), "input of the final RMSNorm"),
        Component("head_input", per_gpu_tokens(B_a * s * b * h, False, sw), "normed input of the LM head"),
        Component(
            "logits",
            per_gpu_tokens(B_l * s * b * v, True, sw),
            "logits [b, s/c, v/t] as the loss keeps them for its backward, B_l bytes each (fp32: Megatron-LM's "
            "vocabulary-parallel cross entropy; bf16: a fused one; 0: chunked)",
        ),
    ] + (
        [
            Component(
                "softcap_tanh_logits",
                per_gpu_tokens(B_a * s * b * v, True, sw),
                "tanh(logits / cap) [b, s/c, v/t] of soft-capped logits, kept for tanh's backward beside the "
                "capped logits the loss reads (Gemma 2's final_logit_softcapping), B_a bytes each",
            )
        ]
        if sw.logit_softcap
        else []
    )


def native_ce_temporary(sw: Switches) -> list[Component]:
    """Megatron-Core's native fused cross entropy (--cross-entropy-loss-fusion --cross-entropy-fusion-impl native;
    megatron-core 0.16.1 = Megatron-LM d98e8a64 fusions/fused_cross_entropy.py, compiled by jit_fuser = torch.compile,
    jit.py): its backward's calculate_gradients updates the saved fp32 softmax in place, which torch.compile
    functionalizes into an out-of-place index_put, a product and a copy back; the index_put's result, an fp32
    [s/c, b, v/t] of the softmax's size, is live beside the softmax and the bf16 gradient while the compiled
    backward runs (torch 2.13.0's inductor on the CPU: its post-grad graph aten.index_put then copy_, its code one
    empty_strided of [b s, v/t]; the forward's functions write in place, no such buffer). None otherwise."""
    if not sw.native_ce:
        return []
    return [
        Component(
            "ce_backward_temporary",
            per_gpu_tokens(B_l * s * b * v, True, sw),
            "the compiled native "
            "fused cross entropy's backward: an fp32 [s/c, b, v/t] index_put result beside the saved "
            "softmax and the bf16 gradient (fusions/fused_cross_entropy.py calculate_gradients under "
            "torch.compile)",
        )
    ]


def logits_source(sw: Switches) -> Component:
    """The LM head's bf16 logits, live beside the fp32 copy the loss makes of them (Megatron-Core LanguageModule:
    vocab_parallel_cross_entropy(logits.float(), labels)), and in backward the bf16 gradient beside the fp32 one;
    none when the loss reads them as they are (B_l <= B_a)."""
    return Component(
        "logits_bf16",
        sp.Piecewise((per_gpu_tokens(B_a * s * b * v, True, sw), B_l > B_a), (0, True)),
        "bf16 logits [s/c, b, v/t] beside their fp32 copy in the loss (logits.float()), B_a bytes each",
    )


def recompute_working_set(sw: Switches, moe: bool = False, mixer: str = "attention", ffn: bool = True) -> Component:
    """Full recompute: the layer being recomputed in backward holds every tensor of one micro batch again (Megatron-LM
    CheckpointFunction with recompute_num_layers 1; torch checkpoint alike); selective recompute with modules beyond
    core_attn: what they rerun for one layer; nothing otherwise."""
    from dataclasses import replace

    from .activations import layer_activation, recomputed_tensors

    if sw.recompute == "full":
        expr = layer_activation(replace(sw, recompute="none"), moe=moe, mixer=mixer, ffn=ffn)
    else:
        expr = recomputed_tensors(sw, moe, mixer, ffn)
    return Component(
        "recompute_working_set",
        expr,
        "one layer's tensors of one micro batch, recomputed in its backward (full recompute of one layer at a time)",
    )


def dummy_wgrads(sw: Switches, head: bool) -> Component:
    """Megatron-LM's gradient accumulation fusion (its default): the weight gradient is accumulated into the fp32
    main_grad and autograd gets a dummy bf16 tensor of the weight's shape, one per distinct shape, kept for the run
    (Transformer Engine module/base.py get_dummy_wgrad; Megatron tensor_parallel/layers.py for the output layer):
    QKV [(a + 2k) dh / t, h], proj [h, a dh / t], fc1 [n f / t, h] (n = 2 with SwiGLU), fc2 [h, f / t], the LM head
    [v / t, h] on its stage (shapes that coincide counted apart: an upper bound; routed experts not counted); with
    MLA its five projections' shapes in place of QKV and proj (components.mla); a gated attention's QKV grows by the
    gate [a dh / t, h]; a Gated DeltaNet's in_proj [(2 n_gk d_gk + 2 n_gv d_gv + 2 n_gv) / t, h] and out_proj
    [h, n_gv d_gv / t], a Mamba-2 mixer's in_proj [(2 n_m d_m + 2 g_m d_s + n_m) / t, h] and out_proj
    [h, n_m d_m / t] where the model has them; value heads d_v wide: QKV [(a dh + k (dh + d_v)) / t, h] and proj
    [h, a d_v / t], and sliding-window layers of their own KV heads their QKV [(a dh + k_w (dh + d_v)) / t, h] too."""
    if not sw.grad_accum_fusion:
        return Component("dummy_wgrads", sp.Integer(0), "--no-grad-accum-fusion: none")
    n = 2 if sw.mlp == "swiglu" else 1
    if sw.mla:
        from .mla import mla_wgrad_shapes

        attention = mla_wgrad_shapes(sw)
    elif sw.narrow_v or sw.swa:
        dv = value_width(sw)
        attention = (
            (a * dh + k * (dh + dv)) * h / t + h * a * dv / t + ((a * dh + k_w * (dh + dv)) * h / t if sw.swa else 0)
        )
    else:
        attention = (a + 2 * k) * dh * h / t + h * a * dh / t + (a * dh * h / t if sw.attn_gate else 0)
    if sw.gdn:
        attention += h * (2 * n_gk * d_gk + 2 * n_gv * d_gv + 2 * n_gv) / t + h * n_gv * d_gv / t
    if sw.mamba:
        attention += h * (2 * n_m * d_m + 2 * g_m * d_s + n_m) / t + h * n_m * d_m / t
    shapes = attention + n * f * h / t + h * f / t + (v * h / t if head else 0)
    return Component(
        "dummy_wgrads",
        B_w * shapes,
        "bf16 dummy weight gradients of gradient accumulation fusion, one "
        "per distinct weight shape of a layer (and the LM head's), kept for the run",
    )


def output_layer(sw: Switches) -> Component:
    return Component(
        "output_layer",
        sp.Add(*(part.expr for part in output_tensors(sw))),
        "final-norm input + LM-head input (B_a*s*b*h each) + the loss's logits B_l*s*b*v/t (fp32: 4), one micro batch "
        "(Fujii et al. 2024)",
    )
