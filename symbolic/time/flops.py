"""Forward FLOPs per token of each layer kind (Narayanan et al. 2021, arXiv 2104.04473, eq. 3: 2 FLOPs per
multiply-add, backward twice the forward), as named components in the glossary's letters."""

from __future__ import annotations

import sympy as sp

from ..components.base import Component
from ..config.symbols import E, L, L_e, L_w, a, d_r, d_v, dh, f, f_e, f_s, h, k, k_e, k_w, kv_r, n_mtp, q_r, s, v

TWO = sp.Integer(2)


def attention_proj(mla: bool, q_latent: bool, narrow_v: bool = False, kv: sp.Expr = k) -> Component:
    """Q, K, V and O projections of a layer of `kv` KV heads (k, or a sliding-window layer's k_w), V and O at d_v
    where the value heads are narrower (narrow_v); with MLA its query path, key/value latent, up-projections and
    output."""
    if not mla and (narrow_v or kv != k):
        dv = d_v if narrow_v else dh
        return Component(
            "F_qkvo",
            TWO * h * (a + kv) * (dh + dv),
            "Q [h, a dh], K [h, kv dh], V [h, kv d_v] and O [a d_v, h] GEMMs per token, kv the layer's KV "
            "heads (transformers 5.25.0 modeling_mimo_v2_flash.py MiMoV2FlashAttention)",
        )
    if not mla:
        return Component(
            "F_qkvo",
            TWO * h * dh * (2 * a + 2 * k),
            "Q, O [h, a dh] and K, V [h, k dh] GEMMs per token (Narayanan 2021 eq. 3 with GQA)",
        )
    q = TWO * (h * q_r + q_r * a * (dh + d_r)) if q_latent else TWO * h * a * (dh + d_r)
    return Component(
        "F_qkvo",
        q + TWO * h * (kv_r + d_r) + TWO * kv_r * a * (dh + d_v) + TWO * a * d_v * h,
        "MLA's q_a/q_b (or q), kv_a [h, kv_r + d_r], kv_b [kv_r, a (dh + d_v)] and o [a d_v, h] GEMMs "
        "(DeepSeek-V2 modeling, Megatron-Core MLASelfAttention)",
    )


def attention_core(mla: bool, narrow_v: bool = False) -> Component:
    """Causal attention's QK^T and AV: each query meets s/2 keys on average (a sliding window's fewer are not
    modelled: the window is no letter); QK^T at dh, AV at the value width (d_v where narrower)."""
    width = dh + d_r + d_v if mla else (dh + d_v if narrow_v else 2 * dh)
    return Component(
        "F_core",
        s * a * width,
        "QK^T and AV of causal attention per token, s/2 keys on average (Narayanan 2021 eq. 3 "
        "counts s keys, without the causal half)",
    )


def window_share(window: tuple[int, int, int]) -> sp.Expr:
    """Causal attention's keys per query averaged over the layers, over s/2: where n of `total` layers slide over a
    window of w keys a query meets min(i, w) keys, (2 w - w^2/s)/s of s/2 on average (w <= s); window = (w, n, total)."""
    w, n, total = window
    if not n:
        return sp.Integer(1)
    share, ws = sp.Rational(n, total), sp.Min(w, s)
    return 1 - share + share * (2 * ws / s - ws**2 / s**2)


def projections(mla: bool, q_latent: bool, narrow_v: bool, swa: bool) -> sp.Expr:
    """FLOPs per token of every layer's attention projections: L layers alike, or L - L_w of k KV heads and L_w
    sliding-window layers of k_w (MiMo-V2-Flash)."""
    full = attention_proj(mla, q_latent, narrow_v).expr
    return (L - L_w) * full + L_w * attention_proj(mla, q_latent, narrow_v, k_w).expr if swa else L * full


def mla_up(q_latent: bool) -> sp.Expr:
    """FLOPs per token of MLA's up-projections, what --recompute-modules mla_up_proj reruns."""
    return TWO * ((q_r * a * (dh + d_r) if q_latent else 0) + kv_r * a * (dh + d_v))


def mlp(n_f: int) -> Component:
    """A dense MLP's n_f matrices of h x f (SwiGLU 3, GeLU 2)."""
    return Component("F_mlp", TWO * n_f * h * f, f"{n_f} GEMMs of [h, f] per token (Narayanan 2021 eq. 3)")


def moe() -> Component:
    """An MoE layer: the router, the k_e routed experts each token visits, the shared experts."""
    return Component(
        "F_moe",
        router() + routed() + 6 * h * f_s,
        "router [h, E], k_e routed SwiGLU experts [h, f_e] x 3 and shared experts [h, f_s] x 3 per "
        "token (Megatron-Core MoELayer; tokens force-balanced as the tuned runs set them)",
    )


def router() -> sp.Expr:
    """FLOPs per token of the router's gate [h, E] (megatron-core 0.16.1 moe/router.py gating)."""
    return TWO * h * E


def routed() -> sp.Expr:
    """FLOPs per token of the k_e routed experts it visits (their grouped GEMMs)."""
    return 6 * h * f_e * k_e


def head() -> Component:
    """The LM head's GEMM (the loss's softmax is elementwise)."""
    return Component("F_head", TWO * h * v, "logits = x [h] W [h, v] per token (Narayanan 2021 eq. 3's 6 h v / 3)")


def model_flops(shape, n_f: int) -> tuple[list[Component], sp.Expr]:
    """The forward components and FLOPs per token of the whole model: L layers, the head, and n_mtp MTP modules
    (each its eh_proj [2h, h], a layer like the last one, and the shared head: Megatron-Core MultiTokenPredictionLayer)."""
    narrow_v, swa = getattr(shape, "narrow_v", False), getattr(shape, "swa", False)
    windowed = window_share(getattr(shape, "window", (0, 0, 1)))  # evaluate's _Shape passes Choices.window
    attn, core, dense, routed, out = (
        attention_proj(shape.mla, bool(shape.q_lora), narrow_v),
        attention_core(shape.mla, narrow_v),
        mlp(n_f),
        moe(),
        head(),
    )
    last_mlp = routed.expr if shape.moe else dense.expr
    layer_sum = (
        projections(shape.mla, bool(shape.q_lora), narrow_v, swa)
        + L * core.expr * windowed
        + (L - L_e) * dense.expr
        + L_e * routed.expr
    )
    mtp = n_mtp * (4 * h * h + attn.expr + core.expr + last_mlp + out.expr)
    parts = [attn, core, dense] + ([routed] if shape.moe else []) + [out]
    return parts, layer_sum + out.expr + mtp
