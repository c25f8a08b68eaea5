"""The train step: embedding, the pipeline (1F1B, or GPipe's forward then backward), the loss per micro batch, optax
AdamW."""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import optax
from flax import nnx
from jax.ad_checkpoint import checkpoint_policies as cp

from symbolic.config.errors import ConfigError
from symbolic.recipes.jax.step import SELECTIVE_SAVED

from .model.causal_lm import CausalLM
from .model.onef1b import Ends, Stack, one_f_one_b
from .model.pipeline import Tape, gpipe_backward, gpipe_forward
from .model.weightops import zeros_after
from .model.rules import act_names, constrain
from .spec import StepSpec
from .zero import apply_updates, gathered


def remat_policy(name: str):
    """none: keep every residual; selective: keep only SELECTIVE_SAVED; full: keep only each layer's input."""
    if name == "none":
        return None
    if name == "selective":
        return cp.save_only_these_names(*SELECTIVE_SAVED)
    if name == "full":
        return cp.nothing_saveable
    raise ConfigError(f"remat policy must be one of none, selective, full, got {name!r}")


def layer_function(block_graphdef, plan: StepSpec) -> Callable:
    """(layer params, x) -> x, wrapped in jax.checkpoint per the remat policy (Training.recompute)."""

    def layer(layer_params, x):
        return nnx.merge(block_graphdef, layer_params)(x)

    policy = plan.train.recompute
    if policy == "none":
        return layer
    return jax.checkpoint(layer, policy=remat_policy(policy), prevent_cse=False)


def _head_params(params: dict, tied: bool) -> dict:
    """The parameters the heads read after the pipeline: final norm and LM head (the embedding when tied), and each
    multi-token-prediction module's final norm (the rest of a module is _trunk_params')."""
    heads = {n: params[n] for n in ("norm", "embed" if tied else "head")}
    return {**heads, **{n: {"final_norm": params[n]["final_norm"]} for n in params if n.startswith("mtp")}}


def _trunk_params(params: dict) -> dict:
    """The multi-token-prediction modules' parameters but their final norms (enorm, hnorm, eh_proj, the layer):
    what CausalLM.mtp_states reads ({} without MTP)."""
    return {n: {k: v for k, v in params[n].items() if k != "final_norm"} for n in params if n.startswith("mtp")}


def _merged(tree: dict, *parts: dict) -> dict:
    """`tree` with the leaves of `parts` (nested dicts of some of its keys) put in place."""
    out = dict(tree)
    for part in parts:
        for key, value in part.items():
            out[key] = _merged(out.get(key, {}), value) if isinstance(value, dict) else value
    return out


def _like(tree: dict, part: dict) -> dict:
    """The subtree of `tree` (e.g. the gradients' shardings) with the keys of `part`."""
    return {k: _like(tree[k], v) if isinstance(v, dict) else tree[k] for k, v in part.items()}


def _embed_params(params: dict) -> dict:
    """The parameters the lookup reads: the embedding, and GPT's learned positions where the model has them."""
    return {name: params[name] for name in ("embed", "positions") if name in params}


def _embed(graphdef, params: dict, embed: dict, tokens: jax.Array, plan: StepSpec, micro: bool = True) -> jax.Array:
    """Embedded micro batches [m, b, s, h] (micro=False: one, [b, s, h]) in compute dtype, in the between-blocks
    layout; `embed`: the lookup's parameters (_embed_params), the ones differentiated."""
    model: CausalLM = nnx.merge(graphdef, {**params, **embed})
    return constrain(model.embed_tokens(tokens), (("micro",) if micro else ()) + act_names(plan))


def _micro_loss(graphdef, params: dict, head: dict, y_BxSxH: jax.Array, t_BxS: jax.Array) -> jax.Array:
    """Summed next-token cross entropy of one micro batch: final norm, LM head, fp32 logits [b, s, v] (CausalLM.loss;
    with MTP the 1F1B tick runs _states and _heads_loss instead)."""
    model: CausalLM = nnx.merge(graphdef, _merged(params, head))
    return model.loss(y_BxSxH, t_BxS)


