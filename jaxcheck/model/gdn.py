"""Gated DeltaNet, the linear-attention mixer of Qwen3-Next's and Qwen3.5's linear_attention layers, in flax nnx:
projections of q, k [n_gk, d_gk], v and the output gate z [n_gv, d_gv], beta and alpha [n_gv] (Megatron-Core's in_proj,
kept as one weight per output so that each splits over t with its heads), a causal depthwise convolution of width K_c
with SiLU on q, k and v, l2-normed q and k, the decay g = -exp(A_log) softplus(alpha + dt_bias), the gated delta rule
computed chunk by chunk, a gated RMSNorm over each value head (RMSNorm(o) * w * silu(z)) and the row-parallel out_proj.
The heads split over t; the rule runs on the whole sequence of each rank (no context parallelism: the rule table).

The convolution and the rule are custom VJPs that keep their inputs and recompute the rest in the backward, as the
kernels Megatron-Core calls do (causal-conv1d's causal_conv1d_fn; fla's chunk_gated_delta_rule, which recomputes the
chunk states in its backward): what they keep is what symbolic.recipes.jax.tensors lists."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from flax import nnx
from jax.ad_checkpoint import checkpoint_name

from symbolic.config.hybrid import GDN_CHUNK
from .mlp import param
from .rules import constrain
from .weightops import cast_einsum

CHUNK = GDN_CHUNK  # tokens per chunk of the rule (fla's chunk length, 64; the whole sequence when shorter)
EPS = 1e-6  # the l2norm's and the gated RMSNorm's epsilon (fla's l2norm, Qwen3NextRMSNormGated)
K_AXES = ("batch", "seq", "lin_k_heads", "head_dim")  # a [b, s, n_gk, d_gk] tensor: heads over t
V_AXES = ("batch", "seq", "lin_v_heads", "head_dim")  # a [b, s, n_gv, d_gv] tensor
H_AXES = ("batch", "seq", "lin_v_heads")  # a [b, s, n_gv] tensor (beta, the decay)


def _conv(x_BxSxNxD: jax.Array, w_KxNxD: jax.Array) -> jax.Array:
    """SiLU of the causal depthwise convolution of x along s (each channel its own K taps, no bias), in x's dtype."""
    K, s = w_KxNxD.shape[0], x_BxSxNxD.shape[1]
    padded = jnp.pad(x_BxSxNxD.astype(jnp.float32), ((0, 0), (K - 1, 0), (0, 0), (0, 0)))
    w = w_KxNxD.astype(jnp.float32)
    y = sum(padded[:, i : i + s] * w[i] for i in range(K))
    return jax.nn.silu(y).astype(x_BxSxNxD.dtype)


@jax.custom_vjp
def causal_conv(x_BxSxNxD: jax.Array, w_KxNxD: jax.Array) -> jax.Array:
    """_conv with a custom VJP that keeps x and w only and recomputes the convolution and SiLU in the backward
    (causal_conv1d_fn's)."""
    return _conv(x_BxSxNxD, w_KxNxD)


def _conv_bwd(res, g):
    _, vjp = jax.vjp(_conv, *res)
    return vjp(g)


causal_conv.defvjp(lambda x, w: (_conv(x, w), (x, w)), _conv_bwd)


