"""Activations one layer keeps for backward, tensor by tensor, in bytes per GPU for one micro batch (Korthikanti et
al. 2022 section 4 for the GPT layer and the recompute rules; Fujii et al. 2024 for the Llama layer)."""
from __future__ import annotations

import sympy as sp

from ..config.switches import Switches
from ..config.symbols import B_a, a, b, dh, f, h, k, s
from .base import Component, per_gpu_tokens

_MASK = sp.Integer(1)  # dropout masks are one byte per element (Korthikanti et al. 2022)


def _tok(name: str, width: sp.Expr, nbytes: sp.Expr, tp: bool, sw: Switches, doc: str) -> Component:
    """A [s, b, width] tensor of nbytes per element; tp says whether it lives in a tensor-parallel region (split over
    t), else (norm inputs, inputs of the column-parallel projections, dropout masks on the residual stream) it is
    split over t only with sequence parallelism; CP splits s over c."""
    return Component(name, per_gpu_tokens(nbytes * s * b * width, tp, sw), doc)


def _scores(name: str, nbytes: sp.Expr, sw: Switches, doc: str) -> Component:
    """A [b, a, s/c, s] attention-score-shaped tensor: heads split over t, queries over c."""
    return Component(name, per_gpu_tokens(nbytes * a * s * s * b, True, sw), doc)


def attention_tensors(sw: Switches) -> list[Component]:
    """Llama attention block: norm-1 input, QKV input, Q, K, V (a*dh and k*dh wide), the q/k norms' inputs where the
    model has them, attention output; scores + softmax without flash."""
    parts = [
        _tok("norm1_input", h, B_a, False, sw, "input of the first RMSNorm (the residual stream)"),
        _tok("qkv_input", h, B_a, False, sw, "normed input of the QKV projection (kept sharded with SP, re-gathered in backward)"),
    ]
    if sw.qk_norm != "none":
        parts += [
            _tok("q_norm_input", a * dh, B_a, True, sw, "queries before their RMSNorm (Megatron-Core qk_layernorm, "
                 "Qwen3, OLMoE), kept for the norm's backward"),
            _tok("k_norm_input", k * dh, B_a, True, sw, "keys before their RMSNorm, kept for the norm's backward"),
        ]
    parts += [
        _tok("q", a * dh, B_a, True, sw, "queries after RoPE, a*dh wide, input of the attention core"),
        _tok("k", k * dh, B_a, True, sw, "keys after RoPE, k*dh wide with GQA"),
        _tok("v", k * dh, B_a, True, sw, "values, k*dh wide with GQA"),
        _tok("attn_out", a * dh, B_a, True, sw, "attention output = input of the output projection, a*dh wide"),
    ]
    if not sw.flash_attn:
        parts += [
            _scores("scores", B_a, sw, "pre-softmax attention scores Q K^T, kept by unfused attention (DESIGN note)"),
            _scores("softmax", B_a, sw, "softmax probabilities, kept for the softmax and P V backward"),
        ]
    return parts


def mlp_tensors(sw: Switches) -> list[Component]:
    """Llama SwiGLU block: norm-2 input, MLP input, gate, up, SwiGLU activation, down input (Fujii et al. 2024)."""
    return [
        _tok("norm2_input", h, B_a, False, sw, "input of the second RMSNorm (residual stream after attention)"),
        _tok("mlp_input", h, B_a, False, sw, "normed input of the gate/up projections"),
        _tok("gate", f, B_a, True, sw, "gate projection output, input of SiLU"),
        _tok("up", f, B_a, True, sw, "up projection output"),
        _tok("swiglu", f, B_a, True, sw, "SiLU(gate), the SwiGLU product's first factor"),
        _tok("down_input", f, B_a, True, sw, "SiLU(gate) * up, input of the down projection"),
    ]


def gpt_layer_tensors(sw: Switches) -> list[Component]:
    """Classic GPT layer of Korthikanti et al. 2022: LayerNorm, MHA, dropout, 2-matrix GELU MLP of width f."""
    parts = [
        _tok("norm1_input", h, B_a, False, sw, "LayerNorm-1 input"),
        _tok("qkv_input", h, B_a, False, sw, "QKV projection input"),
        _tok("q", h, B_a, True, sw, "queries"),
        _tok("k", h, B_a, True, sw, "keys"),
        _tok("v", h, B_a, True, sw, "values"),
        _tok("attn_out", h, B_a, True, sw, "output projection input"),
        _tok("attn_dropout_mask", h, _MASK, False, sw, "dropout mask after the output projection"),
        _tok("norm2_input", h, B_a, False, sw, "LayerNorm-2 input"),
        _tok("mlp_input", h, B_a, False, sw, "first MLP matrix input"),
        _tok("gelu_input", f, B_a, True, sw, "GELU input"),
        _tok("down_input", f, B_a, True, sw, "GELU output = second MLP matrix input"),
        _tok("mlp_dropout_mask", h, _MASK, False, sw, "dropout mask after the MLP"),
    ]
    if not sw.flash_attn:
        parts += [
            _scores("softmax", B_a, sw, "softmax output"),
            _scores("softmax_dropout_mask", _MASK, sw, "dropout mask on the attention probabilities"),
            _scores("softmax_dropout_out", B_a, sw, "dropped-out probabilities, input of P V"),
        ]
    return parts


def _is_attention_core(part: Component) -> bool:
    """The s x s terms that selective recompute drops (Korthikanti et al. 2022, section 5)."""
    return part.expr.has(s**2) or part.name in ("scores", "softmax", "softmax_dropout_mask", "softmax_dropout_out")


def layer_tensors(sw: Switches, gpt: bool = False, moe: bool = False) -> list[Component]:
    """What one layer (a dense one, or with `moe` an MoE layer) keeps per micro batch under the recompute policy:
    none keeps all; selective drops the attention core (s x s terms); full keeps only the layer input (Korthikanti
    et al. 2022)."""
    if gpt:
        parts = gpt_layer_tensors(sw)
    else:
        from .moe import moe_tensors

        parts = attention_tensors(sw) + (moe_tensors(sw) if moe else mlp_tensors(sw))
    if sw.recompute == "selective":
        return [part for part in parts if not _is_attention_core(part)]
    if sw.recompute == "full":
        return [_tok("layer_input", h, B_a, False, sw, "layer input, the only tensor kept under full recompute")]
    return parts


def layer_activation(sw: Switches, gpt: bool = False, moe: bool = False) -> sp.Expr:
    """Bytes one layer (with `moe`, an MoE layer) keeps for one micro batch on one GPU."""
    return sp.Add(*(part.expr for part in layer_tensors(sw, gpt, moe)))
