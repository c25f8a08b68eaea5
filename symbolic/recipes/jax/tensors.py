"""Tensors jaxcheck's compiled train step keeps per layer for backward, named as jaxcheck/model/causal_lm.py names them:
one device's shard for one micro batch, read off the implementation."""

from __future__ import annotations

import sympy as sp

from .gdn import gdn_none, gdn_selective
from .norms import head_norms_none, latents_none, norm_residuals, post_norms_none
from .step import FLASH_BLOCK, SELECTIVE_SAVED
from ...config.switches import Switches
from ...config.symbols import B_a, a, b, c, d_r, d_v, dh, f, h, k, kv_r, q_r, s, t
from ...components.base import FP32, Component, repeated, tokens


def head_widths(sw: Switches) -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    """Widths of one token's queries, keys and values over all heads: a dh, k dh, k dh (GQA); with MLA
    (jaxcheck.model.mla) a (dh + d_r), a (dh + d_r), a d_v (the attention output is as wide as the values)."""
    if sw.mla:
        return a * (dh + d_r), a * (dh + d_r), a * d_v
    return a * dh, k * dh, k * dh


def out_width(sw: Switches) -> sp.Expr:
    """Width of one token's attention output (the row-parallel output projection's input): a dh, or MLA's a d_v."""
    return a * d_v if sw.mla else a * dh


# Layouts (jaxcheck.model.rules): the residual stream between blocks is [b, s, h] split over context (and over tensor
# with SP, "seq_sp"); inside a block ("seq") s is split over context only, so the normed inputs attn_in / mlp_in are
# kept all-gathered over tensor; heads and f are split over tensor; K and V are all-gathered over context ("kv_seq").
# Flash attention (the default) has fp32 [b, a/t, s/c, FLASH_BLOCK] score blocks, one at a time; unfused attention
# materialises [b, a/t, s/c, s] scores.
def scores(nbytes: sp.Expr) -> sp.Expr:
    """One device's bytes of a [b, a, s, s] score tensor: heads over t, queries over c, all s keys (K/V gathered)."""
    return nbytes * b * a * s * s / (t * c)


def score_blocks(nbytes: sp.Expr) -> sp.Expr:
    """One device's bytes of a [b, a, s, block] score block of flash attention: heads over t, queries over c."""
    return nbytes * b * a * s * sp.Min(s, FLASH_BLOCK) / (t * c)


def _stream(name: str, sw: Switches, doc: str) -> Component:
    """A bf16 [b, s, h] tensor of the residual stream, kept in the between-blocks layout (s over c, and t with SP)."""
    return Component(name, tokens(h, B_a, sw.sp), doc)


def _latents_selective(sw: Switches) -> list[Component]:
    """Remat selective, MLA: the latents before their norms, 'q_latent' [b, s/c, q_r] and 'kv_latent' [b, s/c,
    kv_r] (replicated over t; SELECTIVE_SAVED)."""
    if not sw.mla:
        return []
    return (
        [Component("q_latent", tokens(q_r, B_a, False), "'q_latent': the query latent before its norm")]
        if sw.q_lora
        else []
    ) + [
        Component(
            "kv_latent",
            tokens(kv_r, B_a, False),
            "'kv_latent': the key/value latent before its norm, without the RoPE key",
        )
    ]


def saved_none(sw: Switches, moe: bool = False, gdn: bool = False) -> list[Component]:
    """Remat none: every residual jax autodiff keeps for one layer (saved_residuals of the layer function): fp32
    RMSNorm intermediates, flash attention's fp32 log-sum-exp (or, unfused, the scores, their exp and the bf16
    probabilities), the three SiLU intermediates; an MoE layer's MLP half from recipes.jax.moe; a Gated DeltaNet
    layer's mixer (gdn) in place of the attention."""
    mixer = gdn_none(sw) if gdn else _attention_none(sw)
    return mixer + norm_residuals("mlp_norm", sw) + _mlp_none(sw, moe)


