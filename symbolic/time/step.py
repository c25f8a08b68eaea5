"""The step time as named components in seconds (one GPU of the slowest pipeline stage, Megatron-Core's 1F1B or
interleaved schedule): compute, the bubble, each group's exposed communication, the optimizer step."""

from __future__ import annotations

import sympy as sp

from ..components.base import Component
from ..config.symbols import (
    B_a,
    B_g,
    B_o,
    B_w,
    E,
    L,
    L_e,
    L_w,
    a,
    b,
    c,
    d,
    d_r,
    d_v,
    dh,
    e,
    f_e,
    h,
    k,
    k_e,
    k_w,
    m,
    n_mtp,
    p,
    s,
    t,
    t_e,
    vpp,
)
from . import flops
from .choices import Choices
from .kernels import FP32, layer_kernels, rerun_share
from .symbols import B_x, N_q, P_d, P_x, R_at, R_e, R_f, R_g, R_h, W_cp, W_dp, W_edp, W_ep, W_etp, W_hbm, W_pp, W_tp

FA_BACKWARD = sp.Rational(7, 2)  # FlashAttention's forward + backward FLOPs over its forward (GEMM.md 5: bwd 2.5x)

TOKENS = s * b / (c * t)  # tokens of a micro batch per GPU (TP's ranks share the GEMMs, SP the rest)


def micro_batch(ch: Choices) -> list[Component]:
    """Seconds one micro batch spends on the slowest stage: its GEMMs, attention, the head, recompute, and the
    communication on its critical path (none of it counted as hidden: Megatron's TP/EP/CP overlaps are left out)."""
    return _compute(ch) + _communication(ch) + _moe_kernels(ch)


def _compute(ch: Choices) -> list[Component]:
    """The slowest stage's GEMMs, attention, head (and MTP modules) and recompute, in seconds."""
    attn, core, dense, routed = (
        flops.attention_proj(ch.mla, ch.q_latent, ch.narrow_v),
        flops.attention_core(ch.mla, ch.narrow_v),
        flops.mlp(ch.n_f),
        flops.moe(),
    )
    tok = TOKENS
    moe_mlp = routed.expr if ch.moe else 0  # the routed experts' FLOPs, and below their memory-bound kernels
    lin = (flops.projections(ch.mla, ch.q_latent, ch.narrow_v, ch.swa) + (L - L_e) * dense.expr + L_e * moe_mlp) / p
    experts = L_e * flops.routed() / p if ch.moe else 0  # of lin, what the grouped expert GEMMs run
    last = moe_mlp if ch.moe else dense.expr
    router_bwd = 2 * L_e * flops.router() / p if ch.moe and ch.router_fp32 else 0  # of lin x 3: T_rgrad times it
    full = ch.recompute == "full"
    rerun_lin = (
        (lin - experts + experts * R_g / R_e) * rerun_share(ch)
        if full
        else (
            flops.mla_up(ch.q_latent) * L / p
            if ch.recompute == "selective" and "mla_up_proj" in ch.modules and ch.mla
            else 0
        )
    )
    if ch.recompute == "selective" and "mlp" in ch.modules:  # the dense layers' MLP forward again (recompute_mlp)
        rerun_lin += (L - L_e) * dense.expr / p
    rerun_core = rerun_share(ch) if full else int(ch.recompute == "selective" and "core_attn" in ch.modules)
    core_layers = (L / p) * core.expr * flops.window_share(ch.window)  # the stage's cores, sliding windows' fewer keys
    return [
        Component(
            "T_lin",
            tok * ((3 * (lin - experts) - router_bwd) / R_g + 3 * experts / R_e),
            "linear layers' GEMMs, forward + 2x backward (Narayanan 2021 eq. 3), the experts' at their rate; an "
            "FP32 router's backward is T_rgrad's",
        ),
        Component(
            "T_attn",
            FA_BACKWARD * tok * core_layers / R_at,
            "causal flash attention forward + backward (FlashAttention's 3.5x forward, GEMM.md 5), R_at at the "
            "head width and the rank's s/c keys (time/flash.py: FA2's H100 causal fwd+bwd curve, GEMM.md 5a); a sliding "
            "window's layers at min(i, w) keys a query (gpt-oss: TE 2.9.0 window_size (128, 0), cuDNN's "
            "F16_arbitrary_seqlen, pytorch/attention/dot_product_attention/utils.py:964-998)",
        ),
        Component(
            "T_last",
            3 * tok * (1 + n_mtp) * flops.head().expr / R_h
            + 3 * tok * n_mtp * (4 * h * h + attn.expr + last) / R_g
            + FA_BACKWARD * tok * n_mtp * core.expr / R_at,
            "the last stage's LM head in BF16 and its MTP modules (Megatron-Core places both on the last stage)",
        ),
        Component(
            "T_rec",
            tok * (rerun_lin / R_g + rerun_core * core_layers / R_at),
            "recompute's extra forward: every layer (full) or the modules selective names (Korthikanti 2022; mlp: "
            "the dense layers' MLP, megatron-core 0.16.1 transformer_layer.py:445 recompute_mlp)",
        ),
    ]


