"""The attention block's saved tensors (GQA, with q/k norms, value heads of their own width, an output gate,
unfused attention's s x s tensors; MLA and DeepSeek Sparse Attention from their modules), in bytes per GPU for one
micro batch (Korthikanti et al. 2022 section 4; Fujii et al. 2024 for the Llama layer)."""

from __future__ import annotations

import sympy as sp

from ..config.switches import Switches
from ..config.symbols import B_a, a, dh, h, k
from .base import Component
from .layer_shapes import MASK, block_output, scores, tok
from .weights import value_width


def _repeated(sw: Switches) -> bool:
    """Whether the attention core keeps K and V repeated to the a query heads: unfused attention does, unless
    selective recompute of core_attn keeps only its inputs, before the repeat."""
    return not (sw.flash_attn or (sw.recompute == "selective" and "core_attn" in sw.modules.split("+")))


def _kv(sw: Switches) -> list[Component]:
    """The keys and values the attention core keeps: k*dh wide with GQA under flash attention; unfused attention
    repeats them to the a query heads first and keeps the copies (Transformer Engine 2.9.0 backends.py
    UnfusedDotProductAttention.forward, megatron-core 0.16.1 transformer/dot_product_attention.py: repeat_interleave,
    whose backward keeps nothing), so a*dh wide; selective recompute of core_attn keeps its inputs, before the repeat."""
    width, why = (a * dh, "repeated to the a heads, a*dh wide") if _repeated(sw) else (k * dh, "k*dh wide with GQA")
    return [tok("k", width, B_a, True, sw, f"keys after RoPE, {why}"), tok("v", width, B_a, True, sw, f"values, {why}")]


def unfused_core(sw: Switches) -> list[Component]:
    """The s x s tensors unfused attention keeps: the fused scaled-masked softmax's output alone (its input, the
    scores Q K^T, is freed: baddbmm keeps Q and K), which P V's bmm keeps too; with attention dropout its one-byte
    mask and the dropped-out probabilities P V reads instead (Korthikanti et al. 2022). Transformer Engine 2.9.0
    pytorch/attention/dot_product_attention/backends.py UnfusedDotProductAttention.forward and softmax.py
    ScaledSoftmax / ScaledMaskedSoftmax (ctx.save_for_backward(softmax_results, scale_t)); megatron-core 0.16.1
    transformer/dot_product_attention.py and fusions/fused_softmax.py (ScaledUpperTriangMaskedSoftmax) alike. Without
    dropout torch's dropout(p=0) returns its input, keeping nothing. PyTorch's softmax, where the fused kernel does not
    take the shape, is refused by the rule table ("unfused attention: the fused softmax")."""
    if not sw.dropout:
        return [
            scores(
                "softmax",
                B_a,
                sw,
                "softmax probabilities, the fused softmax's output: kept for its backward "
                "and by P V's bmm (the scores Q K^T are freed)",
            )
        ]
    return [
        scores("softmax", B_a, sw, "softmax output, kept for the fused softmax's backward"),
        scores("softmax_dropout_mask", MASK, sw, "dropout mask on the attention probabilities"),
        scores("softmax_dropout_out", B_a, sw, "dropped-out probabilities, kept by P V's bmm"),
    ]


