"""CausalLM, the decoder-only language model of every family jaxcheck builds, in flax nnx: vocab-parallel embedding,
RMSNorm (or LayerNorm), RoPE (or learned positions), GQA attention, multi-head latent attention (jaxcheck.model.mla) or
Gated DeltaNet (jaxcheck.model.gdn), SwiGLU (or GeLU) MLP or mixture of experts (jaxcheck.model.moe), untied (or tied)
LM head; params in param_dtype, cast to compute_dtype where used, each tagged with its logical axes
(jaxcheck.model.rules)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx
from jax.ad_checkpoint import checkpoint_name

from ..spec import StepSpec
from .attention import allgather_attention
from .gdn import GatedDeltaNet
from .mla import LatentAttention
from .mlp import dense_mlp, param as _param
from .moe import MoE
from .mtp import MTP_LOSS_SCALE, MTPModule, shifted_mask
from .norm import RMSNorm, make_norm
from .weightops import cast_einsum, rope, vocab_parallel_lookup
from .rules import act_names, constrain, partition_spec

# Gemma 2's caps (Gemma2Config's attn_logit_softcapping and final_logit_softcapping): values change no buffer
ATTN_SOFTCAP, LOGIT_SOFTCAP = 50.0, 30.0
STACK_AXES = ("stage", "layer")  # logical names of the leading [p, L/p] axes of every block parameter
STACKS = ("linear_blocks", "dense_blocks", "blocks")  # the stacked layers in model order (CausalLM attributes):
# linear_blocks, a hybrid's Gated DeltaNet layers (each stage runs them before its attention layers: the rule table's
# jax scope); dense_blocks only when an MoE model's stages each hold dense layers first (jaxcheck.stages compiles a
# model whose stages differ one stage kind at a time); blocks: every layer, or the MoE ones, or the attention ones


def stack_layers(shape) -> dict[str, tuple[int, bool, bool]]:
    """The model's stacks in model order: name -> (layers, whether they are MoE layers, whether Gated DeltaNet)."""
    if shape.gdn:  # a hybrid's MLPs are all dense or all MoE (the rule table)
        return {"linear_blocks": (shape.L_g, shape.moe, True), "blocks": (shape.L - shape.L_g, shape.moe, False)}
    if not shape.moe:
        return {"blocks": (shape.L, False, False)}
    if not shape.dense_layers:
        return {"blocks": (shape.L, True, False)}
    return {"dense_blocks": (shape.L - shape.L_e, False, False), "blocks": (shape.L_e, True, False)}