def _communication(ch: Choices) -> list[Component]:
    """The communication on a micro batch's critical path: TP+SP, expert TP, the CP ring, EP, PP, in seconds."""
    tok = TOKENS
    full = rerun_share(ch)  # the layers recomputed: 1 under full recompute of every layer
    kv_width = a * (dh + d_r + d_v) if ch.mla else 2 * k * dh
    if ch.narrow_v or ch.swa:  # K at dh, V at the value width; the sliding-window layers' k_w heads, per layer
        kv_width = ((L - L_w) * k + L_w * k_w) / L * (dh + (d_v if ch.narrow_v else dh)) if ch.swa else k * (dh + d_v)
    act = s * b * h * B_a / c  # bytes of one [s/c, b, h] activation
    tp_per_layer = (4 + 2 * full) * (L + (L - L_e)) / p  # AG + RS before/after attention and a dense MLP, fwd, bwd
    if ch.recompute == "selective" and "mlp" in ch.modules:  # the dense MLP's rerun forward gathers and scatters again
        tp_per_layer += 2 * (L - L_e) / p
    return [
        Component(
            "T_tp",
            tp_per_layer * act * (t - 1) / t / W_tp,
            "TP+SP all-gather and reduce-scatter of [s/c, b, h], 2 per layer half forward, 2 backward, +1 each "
            "recomputed (Korthikanti 2022 sec. 4.2.2)",
        ),
        Component(
            "T_etp",
            (4 + 2 * full) * (L_e / p) * tok * k_e * h * B_a * (t_e - 1) / W_etp,
            "expert TP: the tokens an expert rank receives all-gathered over t_e and reduce-scattered back",
        ),
        Component(
            "T_cp",
            (3 + full) * (c - 1) * (L / p) * (s / c) * b * kv_width * B_a / t / W_cp,
            "CP ring: K, V passed c - 1 times forward, K, V and their gradients backward (TE's ring attention)",
        ),
        Component(
            "T_ep",
            (4 + 2 * full) * (L_e / p) * tok * k_e * h * B_a * (e - 1) / e / W_ep,
            "EP all-to-all: dispatch and combine of k_e copies of each token, forward and backward",
        ),
        Component(
            "T_pp",
            sp.Piecewise((2 * vpp * s * b * h * B_a / (t * c) / W_pp, p > 1), (0, True)),
            "PP: one activation sent forward and one gradient back per virtual stage",
        ),
    ]


def _router_backward(ch: Choices, tok: sp.Expr) -> Component:
    """T_rgrad: an FP32 router's backward GEMMs in TF32 and its casts, in the L_e/p MoE layers."""
    return Component(
        "T_rgrad",
        (L_e / p) * tok * (2 * flops.router() / R_f + 2 * h * (B_a + FP32) / W_hbm)
        if ch.moe and ch.router_fp32
        else sp.Integer(0),
        "an FP32 router's backward (moe_router_dtype fp32: Qwen3, DeepSeek-V3): its dgrad and wgrad GEMMs in "
        "TF32 (megatron-core 0.16.1 moe/moe_utils.py:1206-1236 RouterGatingLinearFunction.backward; TE's "
        "cublaslt_gemm.cu runs pure FP32 GEMMs as CUBLAS_COMPUTE_32F_FAST_TF32), the saved input cast to FP32 "
        "and the FP32 input gradient cast back, [h] read and written each",
    )