def attention_tensors(sw: Switches, kv: sp.Expr = k) -> list[Component]:
    """Attention block: norm-1 input, QKV input, Q, K, V (a*dh and kv*dh wide; kv the layer's KV heads: k, or a
    sliding-window layer's k_w; V and the attention output value_width wide), the q/k norms' inputs where the model
    has them, attention output; without flash the softmax's output (and, with dropout, its mask and the dropped-out
    probabilities: unfused_core); with dropout the mask after the output projection (Korthikanti et al. 2022); multi-head latent
    attention's tensors where the model has it (components.mla), with DeepSeek Sparse Attention's in place of its
    q, k, v (components.dsa)."""
    if sw.mla:
        return _latent_tensors(sw)
    parts = [
        tok("norm1_input", h, B_a, False, sw, "input of the first norm (the residual stream)"),
        tok(
            "qkv_input",
            h,
            B_a,
            False,
            sw,
            "normed input of the QKV projection (kept sharded with SP, re-gathered in backward)",
        ),
    ]
    if sw.qk_norm != "none":
        parts += [
            tok(
                "q_norm_input",
                a * dh,
                B_a,
                True,
                sw,
                "queries before their RMSNorm (Megatron-Core qk_layernorm, Qwen3, OLMoE), kept for the norm's backward",
            ),
            tok("k_norm_input", kv * dh, B_a, True, sw, "keys before their RMSNorm, kept for the norm's backward"),
        ]
    parts += [tok("q", a * dh, B_a, True, sw, "queries after RoPE, a*dh wide, input of the attention core")]
    parts += (
        _narrow_v(sw, kv)
        if sw.narrow_v or kv != k
        else [
            *_kv(sw),
            tok("attn_out", a * dh, B_a, True, sw, "attention output = input of the output projection, a*dh wide"),
        ]
    )
    if sw.attn_gate:
        parts = _gated(sw, parts)
    if not sw.flash_attn:
        parts += unfused_core(sw)
    if sw.attn_softcap and not sw.flash_attn:
        parts.append(
            scores(
                "softcap_tanh",
                B_a,
                sw,
                "tanh(scores / cap) of soft-capped scores, kept for tanh's "
                "backward by unfused attention (Gemma 2; flash kernels cap inside their tiles)",
            )
        )
    return parts + block_output(sw, "attn", "output projection", "post-attention", "the output projection")


def _latent_tensors(sw: Switches) -> list[Component]:
    """Multi-head latent attention's tensors (components.mla), with DeepSeek Sparse Attention's in place of its q, k,
    v (components.dsa); without flash attention, unfused attention's s x s tensors."""
    if sw.dsa:
        from .dsa import dsa_tensors
        from .mla import mla_tensors

        return [part for part in mla_tensors(sw) if part.name not in ("q", "k", "v")] + dsa_tensors(sw)
    from .mla import mla_tensors

    return mla_tensors(sw) + ([] if sw.flash_attn else unfused_core(sw))


def _gated(sw: Switches, parts: list[Component]) -> list[Component]:
    """An output gate's tensors after the attention output, which the gate's product keeps too (Megatron-Core 0.16.1
    Attention._apply_output_gate, under torch.compile: jit_fuser)."""
    parts = parts[:-1] + [parts[-1]._replace(doc="attention output, kept by the attention core and the gate's product")]
    return parts + [
        tok(
            "attn_gate",
            a * dh,
            B_a,
            True,
            sw,
            "the output gate [s, b, a dh] (linear_qkv's gate slice), a factor "
            "of attn_out * sigmoid(gate) (sigmoid recomputed by the compiled product)",
        ),
        tok(
            "gated_attn_out", a * dh, B_a, True, sw, "attn_out * sigmoid(gate) in bf16, input of the output projection"
        ),
    ]


def _narrow_v(sw: Switches, kv: sp.Expr) -> list[Component]:
    """K, V and the context of GQA attention whose value heads are value_width wide (d_v: MiMo-V2-Flash's v_head_dim)
    with `kv` KV heads (k, or a sliding-window layer's k_w), as Transformer Engine's fused attention keeps them for
    backward (transformer-engine 2.9.0 FusedAttnFunc saves q, k, v and its output; megatron-core 0.16.1
    TEDotProductAttention takes k_channels / v_channels, as its MLA passes v_head_dim); unfused attention keeps them
    repeated to the a query heads (_kv)."""
    dv, heads, letter, why = (
        (value_width(sw), a, "a", "repeated to the a query heads")
        if _repeated(sw)
        else (value_width(sw), kv, "kv", "kv the layer's KV heads (k, or a sliding-window layer's k_w)")
    )
    return [
        tok("k", heads * dh, B_a, True, sw, f"keys after RoPE [s, b, {letter} dh], {why}"),
        tok("v", heads * dv, B_a, True, sw, f"values [s, b, {letter} d_v], v_proj's output at the value heads' width"),
        tok(
            "attn_out",
            a * dv,
            B_a,
            True,
            sw,
            "attention output (context) [s, b, a d_v], kept by the fused "
            "attention's backward and input of the output projection",
        ),
    ]
