"""torchtitan's MoE layer, tensor by tensor (torchtitan 0.3.0: models/common/moe.py MoE, TokenChoiceTopKRouter,
RoutedExperts, GroupedExperts; token_dispatcher.py LocalTokenDispatcher and AllToAllTokenDispatcher; ops/scatter_add.py;
distributed/fsdp.py apply_fsdp_to_decoder; distributed/activation_checkpoint.py SelectiveAC), in place of a
TransformerBlock's FeedForward; at tp = 1, T = s b / c tokens a micro batch on one GPU, N = k_e T routed rows, each
GPU's experts computing R of them (N at ep = 1; over the ep ranks' all-to-all an even share times C_f, the imbalance
allowed, as components.moe takes it). Listed at ep = 1 by benchmarks/torch_saved.py (records/torch-saved-cpu.jsonl,
part moe_block); the all-to-all's tensors at ep > 1 read from token_dispatcher.py."""

from __future__ import annotations

import sympy as sp

from ...components.base import FP32, INT32, INT64, Component
from ...components.experts import experts_params
from ...config.switches import Switches
from ...config.symbols import B_a, C_f, E, b, c, e, f_e, f_s, h, k_e, s
from .tensors import block_input, sac_attention, token_tensor


def expert_parallel() -> sp.Expr:
    """1 where the experts are split over ep > 1 ranks (AllToAllTokenDispatcher's all-to-alls run), else 0."""
    return sp.Piecewise((1, e > 1), (0, True))


def _rows(name: str, rows: sp.Expr, width: sp.Expr, nbytes: sp.Expr, doc: str) -> Component:
    """A saved [rows, width] tensor of one MoE layer, rows per token (k_e: N; the R an expert rank computes)."""
    return Component(name, nbytes * rows * s * b * width / c, doc)


def received() -> sp.Expr:
    """R / T: the rows one GPU's experts compute per local token, k_e at ep = 1 (every routed copy stays), C_f k_e at
    ep > 1 (an even share of the all-to-all times the imbalance C_f)."""
    return k_e * sp.Piecewise((C_f, e > 1), (1, True))


def router(sw: Switches) -> list[Component]:
    """The router's saved tensors: the gate's fp32 input (autocast to fp32 around the gate: x.float() and the gate's
    fp32 weight are what the mm saves), the fp32 sigmoid or softmax scores [T, E] (saved by the score function and by
    the gather of the chosen ones), the chosen experts' int64 ids [T, k_e] (the gather's index), and route_norm's
    numerator [T, k_e] and fp32 denominator [T, 1] (on: torchtitan's Qwen3-MoE, gpt-oss and DeepSeek-V3 671B configs)."""
    return [
        token_tensor(
            "router_input_fp32",
            h,
            FP32,
            False,
            "fp32 copy of the ffn norm's output, the gate's input under autocast(float32)",
        ),
        token_tensor(
            "router_scores",
            E,
            FP32,
            False,
            "fp32 " + ("sigmoid" if sw.sigmoid else "softmax") + " scores over all E experts [T, E]",
        ),
        token_tensor(
            "router_topk_ids",
            k_e,
            INT64,
            False,
            "int64 ids of the chosen experts [T, k_e], the gather's "
            "index (topk runs on the scores plus the expert bias, which saves nothing)",
        ),
        token_tensor("router_topk_scores", k_e, FP32, False, "fp32 chosen scores [T, k_e], route_norm's numerator"),
        token_tensor(
            "router_denominator", 1, FP32, False, "fp32 sum of the chosen scores [T, 1], route_norm's denominator"
        ),
    ]


def routed(sw: Switches) -> list[Component]:
    """Dispatch, grouped experts and combine: the expert-order indices, the routed rows and the grouped GEMMs'
    tensors over R rows, the combine's fp32 product over N."""
    R, ep = received(), expert_parallel()
    return [
        _rows(
            "dispatch_order",
            k_e,
            1,
            2 * INT64,
            "the argsort of the expert ids and its // k_e, int64 [N] each, the "
            "indices of the two gathers (the second also the scatter_add's index)",
        ),
        _rows(
            "dispatch_permutation",
            R,
            1,
            ep * INT64,
            "(ep > 1) _permute's int64 indices [R], rank-major to "
            "expert-major, saved by the index and by _unpermute's index_put",
        ),
        _rows("experts_input", R, h, B_a, "the routed rows [R, h] in bf16, the grouped GEMMs' input"),
        _rows("experts_w1_out", R, f_e, B_a, "_grouped_mm output of w1 [R, f_e], SiLU's input"),
        _rows("experts_silu_out", R, f_e, B_a, "SiLU output [R, f_e], saved by the product"),
        _rows("experts_w3_out", R, f_e, B_a, "_grouped_mm output of w3 [R, f_e], saved by the product"),
        _rows("experts_product", R, f_e, B_a, "SiLU(w1 x) * w3 x [R, f_e], w2's grouped-GEMM input"),
        _rows("combine_scores", k_e, 1, FP32, "the chosen scores in expert order [N, 1], fp32"),
        _rows(
            "combine_fp32",
            k_e,
            h,
            FP32,
            "the experts' outputs upcast to fp32 [N, h] (after the combine's "
            "all-to-all at ep > 1), saved by their product with the scores",
        ),
    ]


