"""The MLP of an MoE layer: a router [h, E] (fp32 logits, softmax or sigmoid over E, top-k_e by score or by score +
the score-correction bias [E], within a token's best expert groups when routing is group-limited, the k_e weights
renormalised),
E routed SwiGLU experts stacked [E, h, f_e] / [E, f_e, h] (split over "expert", and f_e over "tensor" when t_e = t),
dispatched by jaxcheck.model.dispatch, plus shared experts (a tensor-parallel SwiGLU of width f_s) with an optional
sigmoid gate [h, 1]. Its input and output are in the between-blocks layout [b, s/(c t), h]."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx
from jax.ad_checkpoint import checkpoint_name

from ..spec import StepSpec
from .dispatch import routed_experts
from .mlp import MLP, param
from .rules import act_names, constrain, partition_spec
from .weightops import cast_einsum

SHARED_NAMES = ("shared_gate", "shared_up", "shared_swiglu")  # checkpoint names of the shared experts' SwiGLU


def expert_width_axis(plan: StepSpec) -> str:
    """Logical axis of f_e: over tensor when each expert is split over the t tensor ranks (t_e = t), else whole."""
    return "expert_mlp" if plan.train.etp_size == plan.train.t else "expert_mlp_whole"


def group_limited(choice_BxSxE: jax.Array, k_e: int, groups: int, group_topk: int) -> jax.Array:
    """Group-limited choice (DeepSeek-V2/V3's n_group, topk_group; Megatron-Core's group_limited_topk): the E experts
    in `groups` equal groups, each scored by the sum of its top k_e / group_topk choice scores, and every expert
    outside a token's best group_topk groups set to -inf, so that its top k_e come from those. Chooses only: no
    gradient flows through it."""
    choice = jax.lax.stop_gradient(choice_BxSxE)
    *lead, E = choice.shape
    scores = jnp.sum(jax.lax.top_k(choice.reshape(*lead, groups, E // groups), k_e // group_topk)[0], axis=-1)
    _, best = jax.lax.top_k(scores, group_topk)  # [b, s, group_topk]
    kept = jnp.any(best[..., None] == jnp.arange(groups), axis=-2)  # [b, s, groups]
    return jnp.where(jnp.repeat(kept, E // groups, axis=-1), choice, -jnp.inf)


def route(
    logits_BxSxE: jax.Array,
    k_e: int,
    sigmoid: bool = False,
    bias_E: jax.Array | None = None,
    groups: int = 0,
    group_topk: int = 0,
) -> tuple[jax.Array, jax.Array]:
    """Softmax (or, DeepSeek-V3's scoring_func, sigmoid) over the E experts (fp32), the top k_e, their scores
    renormalised to sum to one: the chosen experts [b, s, k_e] int32 and their weights [b, s, k_e] fp32 (Mixtral's
    softmax over the top-k logits; DeepSeek-V3's norm_topk_prob). With the score-correction bias [E] (noaux_tc) the
    experts are chosen by score + bias and weighted by their scores alone; the bias gets no gradient. With groups,
    they are chosen within a token's best group_topk groups (group_limited)."""
    probs = jax.nn.sigmoid(logits_BxSxE) if sigmoid else jax.nn.softmax(logits_BxSxE, axis=-1)
    probs = checkpoint_name(probs, "router_probs")
    if bias_E is None and not groups:
        top_BxSxK, experts_BxSxK = jax.lax.top_k(probs, k_e)
    else:
        choice = probs if bias_E is None else probs + jax.lax.stop_gradient(bias_E).astype(probs.dtype)
        if groups:
            choice = group_limited(choice, k_e, groups, group_topk)
        _, experts_BxSxK = jax.lax.top_k(choice, k_e)
        top_BxSxK = jnp.take_along_axis(probs, experts_BxSxK, axis=-1)
    top_BxSxK = checkpoint_name(top_BxSxK, "router_topk")
    weights = top_BxSxK / jnp.sum(top_BxSxK, axis=-1, keepdims=True)
    return experts_BxSxK, checkpoint_name(weights, "router_weights")


class MoE(nnx.Module):
    """Router [h, E] (replicated), routed experts gate, up [E, h, f_e] and down [E, f_e, h], shared experts
    (f_s > 0) and their sigmoid gate [h, 1] (shared_gate); with moe_bias (gpt-oss) the router's bias [E] and the
    experts' gate, up [E, f_e] and down [E, h] biases."""

    def __init__(self, plan: StepSpec, rngs: nnx.Rngs):
        s, dt = plan.shape, plan.opts.param_dtype
        h, E, f_e = s.h, s.E, s.f_e
        width = expert_width_axis(plan)
        self.plan = plan
        self.router = param(rngs, (h, E), ("embed", "router"), h**-0.5, dt)
        self.gate = param(rngs, (E, h, f_e), ("experts", "embed", width), h**-0.5, dt)
        self.up = param(rngs, (E, h, f_e), ("experts", "embed", width), h**-0.5, dt)
        self.down = param(rngs, (E, f_e, h), ("experts", width, "embed"), f_e**-0.5, dt)
        self.shared = MLP(plan, rngs, s.f_s, SHARED_NAMES) if s.f_s else None
        self.shared_gate = param(rngs, (h, 1), ("embed", None), h**-0.5, dt) if s.shared_gate else None
        # the score-correction bias [E]: a parameter here (zero gradient; DeepSeek-V3 updates it by a rule outside
        # the optimizer, Megatron-Core keeps it as an fp32 buffer: the megatron recipe counts that)
        self.expert_bias = param(rngs, (E,), ("router",), 0.1, dt) if s.expert_bias else None
        if s.moe_bias:  # gpt-oss: the router's bias [E] and each expert's gate, up [f_e] and down [h] biases
            self.router_bias = param(rngs, (E,), ("router",), 0.1, dt)
            self.gate_bias = param(rngs, (E, f_e), ("experts", width), 0.1, dt)
            self.up_bias = param(rngs, (E, f_e), ("experts", width), 0.1, dt)
            self.down_bias = param(rngs, (E, h), ("experts", "embed"), 0.1, dt)

    def __call__(self, x_BxSxH: jax.Array) -> jax.Array:
        """x: the normed residual stream [b, s, h] in the between-blocks layout; returns the MLP output there."""
        plan = self.plan
        outer = act_names(plan)
        logits = constrain(cast_einsum("bsh,he->bse", jnp.float32, x_BxSxH, self.router[...]), outer[:2] + (None,))
        if plan.shape.moe_bias:
            logits = logits + self.router_bias[...].astype(jnp.float32)
        bias = None if self.expert_bias is None else self.expert_bias[...]
        experts, weights = route(
            logits, plan.shape.k_e, plan.shape.sigmoid, bias, plan.shape.groups, plan.shape.group_topk
        )
        y = routed_experts(
            x_BxSxH,
            experts,
            weights,
            self.gate[...],
            self.up[...],
            self.down[...],
            partition_spec(outer),
            partition_spec(("experts", "embed", expert_width_axis(plan))),
            plan.train.moe_capacity,
            expert_width_axis(plan) == "expert_mlp",
            (self.gate_bias[...], self.up_bias[...], self.down_bias[...]) if plan.shape.moe_bias else None,
        )
        y = constrain(y, outer)
        if self.shared is None:
            return y
        shared_in = checkpoint_name(constrain(x_BxSxH, ("batch", "seq", "embed")), "shared_in")  # SP all-gather
        shared = constrain(self.shared(shared_in), outer)  # SP reduce-scatter
        if self.shared_gate is not None:
            logit = cast_einsum("bsh,ho->bso", jnp.float32, x_BxSxH, self.shared_gate[...])
            gate = checkpoint_name(jax.nn.sigmoid(logit), "shared_sigmoid")
            shared = checkpoint_name(shared, "shared_out") * gate.astype(shared.dtype)
        return y + shared
