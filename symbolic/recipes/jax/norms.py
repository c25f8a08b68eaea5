"""The normalisations' saved residuals in jaxcheck's step (jaxcheck.model.norm, causal_lm): an RMSNorm's or
LayerNorm's fp32 intermediates, the q/k norms', MLA's latent norms' and Gemma's sandwich norms', per device for one
micro batch (jax's saved residuals of the layer, tests/test_jax_*.py)."""

from __future__ import annotations

import sympy as sp

from ...config.switches import Switches
from ...config.symbols import B_a, a, dh, h, k, kv_r, q_r
from ...components.base import FP32, Component, repeated, tokens


def norm_residuals(prefix: str, sw: Switches, width: sp.Expr = h, split_t: bool | None = None) -> list[Component]:
    """What autodiff of jaxcheck's fp32 RMSNorm keeps: x in fp32, x * rsqrt(mean x^2 + eps) in fp32, rsqrt twice
    (a [b, s, width] input; the residual stream's layout unless split_t says otherwise); a LayerNorm the same four,
    the centred x in place of x (jax's saved residuals of the layer, tests/test_jax_gpt.py)."""
    split_t = sw.sp if split_t is None else split_t
    return [
        Component(
            f"{prefix}_x32", tokens(width, FP32, split_t), "fp32 copy of the norm input (RMSNorm, x.astype(float32))"
        ),
        Component(
            f"{prefix}_normed32",
            tokens(width, FP32, split_t),
            "fp32 x * rsqrt(mean(x^2) + eps), input of the scale multiply",
        ),
        repeated(f"{prefix}_rsqrt", 2, tokens(1, FP32, split_t), "fp32 [b, s, 1] rsqrt and its product, kept twice"),
    ]


def head_norms_none(sw: Switches) -> list[Component]:
    """Remat none, q/k norms (jaxcheck.model.causal_lm.Attention): each of the query's and the key's RMSNorm keeps its
    fp32 input, its fp32 normed output (heads over t) and its rsqrt twice: per head over dh (Qwen3), or per token
    over the whole a*dh and k*dh (OLMoE; the mean's sum all-reduced over t, so the rsqrt is whole on every rank);
    a weightless norm per head (Llama 4's) has no scale multiply, so no fp32 normed output."""
    if sw.qk_norm not in ("head", "full", "weightless") or sw.mla:
        return []
    parts = []
    for name, heads in (("q", a), ("k", k)):
        rsqrt = tokens(heads, FP32, True) if sw.qk_norm != "full" else tokens(1, FP32, False)
        parts += [
            Component(
                f"{name}_norm_x32",
                tokens(heads * dh, FP32, True),
                f"fp32 copy of the {name} projection, the input of its RMSNorm",
            ),
            *(
                []
                if sw.qk_norm == "weightless"
                else [
                    Component(
                        f"{name}_norm_normed32",
                        tokens(heads * dh, FP32, True),
                        f"fp32 normed {name} heads, input of the scale multiply",
                    )
                ]
            ),
            repeated(
                f"{name}_norm_rsqrt",
                2,
                rsqrt,
                f"fp32 rsqrt and its product, [b, s, {name} heads, 1] per head "
                "or [b, s, 1] over the whole width, kept twice",
            ),
        ]
    return parts


def latents_none(sw: Switches) -> list[Component]:
    """Remat none, MLA (jaxcheck.model.mla): the query latent's and the key/value latent's RMSNorm residuals and
    their normed bf16 outputs (the up-projections' inputs), each [b, s/c, r] replicated over t; nothing with GQA."""
    if not sw.mla:
        return []
    parts = []
    for name, width, on in (("q_latent", q_r, sw.q_lora), ("kv_latent", kv_r, True)):
        if on:
            parts += norm_residuals(f"{name}_norm", sw, width, False) + [
                Component(
                    f"{name}_normed",
                    tokens(width, B_a, False),
                    f"normed {name.replace('_', ' ')}, input of its column-parallel up-projection (replicated over t)",
                )
            ]
    return parts


def post_norms_none(sw: Switches) -> list[Component]:
    """Remat none, Gemma's sandwich norms: the post-attention and post-feedforward RMSNorms' residuals, on each part's
    output in the residual stream's layout (jaxcheck.model.causal_lm.Block); none without them."""
    return norm_residuals("post_attn_norm", sw) + norm_residuals("post_mlp_norm", sw) if sw.sandwich else []