def _mlp_none(sw: Switches, moe: bool) -> list[Component]:
    """Remat none: the MLP half's residuals after its norm (an MoE layer's from recipes.jax.moe), [b, s, f/t] each."""
    if moe:
        from .moe import moe_mlp_none

        return moe_mlp_none(sw)
    hidden = tokens(f, B_a, True)
    if sw.mlp == "gelu":
        return [
            Component("mlp_in", tokens(h, B_a, False), "'mlp_in': normed input of fc1, all-gathered over t"),
            Component("fc1", hidden, "'fc1' projection output (+ its bias), GeLU's input"),
            repeated("gelu_parts", 4, hidden, "four intermediates of GeLU's tanh approximation"),
            repeated("gelu_constants", 2, B_a, "two compute-dtype scalars of the tanh approximation"),
            Component("gelu", hidden, "'gelu' = GeLU(fc1), input of the row-parallel fc2"),
        ]
    act = [repeated("silu_parts", 3, hidden, "three SiLU intermediates (sigmoid, its complement, silu)")]
    if sw.sandwich:  # Gemma's GeGLU (jaxcheck.model.mlp.MLP)
        act = [
            repeated(
                "geglu_parts",
                5,
                hidden,
                "GeLU(gate)'s tanh approximation: four "
                "intermediates and GeLU(gate), the product's other input (Gemma's GeGLU)",
            ),
            repeated("geglu_constants", 2, B_a, "two compute-dtype scalars of the tanh approximation"),
        ]
    return [
        Component("mlp_in", tokens(h, B_a, False), "'mlp_in': normed input of gate/up, all-gathered over t"),
        Component("gate", hidden, "'gate' projection output"),
        Component("up", hidden, "'up' projection output"),
        *act,
        Component(
            "swiglu",
            hidden,
            ("'swiglu' = GeLU(gate) * up (GeGLU)" if sw.sandwich else "'swiglu' = silu(gate) * up")
            + ", input of the row-parallel down",
        ),
    ] + post_norms_none(sw)


def _attention_none(sw: Switches) -> list[Component]:
    """Remat none: the attention half's residuals (RMSNorm, Q/K/V input, K/V gathered, Q, the attention core's,
    its output)."""
    q_w, k_w, v_w = head_widths(sw)
    return (
        norm_residuals("attn_norm", sw)
        + [
            Component(
                "attn_in", tokens(h, B_a, False), "'attn_in': normed input of Q/K/V, all-gathered over t (inner layout)"
            ),
            *latents_none(sw),
            *head_norms_none(sw),
            Component("k_gathered", tokens(k_w, B_a, True) * c, "'k_gathered': K after RoPE all-gathered over context"),
            Component("v_gathered", tokens(v_w, B_a, True) * c, "'v_gathered': V all-gathered over context"),
            Component(
                "q", tokens(q_w, B_a, True), "'q' after RoPE, reshaped to [b, s, k, a/k, dh] for the score einsum"
            ),
        ]
        + (_flash_residuals(sw) if sw.flash_attn else _dense_residuals())
        + [
            Component(
                "attn_out",
                tokens(out_width(sw), B_a, True),
                "'attn_out': attention output, input of the "
                "row-parallel Wo" + (" (gated: a factor of the gate's product)" if sw.attn_gate else ""),
            )
        ]
        + (_gate_none(sw) if sw.attn_gate else [])
    )


def _gate_none(sw: Switches) -> list[Component]:
    """Remat none, gated attention (Qwen3-Next, Qwen3.5): the sigmoid of the gate projection and its derivative
    s (1 - s), and the gated output, Wo's input; [b, s, a dh] in compute dtype, heads over t."""
    return [
        repeated(
            "attn_gate_sigmoid",
            2,
            tokens(a * dh, B_a, True),
            "sigmoid(x Wg) and its derivative s (1 - s), the product's factor and the sigmoid's",
        ),
        Component(
            "attn_gated",
            tokens(a * dh, B_a, True),
            "'attn_gated': the attention output times the gate, input of the row-parallel Wo",
        ),
    ]


def _flash_residuals(sw: Switches) -> list[Component]:
    """What jaxcheck.model.flash's custom VJP keeps besides q and the gathered k, v: its output and the fp32 log-sum-exp."""
    return [
        Component(
            "flash_out",
            tokens(out_width(sw), B_a, True),
            "flash attention's output as its custom VJP "
            "keeps it (the values of 'attn_out', before the sharding constraint)",
        ),
        Component("lse", FP32 * b * a * s / (t * c), "fp32 [b, a/t, s/c] log-sum-exp of the online softmax"),
    ]


def _dense_residuals() -> list[Component]:
    """What autodiff of XLA attention keeps (flash_attn off): exp of the s x s scores, the sums, the probabilities."""
    return [
        Component("score_scale", FP32, "fp32 scalar sqrt(dh) the scores are divided by"),
        Component("scores_exp", scores(FP32), "fp32 exp(scores - max) of the softmax"),
        Component("probs", scores(B_a), "bf16 softmax probabilities, input of P V"),
        repeated("softmax_sums", 2, scores(FP32) / s, "fp32 [b, a, s, 1] softmax denominators (sum and its square)"),
    ]


