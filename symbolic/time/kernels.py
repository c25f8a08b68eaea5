"""The memory-bound kernels every layer runs beside its GEMMs, in seconds per micro batch on the slowest stage, each
the bytes it reads and writes at the card's HBM rate W_hbm (megatron-core 0.16.1 with Transformer Engine 2.9.0).
Activations with SP are [s/t, b, h] and column-parallel outputs [s, b, X/t]: both tok X elements a GPU."""

from __future__ import annotations

import sympy as sp

from ..components.base import Component
from ..config.symbols import B_a, E, L, L_e, a, d_r, d_v, dh, f, f_s, h, k, kv_r, n_mtp, p, q_r, v
from .choices import Choices
from .quant import norm_casts
from .symbols import B_x, W_hbm

FP32 = 4  # bytes of an FP32 element: a router score (moe_router_dtype "fp32": Qwen3, DeepSeek-V3), a native loss logit


def widths(ch: Choices) -> dict[str, sp.Expr]:
    """Elements a token of one layer has in each place the kernels below touch (per GPU, tok of them)."""
    dv = d_v if (ch.mla or ch.narrow_v) else dh
    if ch.mla:  # q_down/q, kv_down, q_up, kv_up outputs; q and k after the RoPE part is joined (a heads each)
        q_out = (q_r + a * (dh + d_r)) if ch.q_latent else a * (dh + d_r)
        return {
            "qkv_out": q_out + kv_r + d_r + a * (dh + dv),
            "attn_out": a * dv,
            "rope": 2 * a * (dh + d_r) + (a + 1) * d_r,
            "qk_norm": (q_r if ch.q_latent else 0) + kv_r,
            "inputs": 2 * h,
        }  # the input norm's output cast by q_down and kv_down, TE Linears
    return {
        "qkv_out": a * dh + k * (dh + dv),
        "attn_out": a * dv,
        "rope": (a + k) * dh,
        "qk_norm": (a + k) * dh if ch.qk_norm else 0,
        "inputs": 0,
    }


def rerun_share(ch: Choices) -> sp.Expr:
    """The share of a stage's layers full recompute reruns: all of them, or by --recompute-method block the first N
    (megatron-core 0.16.1 transformer_block.py _checkpointed_forward; uniform chunks rerun every layer); 0 otherwise."""
    if ch.recompute != "full":
        return sp.Integer(0)
    return sp.Min(ch.rc_block, L / p) / (L / p) if ch.rc_block else sp.Integer(1)