class Attention(nnx.Module):
    """GQA self-attention: column-parallel Wq [h, a, dh], Wk, Wv [h, k, dh]; row-parallel Wo [a, dh, h]. With the
    shape's qkv_bias, biases bq [a, dh], bk, bv [k, dh] split over t with their heads (Qwen2's attention); with
    qk_norm "head", RMSNorm of each query and key head over dh before RoPE, scales [dh] not split (Qwen3's); with
    "full", RMSNorm over the whole projection a*dh and k*dh, scales split over t with their heads (OLMoE's); with
    "weightless", per head with no scale (Llama 4's). With attn_gate, the output scaled by sigmoid(x Wg (+ bg)), Wg
    [h, a, dh] column-parallel and, with qkv_bias, bg [a, dh], before Wo (Qwen3-Next's and Qwen3.5's gated attention). With o_bias, a bias bo [h] on the output, replicated over t (a
    row-parallel bias, added after the sum over the heads). With sinks, a learned sink logit per head [a] in every
    query's softmax (gpt-oss's; jaxcheck.model.flash)."""

    def __init__(self, plan: StepSpec, rngs: nnx.Rngs):
        h, a, k, dh, dt = plan.shape.h, plan.shape.a, plan.shape.k, plan.shape.dh, plan.opts.param_dtype
        self.plan = plan
        self.wq = _param(rngs, (h, a, dh), ("embed", "heads", "head_dim"), h**-0.5, dt)
        self.wk = _param(rngs, (h, k, dh), ("embed", "kv_heads", "head_dim"), h**-0.5, dt)
        self.wv = _param(rngs, (h, k, dh), ("embed", "kv_heads", "head_dim"), h**-0.5, dt)
        self.wo = _param(rngs, (a, dh, h), ("heads", "head_dim", "embed"), (a * dh) ** -0.5, dt)
        if plan.shape.qkv_bias:
            self.bq = _param(rngs, (a, dh), ("heads", "head_dim"), 0.1, dt)
            self.bk = _param(rngs, (k, dh), ("kv_heads", "head_dim"), 0.1, dt)
            self.bv = _param(rngs, (k, dh), ("kv_heads", "head_dim"), 0.1, dt)
        if plan.shape.o_bias:
            self.bo = _param(rngs, (h,), ("norm",), 0.1, dt)
        if plan.shape.attn_gate:  # with qkv_bias a bias bg [a, dh] too (Qwen3-Next's q_proj, gate included)
            self.wg = _param(rngs, (h, a, dh), ("embed", "heads", "head_dim"), h**-0.5, dt)
            if plan.shape.qkv_bias:
                self.bg = _param(rngs, (a, dh), ("heads", "head_dim"), 0.1, dt)
        if plan.shape.sinks:  # gpt-oss's sink logit per head [a], split over t with the heads
            self.sinks = _param(rngs, (a,), ("heads",), 1.0, dt)
        if plan.shape.qk_norm in ("head", "weightless"):
            weightless = plan.shape.qk_norm == "weightless"
            self.q_norm, self.k_norm = (
                RMSNorm(plan, dh, weightless=weightless),
                RMSNorm(plan, dh, weightless=weightless),
            )
        if plan.shape.qk_norm == "full":
            self.q_norm, self.k_norm = RMSNorm(plan, a * dh, "heads"), RMSNorm(plan, k * dh, "kv_heads")

    def _project(self, x_BxSxH: jax.Array, name: str) -> jax.Array:
        """x W (+ b) of the q, k or v projection [b, s, heads, dh] in compute dtype (+ its head norm for q and k)."""
        y = cast_einsum("bsh,hnd->bsnd", None, x_BxSxH, getattr(self, "w" + name)[...])
        if self.plan.shape.qkv_bias:
            y = y + getattr(self, "b" + name)[...].astype(y.dtype)
        if self.plan.shape.qk_norm in ("head", "weightless") and name != "v":
            y = getattr(self, name + "_norm")(y)
        if self.plan.shape.qk_norm == "full" and name != "v":  # [b, s, heads * dh], heads over tensor
            b, s, n, dh = y.shape
            y = getattr(self, name + "_norm")(y.reshape(b, s, n * dh)).reshape(b, s, n, dh)
        return y

    def __call__(self, x_BxSxH: jax.Array) -> jax.Array:
        theta = self.plan.opts.rope_theta
        q = rope(self._project(x_BxSxH, "q"), theta)
        k = rope(self._project(x_BxSxH, "k"), theta)
        v = self._project(x_BxSxH, "v")
        q = checkpoint_name(constrain(q, ("batch", "seq", "heads", "head_dim")), "q")
        k = checkpoint_name(constrain(k, ("batch", "seq", "kv_heads", "head_dim")), "k")
        v = checkpoint_name(constrain(v, ("batch", "seq", "kv_heads", "head_dim")), "v")
        sinks = self.sinks[...] if self.plan.shape.sinks else None
        cap = ATTN_SOFTCAP if self.plan.shape.attn_softcap else None
        out = checkpoint_name(allgather_attention(q, k, v, self.plan.train.flash_attn, sinks, cap), "attn_out")
        if self.plan.shape.attn_gate:  # compute dtype, as Qwen3NextAttention's attn_output * sigmoid(gate)
            gate = cast_einsum("bsh,hnd->bsnd", None, x_BxSxH, self.wg[...])
            gate = constrain(
                gate + self.bg[...].astype(gate.dtype) if self.plan.shape.qkv_bias else gate,
                ("batch", "seq", "heads", "head_dim"),
            )
            out = checkpoint_name(out * jax.nn.sigmoid(checkpoint_name(gate, "attn_gate")), "attn_gated")
        y = cast_einsum("bsnd,ndh->bsh", None, out, self.wo[...])
        return y + self.bo[...].astype(y.dtype) if self.plan.shape.o_bias else y