def _moe_kernels(ch: Choices) -> list[Component]:
    """An MoE layer's memory-bound kernels at HBM speed: permute, the experts' activation and casts, sort, FP8
    padding, expert biases, in seconds."""
    tok = TOKENS
    full = ch.recompute == "full"
    rerun_act = 1 if full or (ch.recompute == "selective" and "moe_act" in ch.modules) else 0
    unit = (L_e / p) * tok * k_e * h * B_a / W_hbm  # one pass over the k_e copies of every token at HBM speed
    copies = (8 + 4 * full) * unit  # read and write them forward and backward, the forward again under full recompute
    flex = ch.dispatcher in ("deepep", "hybridep")  # their probabilities are FP32, the others' the router's (BF16)
    bias_fwd, bias_bwd = (14, 20) if flex else (6, 8)  # T_bias's passes of the k_e copies
    return [
        Component(
            "T_perm",
            copies,
            "MoE token permute and unpermute at HBM speed: each reads and writes the k_e copies of every token "
            "(megatron-core 0.16.1 moe/moe_utils.py:289 permute's index_select, :380 unpermute's scatter_add_), "
            "forward and its mirror backward (the dispatcher's sort_chunks_by_idxs: T_sort)",
        ),
        Component(
            "T_mexp",
            (L_e / p)
            * tok
            * k_e
            * (B_a * (8 + 3 * rerun_act) * f_e + B_x * (2 * h + 3 * f_e + int(full) * (h + f_e)))
            / W_hbm,
            "the experts' memory-bound kernels on the k_e copies of every token, at HBM speed: the weighted "
            "SwiGLU (megatron-core 0.16.1 moe/experts.py:692 weighted_bias_swiglu_impl: reads [2 f_e], writes "
            "[f_e] forward; reads [2 f_e] and [f_e], writes [2 f_e] backward; moe_act recompute reruns it) and, "
            "under FP8, the grouped linears' casts of fc1's [h] and fc2's [f_e] inputs forward and of their "
            "output gradients [h], [2 f_e] backward (Transformer Engine 2.9.0 pytorch/module/grouped_linear.py"
            ":127 and :323 split_quantize; no norm to fuse them into, unlike the dense layers' LayerNormLinear)",
        ),
        Component(
            "T_sort",
            sp.Piecewise((copies, E > e), (0, True)) if ch.dispatcher == "alltoall" else sp.Integer(0),
            "the all-to-all dispatcher's sort of the k_e copies by local expert after the dispatch and its "
            "unsort before the combine, when a rank holds several experts: each reads and writes them, forward "
            "and backward (megatron-core 0.16.1 moe/token_dispatcher.py:732 dispatch_postprocess and :767 "
            "combine_preprocess, moe/moe_utils.py:470 sort_chunks_by_idxs; the all-gather dispatcher and "
            "DeepEP permute by local expert at once, HybridEP delivers the tokens grouped, :1079)",
        ),
        Component(
            "T_pad",
            N_q * copies if ch.dispatcher != "hybridep" else sp.Integer(0),
            "under FP8, the grouped MLP's padding of each local expert's rows to the quantization alignment "
            "(16, MXFP8 32) and the unpadding of its output: each reads and writes the k_e copies, forward and "
            "backward (megatron-core 0.16.1 moe/experts.py:648 and :762 quantization_padding/_unpadding = "
            "Transformer Engine 2.9.0 pytorch/module/fp8_padding.py:39 fused_multi_row_padding, skipped at :121 "
            "only when every count is aligned, as HybridEP's dispatch pads them: token_dispatcher.py:1036)",
        ),
        Component(
            "T_clamp",
            (L_e / p) * tok * k_e * f_e * B_a * (18 + 8 * rerun_act) / W_hbm if ch.clamp and ch.moe else sp.Integer(0),
            "the experts' GLU clamp (activation_func_clamp_value, gpt-oss): the gate and linear halves clamped and "
            "concatenated in eager torch before the fused activation (megatron-core 0.16.1 "
            "fusions/fused_bias_geglu.py:424-431, moe/experts.py:698-706), 8 passes of [f_e] forward, each "
            "clamp's gradient reading the gradient and its input and the halves' gradients joined, 10 backward; "
            "moe_act recompute reruns the forward",
        ),
        _router_backward(ch, tok),
        Component(
            "T_bias",
            (bias_fwd * (1 + int(full)) + bias_bwd) * unit if ch.moe_bias else sp.Integer(0),
            "experts with biases (gpt-oss): fc2's bias times each token's probability added outside the GEMM, "
            "expert by expert (megatron-core 0.16.1 moe/experts.py:609-626 _apply_bias). Passes of the k_e "
            "copies with probabilities in B_a: b p written, t and b p read and the sum written, torch.cat read "
            "and written (6) forward; grad b and grad p each a product of the gradient written and read by its "
            "sum, torch.split's gradient concatenated (8) backward. The flex dispatchers' FP32 probabilities "
            "(token_dispatcher.py:1029-1034, :1174-1179) widen b p, the sum, the cat and the products and add "
            "the cast back and its gradient's: 14 and 20 (the others pass the router's dtype, router.py:95-100: "
            "BF16, as gpt-oss's Megatron-Bridge provider sets no --moe-router-dtype)",
        ),
    ]