def layer_kernels(ch: Choices, tok: sp.Expr) -> list[Component]:
    """The layer's norms, RoPE, residual adds and activation, the dense linears' FP8 casts, the router's kernels
    and the loss, each a Component in seconds per micro batch (L/p layers; the loss on the last stage)."""
    full = rerun_share(ch)
    norm_rerun = full if ch.recompute == "full" else int(ch.recompute == "selective" and "layernorm" in ch.modules)
    w = widths(ch)
    dense = (L - L_e) / p if ch.moe else L / p  # layers with a dense MLP
    act, act_fwd = (8, 3) if ch.n_f == 3 else (5, 2)  # fused bias-SwiGLU / GeLU: passes of [f] forward + backward
    mlp_in = f_s if ch.moe else 0  # the shared experts' width (a dense layer's is f, below)
    shared = sp.Piecewise((L_e / p, f_s > 0), (0, True)) if ch.moe else 0  # layers with shared experts
    per = tok * B_a / W_hbm  # seconds per element of a token, one pass
    rope_fwd, rope_bwd = (2, 2) if ch.rope_fused else (12, 15)  # TE's fused RoPE, or megatron-core's eager one
    biased = (L / p) * int(ch.out_bias) + dense * int(ch.mlp_bias)  # residual adds that also add a bias
    return [
        Component(
            "T_norm",
            per * (L / p) * ((2 * h) * (5 + 2 * norm_rerun) + w["qk_norm"] * (5 + 2 * full)),
            "RMSNorms at HBM speed: the input and pre-MLP norms over [h] and the QK / MLA latent norms, each "
            "read and written forward (2 passes) and x, dy read and dx written backward (3; TE 2.9.0 "
            "pytorch/module/layernorm_linear.py:207 apply_normalization, its FP8 output written by the norm, "
            ":198 with_quantized_norm), rerun by full or layernorm recompute",
        ),
        Component(
            "T_rope",
            per * (L / p) * w["rope"] * (rope_fwd * (1 + full) + rope_bwd) * int(ch.rope),
            "RoPE on the queries and keys, fused: read and written forward and backward (megatron-core 0.16.1 "
            "models/common/embeddings/rope_utils.py apply_rotary_pos_emb, TE fused_rope); with MLA the RoPE "
            "part and the join of q and k to a (dh + d_r) per head (multi_latent_attention.py torch.cat); none "
            "with learned absolute positions (a GPT's). "
            "Under YaRN with a concentration factor (gpt-oss) TE's kernel is skipped (rope_utils.py:279-284) for "
            "_apply_rotary_pos_emb_bshd (:92-126): t cos, the half rotation's negation and cat, its product with "
            "sin, the sum, the final cat, 12 passes forward; the two products' and the negation's gradients, "
            "the halves' gradients placed into zeros and summed with t's, 15 backward",
        ),
        Component(
            "T_bda",
            sp.Integer(0) if ch.bda_fused else per * biased * h * 2 * (1 + full),
            "bias-dropout-add unfused (bias_dropout_fusion False, gpt-oss): the bias added in a kernel of its "
            "own before the residual add, [h] read and written forward where a layer adds a bias (the attention "
            "output's; the routed experts add theirs in T_bias); dropout at p = 0 returns its input "
            "(megatron-core 0.16.1 fusions/fused_bias_dropout.py:40-49)",
        ),
        Component(
            "T_resid",
            per * (L / p) * h * 2 * (6 + 3 * full),
            "the two residual adds of a layer: two [h] read and one written forward (megatron-core 0.16.1 "
            "fusions/fused_bias_dropout.py), the gradient's sum with the residual branch's likewise backward",
        ),
        Component(
            "T_act",
            per * (dense * f * (act + act_fwd * full) + (L_e / p) * mlp_in * (8 + 3 * full)),
            "the dense MLP's and shared experts' activation (megatron-core 0.16.1 fusions/fused_bias_swiglu.py "
            "bias_swiglu_impl: [2f] read, [f] written forward, [2f] and [f] read, [2f] written backward; GeLU "
            "[f] 2 and 3 passes): the routed experts' is T_mexp",
        ),
        Component(
            "T_cast",
            tok
            * B_x
            / W_hbm
            * (
                (L / p) * ((w["attn_out"] + w["inputs"]) * (1 + full) + w["qkv_out"] + h)
                + dense * (f * (1 + full) + (ch.n_f - 1) * f + h)
                + shared * ((h + f_s) * (1 + full) + 2 * f_s + h)
            ),
            "under FP8, the dense linears' casts not fused into a norm (TE 2.9.0 pytorch/module/linear.py "
            "input_quantizer: the attention output, fc2's [f] input, the shared experts' and MLA's down "
            "projections' inputs) and of every linear's output gradient backward (base.py "
            "grad_output_preprocess): B_x bytes an element (the experts' casts are T_mexp)",
        ),
        router_kernels(ch, tok),
        norm_casts(ch, tok, full, dense),
        loss(ch, tok),
    ]


def router_kernels(ch: Choices, tok: sp.Expr) -> Component:
    """T_route: the router's memory-bound kernels on its [tokens, E] FP32 scores, in the L_e/p MoE layers."""
    return Component(
        "T_route",
        (L_e / p) * tok * FP32 * E * 18 / W_hbm if ch.moe else sp.Integer(0),
        "the router's kernels on [tokens, E] FP32 scores (megatron-core 0.16.1 moe/moe_utils.py:608 "
        "topk_routing_with_score_function, router.py:598 the aux loss's scores, :567 z-loss, "
        "apply_random_logits under force balancing): softmax, top-k, scatter, the aux-loss softmax and "
        "top-k, the random logits, 8 passes forward; their gradients and sum, 10 backward",
    )


def loss(ch: Choices, tok: sp.Expr) -> Component:
    """The last stage's cross entropy, per Megatron-Core's cross_entropy_fusion_impl (TE's Triton kernel or its own)."""
    return Component(
        "T_loss",
        tok * (1 + n_mtp) * v * (B_a * 5 if ch.cross_entropy == "te" else 2 * B_a + 6 * FP32) / W_hbm,
        "the last stage's cross entropy over [tokens, v/t] logits (TE 2.9.0 pytorch/triton/"
        "cross_entropy.py: online_softmax_kernel reads them, cross_entropy_kernel reads them and writes "
        "the gradient in place, element_mul_kernel reads and writes it backward, :345-370), per MTP "
        "module again; megatron-core's native one (cross_entropy_fusion_impl native, gpt-oss) in FP32, a "
        "pass per jit_fuser function (fusions/fused_cross_entropy.py:12-84): the FP32 copy and its max, "
        "the shift, exp and sum, the division, the gradient's product and its BF16 cast",
    )