class Block(nnx.Module):
    """Pre-norm decoder block: x + Attn(RMSNorm(x)), then + MLP(RMSNorm(.)); the SP/CP layout is set between parts.
    moe: the MLP is a mixture of experts, which reads the normed stream in the between-blocks layout itself. gdn: the
    mixer is a Gated DeltaNet (jaxcheck.model.gdn), in the attention's place."""

    def __init__(self, plan: StepSpec, rngs: nnx.Rngs, moe: bool = False, gdn: bool = False):
        self.plan = plan
        self.attn_norm = make_norm(plan)
        self.attn = (
            GatedDeltaNet(plan, rngs)
            if gdn
            else LatentAttention(plan, rngs)
            if plan.shape.mla
            else Attention(plan, rngs)
        )
        self.mlp_norm = make_norm(plan)
        self.mlp = MoE(plan, rngs) if moe else dense_mlp(plan, rngs)
        if plan.shape.sandwich:  # Gemma's post-attention and post-feedforward norms, on each part's output
            self.post_attn_norm, self.post_mlp_norm = make_norm(plan), make_norm(plan)

    def _post(self, y_BxSxH: jax.Array, name: str) -> jax.Array:
        """A part's output in the between-blocks layout; with sandwich norms, named (selective keeps it) and normed."""
        if not self.plan.shape.sandwich:
            return y_BxSxH
        return getattr(self, name + "_norm")(checkpoint_name(y_BxSxH, name.removeprefix("post_") + "_proj"))

    def __call__(self, x_BxSxH: jax.Array) -> jax.Array:
        outer, inner = act_names(self.plan), ("batch", "seq", "embed")
        x = checkpoint_name(constrain(x_BxSxH, outer), "attn_norm_in")
        y = checkpoint_name(constrain(self.attn_norm(x), inner), "attn_in")  # SP all-gather over tensor
        x = checkpoint_name(x + self._post(constrain(self.attn(y), outer), "post_attn"), "mlp_norm_in")  # SP r-s
        if isinstance(self.mlp, MoE):
            return x + constrain(self.mlp(checkpoint_name(constrain(self.mlp_norm(x), outer), "moe_in")), outer)
        y = checkpoint_name(constrain(self.mlp_norm(x), inner), "mlp_in")
        return x + self._post(constrain(self.mlp(y), outer), "post_mlp")


def _block_maker(plan: StepSpec, moe: bool, gdn: bool):
    """key -> Block: what the stacks vmap (over p, then L/p) to build stacked block parameters."""
    return lambda key: Block(plan, nnx.Rngs(key), moe, gdn)


