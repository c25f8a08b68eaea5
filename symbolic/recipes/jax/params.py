"""The parameters one device of jaxcheck's step holds (pure sympy): layers per stage of the dense, the MoE and a
hybrid's Gated DeltaNet stack, the device's parameters but its routed experts, its routed experts, and the largest
layer it runs (what the `jax` profile's argument and per-layer rows are made of; jaxcheck.model.causal_lm lays the stacks
out)."""

from __future__ import annotations

import sympy as sp

from ...config.switches import Switches
from ...config.symbols import E, L, L_e, L_g, h, n_mtp, p, t
from ...components.experts import experts_params
from ...components.mtp import mtp_moe_layers
from ...components.weights import embedding_params, final_norm_params, head_params, layer_params

N = L / p  # layers per stage


def stack_layers(sw: Switches) -> tuple[sp.Expr, sp.Expr]:
    """Layers per stage of the dense stack and of the MoE stack: (L/p, 0) for a dense model, ((L - L_e)/p, L_e/p)
    with experts (each stage's dense layers first: jaxcheck.model.causal_lm.stack_layers, jaxcheck.stages); a Gated
    DeltaNet hybrid's attention layers only ((L - L_g)/p in the one stack its MLPs make: the rule table's jax scope)."""
    if sw.gdn:
        return ((L - L_g) / p, sp.Integer(0)) if not sw.moe else (sp.Integer(0), (L - L_g) / p)
    return (N, sp.Integer(0)) if not sw.moe else ((L - L_e) / p, L_e / p)


def linear_layers(sw: Switches) -> sp.Expr:
    """Layers per stage of a hybrid's Gated DeltaNet stack (L_g/p; each stage runs them first, its MLPs all dense or
    all MoE as its attention layers'); 0 without them."""
    return L_g / p if sw.gdn else sp.Integer(0)


def gdn_layer_params(sw: Switches) -> sp.Expr:
    """Parameters of one Gated DeltaNet layer on one device but its routed experts (jaxcheck.model.gdn); 0 without."""
    if not sw.gdn:
        return sp.Integer(0)
    return layer_params(sw, moe=sw.moe, mixer="gdn") + (E if sw.moe and sw.expert_bias else 0)


def moe_layer_params(sw: Switches) -> sp.Expr:
    """Parameters of one MoE layer on one device but its routed experts: attention, norms, router, shared experts, and
    the score-correction bias [E] (a parameter of jaxcheck's step: jaxcheck.model.moe)."""
    return layer_params(sw, moe=True) + (E if sw.expert_bias else 0)


def mtp_module_params(sw: Switches) -> sp.Expr:
    """Parameters of one multi-token-prediction module on one device but its routed experts: enorm, hnorm and its
    final norm (whole), eh_proj [2h, h] (columns over t), and its layer's, an MoE layer's or a dense one's
    (jaxcheck.model.mtp); on every stage, replicated over pipe like the LM head. 0 without MTP."""
    if not sw.mtp:
        return sp.Integer(0)
    return 3 * final_norm_params(sw) + 2 * h * h / t + (moe_layer_params(sw) if sw.mtp_moe else layer_params(sw))


def mtp_module_whole(sw: Switches) -> sp.Expr:
    """One module's parameters, whole on this device (its routed experts' too)."""
    return mtp_module_params(sw) + (experts_params(sw) if sw.mtp_moe else 0)


def device_params(sw: Switches) -> sp.Expr:
    """Parameters on one device but the routed experts: its stages' layers (matrices over t, norms whole), embedding,
    final norm, LM head, and the multi-token-prediction modules."""
    dense, moe = stack_layers(sw)
    ends = embedding_params(sw) + (final_norm_params(sw) if sw.tied else head_params(sw))  # GPT: positions, LayerNorm
    return (
        ends
        + dense * layer_params(sw)
        + moe * moe_layer_params(sw)
        + n_mtp * mtp_module_params(sw)
        + linear_layers(sw) * gdn_layer_params(sw)
    )


def device_experts(sw: Switches) -> sp.Expr:
    """Routed-expert parameters on one device: E/e experts of 3 h f_e / t_e in each of its L_e/p MoE layers and in
    each multi-token-prediction module's MoE layer."""
    moe = stack_layers(sw)[1] + mtp_moe_layers(sw) + linear_layers(sw)
    return moe * experts_params(sw) if sw.moe else sp.Integer(0)


def one_layer(sw: Switches) -> sp.Expr:
    """Parameters of the largest layer a device runs: a dense one, or an MoE layer with its E/e local experts (a
    hybrid: its attention layer or its Gated DeltaNet layer)."""
    if sw.gdn:
        experts = experts_params(sw) if sw.moe else 0
        attention = moe_layer_params(sw) if sw.moe else layer_params(sw)
        return sp.Max(attention, gdn_layer_params(sw)) + experts
    if not sw.moe:
        return layer_params(sw)
    return sp.Max(sp.Piecewise((layer_params(sw), L - L_e > 0), (0, True)), moe_layer_params(sw) + experts_params(sw))


def one_layer_dense(sw: Switches) -> sp.Expr:
    """Parameters of the largest layer a device runs but its routed experts (rows of their own: jaxmoe.rows): a dense
    layer's beyond the MoE layer's experts, where it is the larger, else an MoE layer's non-expert parameters."""
    if sw.gdn:
        return sp.Max(moe_layer_params(sw) if sw.moe else layer_params(sw), gdn_layer_params(sw))
    if not sw.moe:
        return layer_params(sw)
    return sp.Max(sp.Piecewise((layer_params(sw) - experts_params(sw), L - L_e > 0), (0, True)), moe_layer_params(sw))