def shared(sw: Switches) -> list[Component]:
    """The shared experts, a FeedForward of width f_s on the ffn norm's output: that output (bf16), w1's, SiLU's and
    w3's outputs and their product (none without shared experts)."""
    if not sw.shared:
        return []
    return [
        token_tensor("shared_input", h, B_a, False, "bf16 ffn norm output, the shared w1's and w3's input"),
        *(
            token_tensor(f"shared_{name}", f_s, B_a, False, doc)
            for name, doc in (
                ("w1_out", "shared w1 output, SiLU's input"),
                ("silu_out", "SiLU output"),
                ("w3_out", "shared w3 output"),
                ("product", "the product, shared w2's input"),
            )
        ),
    ]


def moe_tensors(sw: Switches) -> list[Component]:
    """What the MoE in place of the FeedForward keeps without checkpointing, the ffn norm's own tensors apart."""
    return [*router(sw), *routed(sw), *shared(sw)]


def moe_selective(sw: Switches) -> list[Component]:
    """Op-level SAC of an MoE block (0.3.0's policy: compute-intensive ops, mm every second, topk, the all-to-all):
    the block input; wq's and wv's mm outputs (mm 1 and 3 of wq, wk, wv, wo, gate, shared w1, w3, w2), the flash
    kernel's output and logsumexp; the gate's fp32 logits (mm 5); topk's values and ids; the shared w3's output
    (mm 7); at ep > 1 both all-to-alls' outputs. _grouped_mm is not among the save ops: the experts are recomputed."""
    ep = expert_parallel()
    return [
        block_input(),
        *sac_attention(False),
        token_tensor("router_logits", E, FP32, False, "mm output of the gate, fp32 [T, E]"),
        token_tensor("topk_values", k_e, FP32, False, "topk's fp32 values [T, k_e] (of scores plus the expert bias)"),
        token_tensor("topk_ids", k_e, INT64, False, "topk's int64 ids [T, k_e]"),
        *([token_tensor("shared_w3_out", f_s, B_a, False, "mm output of the shared w3")] if sw.shared else []),
        _rows(
            "dispatch_all_to_all", received(), h, ep * B_a, "(ep > 1) all_to_all_single output [R, h] of the dispatch"
        ),
        _rows("combine_all_to_all", k_e, h, ep * B_a, "(ep > 1) all_to_all_single output [N, h] of the combine"),
    ]


def layer_weights() -> Component:
    """Per MoE layer and micro batch, what is saved but is no token's: the gate's fp32 weight cast [E, h] (saved by
    its mm under autocast) and the grouped GEMMs' int32 offsets [E / ep]."""
    return Component(
        "router_weight_fp32",
        FP32 * h * E + INT32 * E / e,
        "the gate's fp32 weight cast (autocast) and the int32 group offsets of the grouped GEMMs",
    )


def routing_buffers(moe_layers: sp.Expr) -> Component:
    """Each MoE layer's fp32 buffers [E]: expert_bias_E (load_balance_coeff on, the default) and tokens_per_expert_E."""
    return Component(
        "routing_buffers",
        moe_layers * 2 * FP32 * E,
        "fp32 expert_bias_E and tokens_per_expert_E [E] of every MoE layer (MoE.__init__, load_balance_coeff 1e-3)",
    )


def experts_all() -> sp.Expr:
    """Routed-expert parameters of one MoE layer, all E experts' w1, w2, w3 (GroupedExperts: [E, f_e, h] each): the
    ep x efsdp = d c ranks each keep a 1/(d c) shard of them and of their gradients and AdamW moments."""
    return E * 3 * h * f_e


def experts_gathered(sw: Switches) -> sp.Expr:
    """Routed-expert parameters of one MoE block unsharded: its E/ep local experts' w1, w2, w3 (FSDP2 all-gathers them
    over efsdp = d c / ep, apply_fsdp_to_decoder's shard_placement_fn), components.experts' count at t_e = 1."""
    return experts_params(sw)