def _heads_loss(graphdef, params: dict, head: dict, states: tuple, t_BxS: jax.Array) -> jax.Array:
    """With MTP, the heads' summed cross entropies on the states the modules made (CausalLM.heads_loss)."""
    model: CausalLM = nnx.merge(graphdef, _merged(params, head))
    return model.heads_loss(states, t_BxS)


def _states(graphdef, params: dict, trunk: dict, y_BxSxH: jax.Array, shifted: jax.Array) -> tuple:
    """With MTP, the last layer's output and each module's (CausalLM.mtp_states), `trunk` the parameters differentiated."""
    model: CausalLM = nnx.merge(graphdef, _merged(params, trunk))
    return model.mtp_states(y_BxSxH, shifted)


def _shifted(graphdef, params: dict, embed: dict, t_BxS: jax.Array) -> jax.Array:
    """The multi-token-prediction modules' inputs [n_mtp, b, s, h], looked up with the lookup's parameters `embed`
    (the ones differentiated: their gradient joins the lookup's accumulator, CausalLM.shifted_embeddings)."""
    model: CausalLM = nnx.merge(graphdef, _merged(params, embed))
    return model.shifted_embeddings(t_BxS)


def _stacks(stack_graphdefs) -> dict:
    """Stack name -> block graph definition, in model order (state.Built.stack_graphdefs); one graph definition
    alone is the "blocks" stack."""
    return stack_graphdefs if isinstance(stack_graphdefs, dict) else {"blocks": stack_graphdefs}


def loss_fn(params: dict, batch: dict, graphdef, stack_graphdefs, plan: StepSpec, compute=None) -> jax.Array:
    """Mean next-token cross entropy over the global batch; tokens/targets are [m, d*b, s] (forward only); compute:
    the parameters' compute layout with ZeRO-3 (gathered where used)."""
    gather = compute if plan.train.sharded_weights else None
    params = gathered(params, gather)
    y = _embed(graphdef, params, _embed_params(params), batch["tokens"], plan)
    for name, block_graphdef in _stacks(stack_graphdefs).items():
        y, _ = gpipe_forward(
            layer_function(block_graphdef, plan),
            Tape(),
            params[name],
            y,
            act_names(plan),
            None if gather is None else gather[name],
        )
    head = _head_params(params, plan.shape.tied)
    micro = lambda total, yt: (total + _micro_loss(graphdef, params, head, *yt), None)
    return jax.lax.scan(micro, jnp.float32(0), (y, batch["targets"]))[0] / batch["targets"].size


def loss_backward(graphdef, params: dict, head: dict, y_MxBxSxH: jax.Array, targets: jax.Array, acc_shardings=None):
    """The mean loss, the gradients of the final norm and LM head, and the cotangent of the pipeline's outputs
    [m, b, s, h]: one micro batch at a time (its fp32 logits and their gradient), the head's gradient accumulated
    in one buffer created once the pipeline's outputs exist (with ZeRO-2/3, in acc_shardings: each micro batch's
    gradient reduce-scattered over data and context into it)."""
    scale = jnp.float32(1.0 / targets.size)
    keep = (
        (lambda acc: acc)
        if acc_shardings is None
        else (lambda acc: jax.lax.with_sharding_constraint(acc, acc_shardings))
    )

    def micro(carry, yt):
        total, acc = carry
        loss, vjp = jax.vjp(lambda hd, y: _micro_loss(graphdef, params, hd, y, yt[1]), head, yt[0])
        dhead, dy = vjp(scale)
        return (total + loss, keep(jax.tree.map(jnp.add, acc, dhead))), dy

    acc0 = keep(zeros_after(head, y_MxBxSxH))
    (total, dhead), dy = jax.lax.scan(micro, (jnp.float32(0), acc0), (y_MxBxSxH, targets))
    # the head's gradient is complete before the pipeline backward reads dy: with one micro batch (a loop of one
    # trip, which XLA removes) XLA:GPU otherwise computed it after the backward, holding the fp32 logits gradient
    # [b, s, v/t] through all of it (dump of grids/holdout.toml's three-layer d4 t2 b4 m=1 at 2e81ea2)
    dhead, dy = jax.lax.optimization_barrier((dhead, dy))
    return total * scale, dhead, dy


