"""Multi-head latent attention (DeepSeek-V2/V3, Kimi K2) in Megatron-Core's MLASelfAttention layout: replicated
down-projections to a query latent [q_r] and a key/value latent [kv_r] with one shared RoPE key [d_r], RMSNorms on the
latents, column-parallel up-projections to a heads, then jaxcheck.model.attention's context-parallel attention with
query/key heads dh + d_r wide and value heads d_v wide, and a row-parallel output projection."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx
from jax.ad_checkpoint import checkpoint_name

from ..spec import StepSpec
from .attention import allgather_attention
from .mlp import param
from .norm import RMSNorm
from .rules import constrain
from .weightops import cast_einsum, rope

HEADS = ("batch", "seq", "heads", "head_dim")  # [b, s, a, .]: heads over tensor, s over context


class LatentAttention(nnx.Module):
    """Query: wq_a [h, q_r] (replicated), q_norm [q_r], wq_b [q_r, a, dh + d_r] (column-parallel); or, with q_r = 0,
    wq [h, a, dh + d_r]. Key/value: wkv_a [h, kv_r + d_r] (replicated: the latent and the shared RoPE key), kv_norm
    [kv_r], wkv_b [kv_r, a, dh + d_v] (column-parallel). Output: wo [a, d_v, h] (row-parallel). No biases."""

    def __init__(self, plan: StepSpec, rngs: nnx.Rngs):
        s, dt = plan.shape, plan.opts.param_dtype
        h, a, dh, d_r, d_v, q_r, kv_r = s.h, s.a, s.dh, s.rope_dim, s.v_dim, s.q_lora, s.kv_lora
        self.plan = plan
        if q_r:
            self.wq_a = param(rngs, (h, q_r), ("embed", "q_lora"), h**-0.5, dt)
            self.q_norm = RMSNorm(plan, q_r)
            self.wq_b = param(rngs, (q_r, a, dh + d_r), ("q_lora", "heads", "head_dim"), q_r**-0.5, dt)
        else:
            self.wq = param(rngs, (h, a, dh + d_r), ("embed", "heads", "head_dim"), h**-0.5, dt)
        self.wkv_a = param(rngs, (h, kv_r + d_r), ("embed", "kv_lora"), h**-0.5, dt)
        self.kv_norm = RMSNorm(plan, kv_r)
        self.wkv_b = param(rngs, (kv_r, a, dh + d_v), ("kv_lora", "heads", "head_dim"), kv_r**-0.5, dt)
        self.wo = param(rngs, (a, d_v, h), ("heads", "head_dim", "embed"), (a * d_v) ** -0.5, dt)

    def _query(self, x_BxSxH: jax.Array) -> jax.Array:
        """[b, s, a, dh + d_r] before RoPE: through the normed query latent when q_r > 0."""
        if not self.plan.shape.q_lora:
            return cast_einsum("bsh,hnd->bsnd", None, x_BxSxH, self.wq[...])
        c_BxSxR = constrain(cast_einsum("bsh,hr->bsr", None, x_BxSxH, self.wq_a[...]), ("batch", "seq", "q_lora"))
        c_BxSxR = checkpoint_name(c_BxSxR, "q_latent")  # before its norm: see symbolic.recipes.jax.step.SELECTIVE_SAVED
        return cast_einsum("bsr,rnd->bsnd", None, self.q_norm(c_BxSxR), self.wq_b[...])

    def __call__(self, x_BxSxH: jax.Array) -> jax.Array:
        """x: the normed stream [b, s, h] (s over context); returns [b, s, h] before the SP reduce-scatter."""
        shape, theta = self.plan.shape, self.plan.opts.rope_theta
        dh, kv_r = shape.dh, shape.kv_lora
        q = self._query(x_BxSxH)
        q = jnp.concatenate([q[..., :dh], rope(q[..., dh:], theta)], axis=-1)
        kv_BxSxR = constrain(cast_einsum("bsh,hr->bsr", None, x_BxSxH, self.wkv_a[...]), ("batch", "seq", "kv_lora"))
        c_BxSxR = checkpoint_name(kv_BxSxR[..., :kv_r], "kv_latent")  # before its norm, without the RoPE key
        k_rope_BxSx1xD = rope(constrain(kv_BxSxR[..., None, kv_r:], ("batch", "seq", None, "head_dim")), theta)
        kv_BxSxAxD = cast_einsum("bsr,rnd->bsnd", None, self.kv_norm(c_BxSxR), self.wkv_b[...])
        k_nope, v = kv_BxSxAxD[..., :dh], kv_BxSxAxD[..., dh:]  # the RoPE key is shared by all heads, but stored
        # per head as Megatron-Core does (expand + cat): key [b, s, a, dh + d_r]
        k = jnp.concatenate([k_nope, jnp.broadcast_to(k_rope_BxSx1xD, k_nope.shape[:3] + (shape.rope_dim,))], axis=-1)
        q = checkpoint_name(constrain(q, HEADS), "q")
        k = checkpoint_name(constrain(k, HEADS), "k")
        v = checkpoint_name(constrain(v, HEADS), "v")
        # softmax scale 1/sqrt(dh + d_r), the query/key width (attention reads it from q); DeepSeek's yarn mscale^2
        # factor is a constant that changes no tensor's size and is left out
        out = checkpoint_name(allgather_attention(q, k, v, self.plan.train.flash_attn), "attn_out")
        return cast_einsum("bsnd,ndh->bsh", None, out, self.wo[...])
