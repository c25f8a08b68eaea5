"""RMSNorm: the blocks' and the final norm over h, and MLA's latent norms (jaxcheck.model.mla); LayerNorm for
GPT-style layers (the shape's norm "layer"), and `make_norm`, the block and final norm of a shape."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from ..spec import StepSpec
from .weightops import scale


class RMSNorm(nnx.Module):
    """RMSNorm with a scale [width] (h unless given: MLA's latents q_r, kv_r), not split by t unless its logical
    axis says (OLMoE's q/k norms over a*dh and k*dh: "heads", "kv_heads"), in param dtype; computed in fp32,
    returned in the input's dtype. weightless: no scale at all (Llama 4's q/k norms, L2Norm: x * rsqrt(mean x^2 +
    eps))."""

    def __init__(self, plan: StepSpec, width: int | None = None, axis: str = "norm", weightless: bool = False):
        self.eps = 1e-5
        self.scale = (
            None if weightless else nnx.Param(jnp.ones((width or plan.shape.h,), plan.opts.param_dtype), axes=(axis,))
        )

    def __call__(self, x: jax.Array) -> jax.Array:
        x32 = x.astype(jnp.float32)
        y = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + self.eps)
        return (y if self.scale is None else scale(y, self.scale[...])).astype(x.dtype)


class LayerNorm(nnx.Module):
    """LayerNorm over h with a scale and a bias [h] (GPT-2's, Megatron-LM's with --normalization LayerNorm), not split
    by t, in param dtype; computed in fp32 ((x - mean) * rsqrt(var + eps)), returned in the input's dtype."""

    def __init__(self, plan: StepSpec):
        self.eps = 1e-5
        self.scale = nnx.Param(jnp.ones((plan.shape.h,), plan.opts.param_dtype), axes=("norm",))
        self.bias = nnx.Param(jnp.zeros((plan.shape.h,), plan.opts.param_dtype), axes=("norm",))

    def __call__(self, x: jax.Array) -> jax.Array:
        x32 = x.astype(jnp.float32)
        centred = x32 - jnp.mean(x32, axis=-1, keepdims=True)
        y = centred * jax.lax.rsqrt(jnp.mean(centred * centred, axis=-1, keepdims=True) + self.eps)
        return (scale(y, self.scale[...]) + self.bias[...].astype(jnp.float32)).astype(x.dtype)


def make_norm(plan: StepSpec) -> nnx.Module:
    """A block's (and the final) norm over h: LayerNorm where the shape's norm is "layer", else RMSNorm."""
    return LayerNorm(plan) if plan.shape.norm == "layer" else RMSNorm(plan)