def loss_and_grads(
    params: dict, batch: dict, graphdef, stack_graphdefs, plan: StepSpec, grad_shardings=None, compute=None
):
    """The loss and every parameter's gradient: embedding and loss by jax.vjp, the pipeline by its own backward
    (jaxcheck.pipeline), whose stacked-weight gradients accumulate in one buffer per weight (in grad_shardings); a
    model of two stacks (dense layers first, p = 1) runs one pipeline after the other, and back in reverse.
    With ZeRO-3 (compute: the parameters' compute layout) the parameters are all-gathered where used, the blocks one
    layer at a time; with ZeRO-2/3 the accumulators are sharded over data and context (grad_shardings)."""
    act, tied, stacks = act_names(plan), plan.shape.tied, _stacks(stack_graphdefs)
    layers = {name: (layer_function(block_graphdef, plan), Tape()) for name, block_graphdef in stacks.items()}
    layout, compute = compute, compute if plan.train.sharded_weights else None
    params = gathered(params, compute)
    if plan.train.schedule == "1f1b":
        return _one_f_one_b(params, batch, graphdef, layers, plan, grad_shardings, layout)
    if plan.shape.mtp:  # the rule table's "MTP under 1F1B (jax)": GPipe's loss has no lookup of the shifted tokens
        raise ConfigError("jaxcheck's GPipe step does not build multi-token prediction: use --schedule 1f1b")
    y, embed_vjp = jax.vjp(lambda e: _embed(graphdef, params, e, batch["tokens"], plan), _embed_params(params))
    gather = {name: None if compute is None else compute[name] for name in stacks}
    res = {}
    for name, (layer, tape) in layers.items():
        y, res[name] = gpipe_forward(layer, tape, params[name], y, act, gather[name])
    head = _head_params(params, tied)
    sharded = plan.train.sharded_grads and grad_shardings is not None
    head_sharding = {name: grad_shardings[name] for name in head} if sharded else None
    loss, dhead, dx = loss_backward(graphdef, params, head, y, batch["targets"], head_sharding)
    dstacks = {}
    for name, (layer, tape) in reversed(layers.items()):
        stack_sharding = None if grad_shardings is None else grad_shardings[name]
        dx, dstacks[name] = gpipe_backward(layer, tape, params[name], res[name], dx, act, stack_sharding, gather[name])
    (dembed,) = embed_vjp(dx)
    return loss, _all_grads(params, dembed, dhead, dstacks)


def _all_grads(params: dict, dembed: dict, dhead: dict, dstacks: dict, dtrunk: dict | None = None) -> dict:
    """Every parameter's gradient (tied: the embedding's is the lookup's plus the head's), behind one barrier: every
    gradient exists before any AdamW update starts, as in a trainer's gradient buffer (left free, XLA ran the head's
    update before the pipeline backward with ZeRO-0 and after it with ZeRO-1). dembed: the lookup's parameters'
    (with MTP, the shifted tokens' lookups' too); dtrunk: the MTP modules' but their final norms."""
    grads = _merged({**dhead, **dembed, **dstacks}, dtrunk or {})
    if "embed" in dhead:  # tied
        grads["embed"] = dembed["embed"] + dhead["embed"]
    grads = jax.lax.optimization_barrier(grads)
    return {name: grads[name] for name in params}