def data_parallel(ch: Choices, tau_c: sp.Expr) -> list[Component]:
    """Seconds of the data-parallel step left exposed by Megatron's --overlap-grad-reduce / --overlap-param-gather
    (gradients reduced during the last micro batch's backward, weights gathered during the first one's forward;
    ZeRO-3 gathers and reduces layer by layer in every micro batch)."""
    n_dp, n_edp = d * c, d * t * c / (e * t_e)
    share = P_d / (t * p) * (n_dp - 1) / n_dp / W_dp + P_x / (e * t_e * p) * (n_edp - 1) / n_edp / W_edp
    backward, forward = 2 * tau_c / 3, tau_c / 3
    hidden = lambda x, under: sp.Max(0, x - under)
    if ch.zero == 0:
        dp = hidden(2 * B_g * share, backward)
    elif ch.zero == 1:
        dp = hidden(B_g * share, backward) + hidden(B_w * share, forward)
    elif ch.zero == 2:
        dp = m * hidden(B_g * share, backward) + hidden(B_w * share, forward)
    else:
        dp = m * hidden((2 * B_w + B_g) * share, tau_c)
    sharded = ch.zero >= 1
    local = P_d / (t * p) / (n_dp if sharded else 1) + P_x / (e * t_e * p) / (n_edp if sharded else 1)
    return [
        Component(
            "T_dp",
            dp,
            "DP/ZeRO reduce-scatter and all-gather (all-reduce at ZeRO 0) left exposed by "
            "Megatron's overlap (conservative: only one micro batch's compute hides it)",
        ),
        Component(
            "T_opt",
            local * (2 * B_o + B_g + B_w) / W_hbm,
            "Adam step: optimizer states read and written, gradient read, weight written, at HBM speed "
            "(Apex/TE multi_tensor_adam)",
        ),
    ]


def step(ch: Choices) -> list[Component]:
    """Every component of the step: compute and communication m times, the bubble (p - 1)/vpp micro batches of
    the same (Narayanan 2021 sec. 2.2.2), the exposed data-parallel traffic and the optimizer."""
    mb = micro_batch(ch) + layer_kernels(ch, s * b / (c * t))  # the layers' GEMM-less kernels too (kernels.py)
    tau = sp.Add(*(x.expr for x in mb))
    tau_c = sp.Add(*(x.expr for x in mb[:4]))
    per_step = [Component(x.name, m * x.expr, x.doc) for x in mb]
    bubble = Component("T_bubble", tau * (p - 1) / vpp, "pipeline bubble: (p - 1)/vpp micro batches idle")
    return per_step + [bubble] + data_parallel(ch, tau_c)