def _mixer_selective(sw: Switches, gdn: bool) -> list[Component]:
    """Remat selective, the named tensors of a layer's mixer: attention's (q, the gathered K and V, the output; MLA's
    latents; gated attention's gate and gated output) or a Gated DeltaNet's (jaxcheck.model.gdn)."""
    if gdn:
        return gdn_selective(sw)
    q_w, k_w, v_w = head_widths(sw)
    return [
        *_latents_selective(sw),
        Component("q", tokens(q_w, B_a, True), "'q' after RoPE, heads over t"),
        Component(
            "k_gathered",
            tokens(k_w, B_a, True) * c,
            "'k_gathered': K after RoPE, k heads over t, all-gathered over context",
        ),
        Component(
            "v_gathered", tokens(v_w, B_a, True) * c, "'v_gathered': V, k heads over t, all-gathered over context"
        ),
        Component("attn_out", tokens(out_width(sw), B_a, True), "'attn_out': attention output, input of Wo"),
        *(
            [
                Component("attn_gate", tokens(a * dh, B_a, True), "'attn_gate': the gate projection x Wg"),
                Component("attn_gated", tokens(a * dh, B_a, True), "'attn_gated': the gated output, input of Wo"),
            ]
            if sw.attn_gate
            else []
        ),
    ]


def saved_selective(sw: Switches, moe: bool = False, gdn: bool = False) -> list[Component]:
    """Remat selective: the tensors SELECTIVE_SAVED names (jaxcheck's policy saves them); the attention core is
    recomputed; an MoE layer keeps its MLP half's named tensors (recipes.jax.moe) instead of the dense MLP's; a Gated
    DeltaNet layer (gdn) its mixer's named tensors instead of attention's."""
    tensors = [
        _stream("attn_norm_in", sw, "'attn_norm_in': layer input, the residual stream"),
        Component(
            "attn_in", tokens(h, B_a, False), "'attn_in': normed input of Q/K/V, all-gathered over t (inner layout)"
        ),
        *_mixer_selective(sw, gdn),
        _stream("mlp_norm_in", sw, "'mlp_norm_in': residual stream after attention"),
        Component("mlp_in", tokens(h, B_a, False), "'mlp_in': normed input of gate/up, all-gathered over t"),
        Component("gate", tokens(f, B_a, True), "'gate' projection output"),
        Component("up", tokens(f, B_a, True), "'up' projection output"),
        Component("swiglu", tokens(f, B_a, True), "'swiglu' = silu(gate) * up, input of down"),
        Component("fc1", tokens(f, B_a, True), "'fc1' projection output (GeLU MLP)"),
        Component("gelu", tokens(f, B_a, True), "'gelu' = GeLU(fc1), input of fc2"),
        *(
            [
                _stream(
                    "attn_proj",
                    sw,
                    "'attn_proj': the attention's output after Wo, the post-attention norm's input "
                    "(Gemma's sandwich norms)",
                ),
                _stream("mlp_proj", sw, "'mlp_proj': the MLP's output, the post-feedforward norm's input"),
            ]
            if sw.sandwich
            else []
        ),
    ]
    mlp = ("fc1", "gelu") if sw.mlp == "gelu" else ("gate", "up", "swiglu")
    tensors = [x for x in tensors if x.name not in ("gate", "up", "swiglu", "fc1", "gelu") or x.name in mlp]
    by_name = {x.name: x for x in tensors}
    dense = [by_name[name] for name in SELECTIVE_SAVED if name in by_name]
    if not moe:
        return dense
    from .moe import moe_mlp_selective

    return [x for x in dense if x.name not in ("mlp_in", "gate", "up", "swiglu")] + moe_mlp_selective(sw)


def saved_full(sw: Switches, moe: bool = False, gdn: bool = False) -> list[Component]:
    """Remat full (nothing_saveable): only the layer input x, in the residual-stream layout."""
    return [_stream("x", sw, "layer input x, the only residual under jax.checkpoint(nothing_saveable)")]


def layer_tensors(sw: Switches, moe: bool = False, gdn: bool = False) -> list[Component]:
    """The tensors one layer (with `moe`, an MoE layer; with `gdn`, a Gated DeltaNet layer) keeps for one micro
    batch under the remat policy (Training.recompute)."""
    return {"none": saved_none, "selective": saved_selective, "full": saved_full}[sw.recompute](sw, moe, gdn)