def _one_f_one_b(params: dict, batch: dict, graphdef, layers: dict, plan: StepSpec, grad_shardings, layout):
    """loss_and_grads by the 1F1B clock (jaxcheck.model.onef1b): each tick embeds the first stage's micro batch,
    runs every stage's forward, the last stage's loss and every stage's backward; the gradients of embedding, head
    and blocks accumulate in one buffer each (in grad_shardings with ZeRO-2/3). layout: the parameters' compute
    layout (given with ZeRO-2/3; ZeRO-3 gathers the blocks into it)."""
    tied = plan.shape.tied
    head = _head_params(params, tied)
    sharded = plan.train.sharded_grads and grad_shardings is not None
    zero3 = plan.train.sharded_weights and layout is not None
    stacks = {
        name: Stack(
            layer,
            tape,
            params[name],
            layout[name] if zero3 else None,
            None if grad_shardings is None else grad_shardings[name],
            layout[name] if sharded and layout is not None else None,
        )
        for name, (layer, tape) in layers.items()
    }
    mtp, trunk = plan.shape.mtp > 0, _trunk_params(params)
    ends = Ends(
        embed=lambda e, tokens: _embed(graphdef, params, e, tokens, plan, micro=False),
        embed_params=_embed_params(params),
        loss=(lambda hd, states, targets: _heads_loss(graphdef, params, hd, states, targets))
        if mtp
        else (lambda hd, y, targets: _micro_loss(graphdef, params, hd, y, targets)),
        head_params=head,
        embed_sharding=_like(grad_shardings, _embed_params(params)) if sharded else None,
        head_sharding=_like(grad_shardings, head) if sharded else None,
        shifted=(lambda e, targets: _shifted(graphdef, params, e, targets)) if mtp else None,
        trunk=(lambda tr, y, shifted: _states(graphdef, params, tr, y, shifted)) if mtp else None,
        trunk_params=trunk,
        trunk_sharding=_like(grad_shardings, trunk) if sharded else None,
    )
    loss, dembed, dhead, dstacks, dtrunk = one_f_one_b(stacks, ends, batch["tokens"], batch["targets"], act_names(plan))
    return loss, _all_grads(params, dembed, dhead, dstacks, dtrunk)


def make_optimizer(plan: StepSpec) -> optax.GradientTransformation:
    """AdamW (fp32 moments mu, nu and a step count), constant learning rate."""
    return optax.adamw(plan.opts.learning_rate, b1=0.9, b2=0.95, weight_decay=plan.opts.weight_decay)


def make_train_step(
    graphdef, stack_graphdefs, plan: StepSpec, grad_shardings=None, with_grads: bool = False, compute=None
) -> Callable:
    """(params, opt_state, batch) -> (params, opt_state, loss[, grads]); with_grads returns the gradients for tests.

    grad_shardings (state.layouts' "grads") pins the gradients before AdamW: to the parameter layout, replicated over
    data and context, up to ZeRO-1 (without it XLA may pull the ZeRO-1 optimizer layout back into the backward pass);
    sharded over them with ZeRO-2/3. compute: the parameters' compute layout, given with ZeRO-2/3 (ZeRO-3 gathers the
    sharded parameters into it where used; ZeRO-2 gathers the sharded updates into it, jaxcheck.zero).
    """
    opt = make_optimizer(plan)

    def train_step(params, opt_state, batch):
        loss, grads = loss_and_grads(params, batch, graphdef, stack_graphdefs, plan, grad_shardings, compute)
        if grad_shardings is not None:
            grads = jax.lax.with_sharding_constraint(grads, grad_shardings)
        updates, opt_state = opt.update(grads, opt_state, params)
        zero2 = (plan.train.sharded_grads and not plan.train.sharded_weights) and compute is not None
        params = apply_updates(params, updates, grad_shardings if zero2 else None, compute if zero2 else None)
        return (params, opt_state, loss, grads) if with_grads else (params, opt_state, loss)

    return train_step