def _chunks(x: jax.Array, C: int) -> jax.Array:
    """[b, s, n, ...] -> [b, n, s/C, C, ...]: the sequence cut into chunks of C tokens, heads before them."""
    b, s, n = x.shape[:3]
    return jnp.moveaxis(x.reshape(b, s // C, C, n, *x.shape[3:]), 3, 1)


def _rule(q_BxSxNxK, k_BxSxNxK, v_BxSxNxV, g_BxSxN, beta_BxSxN, chunk: int = CHUNK) -> jax.Array:
    """The gated delta rule, S_t = exp(g_t) S_(t-1) + beta_t k_t (v_t - exp(g_t) S_(t-1)^T k_t)^T, o_t = S_t^T q_t
    (q scaled by d_gk^-1/2, S [d_gk, d_gv] per head from zero), chunk by chunk in fp32 (fla's chunked form): within a
    chunk the pseudo-values u = (I + M)^-1 (beta v - beta exp(G) k S_0) solve the recurrence's lower-triangular system
    M_ij = beta_i exp(G_i - G_j) k_i.k_j (j < i; G the cumulative g), and a scan over chunks carries S. Output [b, s,
    n, d_gv] in fp32."""
    b, s, n, dk = q_BxSxNxK.shape
    C = min(chunk, s)
    f32 = jnp.float32
    q = _chunks(q_BxSxNxK.astype(f32) * dk**-0.5, C)
    k, v = _chunks(k_BxSxNxK.astype(f32), C), _chunks(v_BxSxNxV.astype(f32), C)
    G = jnp.cumsum(_chunks(g_BxSxN.astype(f32), C), axis=-1)  # [b, n, N, C]
    beta = _chunks(beta_BxSxN.astype(f32), C)
    at_or_before = jnp.arange(C)[:, None] >= jnp.arange(C)[None, :]
    decay = jnp.exp(jnp.where(at_or_before, G[..., :, None] - G[..., None, :], -jnp.inf))  # [b, n, N, C, C]
    below = at_or_before & ~jnp.eye(C, dtype=bool)
    M = jnp.where(below, beta[..., :, None] * jnp.einsum("...id,...jd->...ij", k, k) * decay, 0.0)
    T = jax.lax.linalg.triangular_solve(
        M + jnp.eye(C, dtype=f32),
        jnp.broadcast_to(jnp.eye(C, dtype=f32), M.shape),
        left_side=True,
        lower=True,
        unit_diagonal=True,
    )
    value = T @ (beta[..., None] * v)  # [b, n, N, C, d_gv]
    k_decayed = T @ ((beta * jnp.exp(G))[..., None] * k)  # [b, n, N, C, d_gk]
    qk = jnp.einsum("...id,...jd->...ij", q, k) * decay  # causal, the diagonal included
    q_decayed = q * jnp.exp(G)[..., None]
    k_to_end = k * jnp.exp(G[..., -1:] - G)[..., None]
    last = jnp.exp(G[..., -1])  # [b, n, N]

    def step(S, xs):
        value_c, kd_c, qk_c, qd_c, ke_c, last_c = xs
        u = value_c - kd_c @ S
        o = qd_c @ S + qk_c @ u
        return S * last_c[..., None, None] + jnp.swapaxes(ke_c, -1, -2) @ u, o

    xs = tuple(jnp.moveaxis(x, 2, 0) for x in (value, k_decayed, qk, q_decayed, k_to_end, last))
    _, o = jax.lax.scan(step, jnp.zeros((b, n, dk, v.shape[-1]), f32), xs)  # o [N, b, n, C, d_gv]
    return jnp.moveaxis(o, 0, 1).swapaxes(2, 3).reshape(b, s, n, -1)  # [b, N, C, n, d_gv] -> [b, s, n, d_gv]


@partial(jax.custom_vjp, nondiff_argnums=(5,))
def gated_delta_rule(q, k, v, g, beta, chunk: int = CHUNK) -> jax.Array:
    """_rule in v's dtype, with a custom VJP that keeps its five inputs only and recomputes the chunks (and their
    states) in the backward, as fla's chunk_gated_delta_rule does."""
    return _rule(q, k, v, g, beta, chunk).astype(v.dtype)


def _rule_bwd(chunk, res, do):
    _, vjp = jax.vjp(lambda *x: _rule(*x, chunk).astype(res[2].dtype), *res)
    return vjp(do)


gated_delta_rule.defvjp(
    lambda q, k, v, g, beta, chunk: (gated_delta_rule(q, k, v, g, beta, chunk), (q, k, v, g, beta)), _rule_bwd
)


def recurrent_rule(q, k, v, g, beta) -> jax.Array:
    """The same rule token by token (fla's recurrent reference): what gated_delta_rule is checked against."""
    f32 = jnp.float32
    q, k, v = q.astype(f32) * q.shape[-1] ** -0.5, k.astype(f32), v.astype(f32)

    def step(S, xs):
        q_t, k_t, v_t, g_t, b_t = xs
        S = S * jnp.exp(g_t)[..., None, None]
        u = b_t[..., None] * (v_t - jnp.einsum("bnkv,bnk->bnv", S, k_t))
        S = S + k_t[..., :, None] * u[..., None, :]
        return S, jnp.einsum("bnkv,bnk->bnv", S, q_t)

    b, s, n, dk = q.shape
    xs = tuple(jnp.moveaxis(x, 1, 0) for x in (q, k, v, g.astype(f32), beta.astype(f32)))
    _, o = jax.lax.scan(step, jnp.zeros((b, n, dk, v.shape[-1]), f32), xs)
    return jnp.moveaxis(o, 0, 1)


def _gated_norm(o: jax.Array, z: jax.Array, w: jax.Array) -> jax.Array:
    """RMSNorm(o) * w * silu(z) over each value head's d_gv, in fp32, returned in o's dtype (Qwen3NextRMSNormGated)."""
    o32 = o.astype(jnp.float32)
    normed = o32 * jax.lax.rsqrt(jnp.mean(o32 * o32, axis=-1, keepdims=True) + EPS) * w.astype(jnp.float32)
    return (normed * jax.nn.silu(z.astype(jnp.float32))).astype(o.dtype)


@jax.custom_vjp
def gated_norm(o: jax.Array, z: jax.Array, w: jax.Array) -> jax.Array:
    """_gated_norm with a custom VJP that keeps o, z and w and recomputes the norm and the gate in the backward, as
    Megatron-Core's fused gated norm (its jit_fuser under torch.compile) keeps its two bf16 sources."""
    return _gated_norm(o, z, w)


def _gated_norm_bwd(res, g):
    _, vjp = jax.vjp(_gated_norm, *res)
    return vjp(g)


gated_norm.defvjp(lambda o, z, w: (_gated_norm(o, z, w), (o, z, w)), _gated_norm_bwd)


def _l2norm(x: jax.Array) -> jax.Array:
    """x / sqrt(sum x^2 + eps) over each head's last axis, computed in fp32, returned in x's dtype (fla's l2norm)."""
    x32 = x.astype(jnp.float32)
    return (x32 * jax.lax.rsqrt(jnp.sum(x32 * x32, axis=-1, keepdims=True) + EPS)).astype(x.dtype)


class GatedDeltaNet(nnx.Module):
    """One Gated DeltaNet mixer: column-parallel Wq, Wk [h, n_gk, d_gk], Wv, Wz [h, n_gv, d_gv], Wb, Wa [h, n_gv]; the
    convolutions' taps [K_c, heads, width] for q, k, v; dt_bias and A_log [n_gv]; the gated norm's scale [d_gv]
    (replicated); row-parallel out_proj Wo [n_gv, d_gv, h]. Its parameters are symbolic.components.gdn.gdn_params."""

    def __init__(self, plan, rngs: nnx.Rngs):
        s, dt = plan.shape, plan.opts.param_dtype
        h, nk, nv, dk, dv, K = s.h, s.lin_k_heads, s.lin_v_heads, s.lin_k_dim, s.lin_v_dim, s.conv_width
        self.plan = plan
        self.wq = param(rngs, (h, nk, dk), ("embed", "lin_k_heads", "head_dim"), h**-0.5, dt)
        self.wk = param(rngs, (h, nk, dk), ("embed", "lin_k_heads", "head_dim"), h**-0.5, dt)
        self.wv = param(rngs, (h, nv, dv), ("embed", "lin_v_heads", "head_dim"), h**-0.5, dt)
        self.wz = param(rngs, (h, nv, dv), ("embed", "lin_v_heads", "head_dim"), h**-0.5, dt)
        self.wb = param(rngs, (h, nv), ("embed", "lin_v_heads"), h**-0.5, dt)
        self.wa = param(rngs, (h, nv), ("embed", "lin_v_heads"), h**-0.5, dt)
        self.conv_q = param(rngs, (K, nk, dk), ("conv", "lin_k_heads", "head_dim"), K**-0.5, dt)
        self.conv_k = param(rngs, (K, nk, dk), ("conv", "lin_k_heads", "head_dim"), K**-0.5, dt)
        self.conv_v = param(rngs, (K, nv, dv), ("conv", "lin_v_heads", "head_dim"), K**-0.5, dt)
        self.dt_bias = param(rngs, (nv,), ("lin_v_heads",), 1.0, dt)
        self.A_log = param(rngs, (nv,), ("lin_v_heads",), 0.5, dt)
        self.norm = nnx.Param(jnp.ones((dv,), dt), axes=("norm",))
        self.wo = param(rngs, (nv, dv, h), ("lin_v_heads", "head_dim", "embed"), (nv * dv) ** -0.5, dt)

    def _heads(self, x_BxSxH: jax.Array, name: str, axes) -> jax.Array:
        """x W of the q, k, v or z projection [b, s, heads, width] (or of beta's and alpha's [b, s, n_gv])."""
        spec = "bsh,hnd->bsnd" if getattr(self, "w" + name).ndim == 3 else "bsh,hn->bsn"
        return constrain(cast_einsum(spec, None, x_BxSxH, getattr(self, "w" + name)[...]), axes)

    def __call__(self, x_BxSxH: jax.Array) -> jax.Array:
        s = self.plan.shape
        q = causal_conv(self._heads(x_BxSxH, "q", K_AXES), self.conv_q[...])
        k = causal_conv(self._heads(x_BxSxH, "k", K_AXES), self.conv_k[...])
        v = checkpoint_name(causal_conv(self._heads(x_BxSxH, "v", V_AXES), self.conv_v[...]), "gdn_v")
        q, k = checkpoint_name(_l2norm(q), "gdn_q"), checkpoint_name(_l2norm(k), "gdn_k")
        z = checkpoint_name(self._heads(x_BxSxH, "z", V_AXES), "gdn_z")
        beta = checkpoint_name(jax.nn.sigmoid(self._heads(x_BxSxH, "b", H_AXES).astype(jnp.float32)), "gdn_beta")
        alpha = self._heads(x_BxSxH, "a", H_AXES).astype(jnp.float32) + self.dt_bias[...].astype(jnp.float32)
        g = checkpoint_name(-jnp.exp(self.A_log[...].astype(jnp.float32)) * jax.nn.softplus(alpha), "gdn_g")
        if s.lin_v_heads > s.lin_k_heads:  # each key head serves n_gv / n_gk consecutive value heads
            q, k = (constrain(jnp.repeat(x, s.lin_v_heads // s.lin_k_heads, axis=2), V_AXES) for x in (q, k))
        o = checkpoint_name(constrain(gated_delta_rule(q, k, v, g, beta), V_AXES), "gdn_out")
        gated = checkpoint_name(gated_norm(o, z, self.norm[...]), "gdn_gated")
        return cast_einsum("bsnd,ndh->bsh", None, gated, self.wo[...])