class CausalLM(nnx.Module):
    """Embedding [v, h] (vocab-parallel), blocks stacked [p, L/p], final RMSNorm, LM head [h, v] (vocab-parallel).
    The L decoder blocks are one Block whose parameters are stacked [p, L/p, ...] (logical prefix (stage, layer)):
    stage i holds layers i*L/p ... (i+1)*L/p - 1. An MoE model whose stages each run dense layers first has two
    stacks, dense_blocks [p, (L - L_e)/p] then blocks [p, L_e/p]; a Gated DeltaNet hybrid linear_blocks [p, L_g/p]
    then blocks [p, (L - L_g)/p] (stack_layers)."""

    def __init__(self, plan: StepSpec, rngs: nnx.Rngs):
        s, p = plan.shape, plan.train.p
        self.plan = plan
        self.embed = _param(rngs, (s.v, s.h), ("vocab", "embed"), 1.0, plan.opts.param_dtype)
        for name, (n, moe, gdn) in stack_layers(s).items():
            keys = jax.random.split(rngs.params(), (p, n // p))
            setattr(self, name, nnx.vmap(nnx.vmap(_block_maker(plan, moe, gdn)))(keys))
        self.norm = make_norm(plan)
        if s.positions:  # GPT's learned absolute positions [s_p, h], replicated (Megatron-LM's position_embeddings)
            self.positions = _param(rngs, (s.positions, s.h), ("positions", "embed"), 0.02, plan.opts.param_dtype)
        self.head = None if s.tied else _param(rngs, (s.h, s.v), ("embed", "vocab"), s.h**-0.5, plan.opts.param_dtype)
        for k in range(s.mtp):  # multi-token-prediction modules, unstacked (the last stage's: jaxcheck.model.mtp)
            setattr(self, mtp_name(k), MTPModule(plan, rngs, Block(plan, rngs, s.mtp_moe)))

    def embed_tokens(self, tokens: jax.Array) -> jax.Array:
        """Vocab-parallel lookup: [..., b, s] int32 (micro batches first) -> [..., b, s, h] in compute dtype, in the
        between-blocks layout."""
        lead = ("micro",) * (tokens.ndim - 2)
        ids, out = partition_spec(lead + ("batch", "seq")), partition_spec(lead + act_names(self.plan))
        x = vocab_parallel_lookup(self.embed[...], tokens, self.plan.opts.compute_dtype, ids, out, self.plan.train.sp)
        if self.plan.shape.sandwich:  # Gemma scales the lookup by sqrt(h), a scalar in compute dtype
            x = x * jnp.asarray(self.plan.shape.h**0.5, x.dtype)
        if self.plan.shape.positions:  # + the learned positions of the sequence's s tokens
            x = x + self.positions[...][: tokens.shape[-1]].astype(x.dtype)
        return x

    def logits(self, x_BxSxH: jax.Array, norm: nnx.Module | None = None) -> jax.Array:
        """Final norm (or an MTP module's) and LM head; fp32 logits [b, s, v] split over tensor along v."""
        x = constrain((self.norm if norm is None else norm)(x_BxSxH), ("batch", "seq", "embed"))
        w_HxV = self.embed[...].T if self.head is None else self.head[...]
        logits = cast_einsum("bsh,hv->bsv", jnp.float32, x, w_HxV, True)
        if self.plan.shape.logit_softcap:  # Gemma 2: cap tanh(logits / cap), in fp32
            logits = LOGIT_SOFTCAP * jnp.tanh(logits / LOGIT_SOFTCAP)
        return constrain(logits, ("batch", "seq", "vocab"))

    def shifted_embeddings(self, t_BxS: jax.Array) -> jax.Array:
        """The multi-token-prediction modules' inputs [n_mtp, b, s, h]: module k's, the targets shifted k places (the
        tokens k + 1 places on) looked up in the embedding, in the between-blocks layout."""
        return jnp.stack([self.embed_tokens(jnp.roll(t_BxS, -k, axis=-1)) for k in range(self.plan.shape.mtp)])

    def loss(self, y_BxSxH: jax.Array, t_BxS: jax.Array) -> jax.Array:
        """One micro batch's summed next-token cross entropy from the last layer's output, plus the multi-token-
        prediction modules' (heads_loss of mtp_states on their inputs looked up here; the 1F1B tick runs the three
        parts itself)."""
        if not self.plan.shape.mtp:
            return cross_entropy(self.logits(y_BxSxH), t_BxS)
        return self.heads_loss(self.mtp_states(y_BxSxH, self.shifted_embeddings(t_BxS)), t_BxS)

    def mtp_states(self, y_BxSxH: jax.Array, shifted: jax.Array) -> tuple[jax.Array, ...]:
        """What the heads read: the last layer's output and each multi-token-prediction module's output before its
        final norm (module k reads the one before it and shifted[k]; jaxcheck.model.mtp)."""
        states = [y_BxSxH]
        for k in range(self.plan.shape.mtp):
            states.append(getattr(self, mtp_name(k))(states[-1], shifted[k]))
        return tuple(states)

    def heads_loss(self, states: tuple[jax.Array, ...], t_BxS: jax.Array) -> jax.Array:
        """The summed cross entropy of the model's head on states[0], plus MTP_LOSS_SCALE / n_mtp times module k's
        (its final norm, the shared head) on states[k + 1] against the targets shifted k + 1 places, the wrapped
        positions masked out."""
        total, n = cross_entropy(self.logits(states[0]), t_BxS), self.plan.shape.mtp
        for k in range(n):
            logits = self.logits(states[k + 1], getattr(self, mtp_name(k)).final_norm)
            ce = cross_entropy(logits, jnp.roll(t_BxS, -(k + 1), axis=-1), shifted_mask(t_BxS, k + 1))
            total = total + ce * (MTP_LOSS_SCALE / n)
        return total


def mtp_name(k: int) -> str:
    """The attribute (and parameter subtree) of multi-token-prediction module k (0-based)."""
    return f"mtp{k}"


def cross_entropy(logits_BxSxV: jax.Array, t_BxS: jax.Array, mask_BxS: jax.Array | None = None) -> jax.Array:
    """Summed cross entropy of fp32 logits against int32 targets (where mask is 1)."""
    target = jnp.take_along_axis(logits_BxSxV, t_BxS[..., None], axis=-1)[..., 0]
    ce = jax.nn.logsumexp(logits_BxSxV, axis=-1) - target
    return jnp.sum(ce if mask_BxS is None else jnp.where(mask_BxS, ce, 0.0))


def param_axes(variable: nnx.Variable) -> tuple[str | None, ...]:
    """Logical axes of a parameter, with (stage, layer) prepended for stacked block parameters."""
    axes = tuple(variable.get_metadata()["axes"])
    extra = variable.get_value().ndim - len(axes)
    return STACK_AXES[:extra] + axes
