"""A Gated DeltaNet mixer's saved residuals in jaxcheck's step (jaxcheck.model.gdn: Qwen3-Next, Qwen3.5), per
device for one micro batch, under remat none and selective."""

from __future__ import annotations

from ...config.switches import Switches
from ...config.symbols import B_a, d_gk, d_gv, h, n_gk, n_gv, t
from ...components.base import FP32, Component, repeated, tokens
from .norms import norm_residuals


# the mixer's tensors by their shape, heads split over t: [b, s, n_gv d_gv] and [b, s, n_gk d_gk] in the compute dtype,
# an fp32 scalar per value head [b, s, n_gv]
VALUES = tokens(n_gv * d_gv, B_a, True)
KEYS = tokens(n_gk * d_gk, B_a, True)
PER_HEAD = tokens(n_gv, FP32, True)


def gdn_none(sw: Switches) -> list[Component]:
    """Remat none, a Gated DeltaNet mixer (jaxcheck.model.gdn), heads over t, the whole sequence (c = 1): the input
    norm's residuals and its output, the three projections the convolutions keep (their custom VJP), each l2norm's
    fp32 input and rsqrt twice, beta's sigmoid derivative, the decay's terms (exp(A_log) [n_gv] and its broadcast,
    softplus's three), the rule's five inputs (its custom VJP: q and k repeated to n_gv heads when n_gv > n_gk, v,
    fp32 g and beta), the rule's output and the gate z (the gated norm's custom VJP) and out_proj's input."""
    qk_heads = n_gv if sw.gdn_repeat else n_gk
    return norm_residuals("attn_norm", sw) + [
        Component("attn_in", tokens(h, B_a, False), "'attn_in': normed input of the projections, all-gathered over t"),
        repeated(
            "gdn_qk_proj",
            2,
            KEYS,
            "the query and key projections, the convolutions' inputs (kept by causal_conv's custom VJP)",
        ),
        Component("gdn_v_proj", VALUES, "the value projection, its convolution's input"),
        repeated(
            "gdn_l2norm_x32",
            2,
            tokens(n_gk * d_gk, FP32, True),
            "fp32 copies of the convolved queries and keys, the l2norms' inputs",
        ),
        repeated(
            "gdn_l2norm_rsqrt",
            4,
            tokens(n_gk, FP32, True),
            "fp32 [b, s, n_gk, 1] rsqrt and its product, twice for each l2norm",
        ),
        Component("gdn_beta_dsigmoid", PER_HEAD, "fp32 beta (1 - beta), the derivative of beta = sigmoid(x Wb)"),
        repeated(
            "gdn_exp_A", 2, FP32 * n_gv / t, "fp32 exp(A_log) [n_gv] and its broadcast [1, 1, n_gv], factors of g"
        ),
        repeated("gdn_softplus", 3, PER_HEAD, "fp32 intermediates of softplus(x Wa + dt_bias)"),
        repeated(
            "gdn_qk",
            2,
            tokens(qk_heads * d_gk, B_a, True),
            "'gdn_q', 'gdn_k': the l2-normed queries and "
            "keys (repeated to n_gv heads when n_gv > n_gk), inputs the rule's custom VJP keeps",
        ),
        Component("gdn_v", VALUES, "'gdn_v': the convolved values, the rule's input"),
        repeated("gdn_g_beta", 2, PER_HEAD, "'gdn_g', 'gdn_beta': the fp32 decay g and beta, the rule's inputs"),
        Component("gdn_out", VALUES, "'gdn_out': the rule's output, kept by the gated norm's custom VJP"),
        Component("gdn_z", VALUES, "'gdn_z': the output gate z, the gated norm's other input"),
        Component("gdn_gated", VALUES, "'gdn_gated': RMSNorm(o) w silu(z), input of the row-parallel out_proj"),
    ]


def gdn_selective(sw: Switches) -> list[Component]:
    """Remat selective, a Gated DeltaNet mixer (jaxcheck.model.gdn): the tensors it names, heads over t."""
    return [
        Component("gdn_q", KEYS, "'gdn_q': the l2-normed queries [b, s, n_gk, d_gk]"),
        Component("gdn_k", KEYS, "'gdn_k': the l2-normed keys"),
        Component("gdn_v", VALUES, "'gdn_v': the convolved values"),
        Component("gdn_z", VALUES, "'gdn_z': the output gate z"),
        Component("gdn_beta", PER_HEAD, "'gdn_beta': fp32 beta"),
        Component("gdn_g", PER_HEAD, "'gdn_g': the fp32 decay g"),
        Component("gdn_out", VALUES, "'gdn_out': the rule's output"),
        Component("gdn_gated", VALUES, "'gdn_gated': out_proj's input"),
    ]
