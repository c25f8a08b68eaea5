"""The train step: causal-LM loss through the pipeline, gradients, optax AdamW, remat policies, ZeRO-1 shardings."""
from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import optax
from flax import nnx
from jax.ad_checkpoint import checkpoint_policies as cp

from symbolic.config.errors import ConfigError
from symbolic.config.step import SELECTIVE_SAVED

from .model.llama import Llama, act_names
from .model.pipeline import gpipe
from .model.rules import constrain
from .spec import StepSpec


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


def loss_fn(params: dict, batch: dict, graphdef, block_graphdef, plan: StepSpec) -> jax.Array:
    """Mean next-token cross entropy over the global batch; tokens/targets are [m, d*b, s]."""
    model: Llama = nnx.merge(graphdef, params)
    act = act_names(plan)
    x = constrain(model.embed_tokens(batch["tokens"]), ("micro",) + act)
    y = gpipe(layer_function(block_graphdef, plan), params["blocks"], x, act)

    @jax.checkpoint  # one micro batch of fp32 logits at a time, recomputed in backward
    def micro_loss(total, y_and_t):
        y_BxSxH, t_BxS = y_and_t
        logits = model.logits(y_BxSxH)
        lse = jax.nn.logsumexp(logits, axis=-1)
        target = jnp.take_along_axis(logits, t_BxS[..., None], axis=-1)[..., 0]
        return total + jnp.sum(lse - target), None

    total, _ = jax.lax.scan(micro_loss, jnp.float32(0), (y, batch["targets"]))
    return total / batch["targets"].size


def make_optimizer(plan: StepSpec) -> optax.GradientTransformation:
    """AdamW (fp32 moments mu, nu and a step count), constant learning rate."""
    return optax.adamw(plan.opts.learning_rate, b1=0.9, b2=0.95, weight_decay=plan.opts.weight_decay)


# Buffers the compiled step holds per device (what XLA's memory analysis counts):
#   arguments: params (param_dtype; blocks split over pipe and tensor, embedding and head split over tensor only and
#              replicated over pipe, MaxText-style, unlike Megatron's first/last-stage placement); AdamW count + mu + nu
#              (param_dtype; also over data x context with ZeRO-1); batch tokens and targets [m, d*b, s] int32 split
#              over data and context; donated params / optimizer state come back as outputs and are counted in alias;
#   temps: gradients (param_dtype, pinned to the params' layout: replicated over data and context); the embeddings of
#          all m micro batches [m, b, s, h] before the pipeline; the stage buffer [p, b, s, h] (one slice per stage);
#          the last stage's outputs [m + p - 1, b, s, h] (replicated over pipe); residuals saved by autodiff of the
#          pipeline scan, per layer per iteration, as the remat policy allows (none: all; selective: SELECTIVE_SAVED;
#          full: only each layer's input); K/V all-gathered over context and the attention working set of the
#          layer being (re)computed (flash: fp32 [s/c, FLASH_BLOCK] score blocks; unfused: fp32 s x s scores); one
#          micro batch of fp32 logits [b, s, v/t] inside the checkpointed loss scan.
def make_train_step(graphdef, block_graphdef, plan: StepSpec, grad_shardings=None, with_grads: bool = False) -> Callable:
    """(params, opt_state, batch) -> (params, opt_state, loss[, grads]); with_grads returns the gradients for tests.

    grad_shardings (the params' shardings) pins the full gradients to the parameter layout, replicated over data and
    context, before AdamW; without it XLA may pull the ZeRO-1 optimizer layout back into the backward pass.
    """
    opt = make_optimizer(plan)

    def train_step(params, opt_state, batch):
        loss, grads = jax.value_and_grad(loss_fn)(params, batch, graphdef, block_graphdef, plan)
        if grad_shardings is not None:
            grads = jax.lax.with_sharding_constraint(grads, grad_shardings)
        updates, opt_state = opt.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        return (params, opt_state, loss, grads) if with_grads else (params, opt_state, loss)

    return train_step
