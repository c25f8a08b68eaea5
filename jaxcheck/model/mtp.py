"""DeepSeek-V3's multi-token prediction after the last layer, as Megatron-Core builds it (megatron-core 0.16.1,
transformer/multi_token_prediction.py, MultiTokenPredictionLayer; the paper profile's symbolic.components.mtp).

Module k (k = 1 .. n_mtp) reads the tokens shifted k places: it normalises their embedding (enorm) and the previous
depth's hidden states (hnorm), projects the concatenation [b, s, 2h] to h (eh_proj, column-parallel; its output
gathered over t, then scattered over the sequence with SP), runs one transformer layer of the decoder's last kind,
its own final norm and the model's LM head, and predicts the token k + 1 places ahead. Its cross entropy, masked on
the k positions the shift wraps around, joins the loss scaled by MTP_LOSS_SCALE / n_mtp (Megatron-Core's
mtp_loss_scaling_factor / mtp_num_layers). The targets are the tokens shifted by one (state.synthetic_batch), so
module k's inputs are the targets shifted k - 1 places, as Megatron-Core rolls input_ids once per depth.

The modules run in the last stage's loss each tick of 1F1B (jaxcheck.model.onef1b; GPipe with MTP is refused):
their parameters are replicated over pipe like the LM head's, their inputs are looked up outside the loss
(CausalLM.shifted_embeddings), and the loss is two functions, the modules but their final norms (CausalLM.mtp_states) and
the heads (CausalLM.heads_loss), whose backwards run in that order behind an optimization barrier. A module's layer
residuals live from that micro batch's loss to its backward only (no remat policy: the loss's vjp runs at once)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from ..spec import StepSpec
from .mlp import param
from .norm import make_norm
from .rules import act_names, constrain
from .weightops import cast_einsum

MTP_LOSS_SCALE = 0.1  # Megatron-Core TransformerConfig.mtp_loss_scaling_factor's default


class MTPModule(nnx.Module):
    """enorm and hnorm [h] (replicated), eh_proj [2h, h] with its output columns over t, one transformer layer
    (`block`: a Block of the decoder's last kind), final norm [h]."""

    def __init__(self, plan: StepSpec, rngs: nnx.Rngs, block: nnx.Module):
        h = plan.shape.h
        self.plan = plan
        self.enorm, self.hnorm = make_norm(plan), make_norm(plan)
        self.eh_proj = param(rngs, (2 * h, h), ("eh_in", "eh_out"), (2 * h) ** -0.5, plan.opts.param_dtype)
        self.block = block
        self.final_norm = make_norm(plan)

    def __call__(self, hidden_BxSxH: jax.Array, embedded_BxSxH: jax.Array) -> jax.Array:
        """The next depth's hidden states [b, s, h] in the between-blocks layout, before the final norm."""
        inner = ("batch", "seq", "embed")
        both = jnp.concatenate(
            [constrain(self.enorm(embedded_BxSxH), inner), constrain(self.hnorm(hidden_BxSxH), inner)], axis=-1
        )  # SP all-gather
        y = constrain(cast_einsum("bsk,kh->bsh", None, both, self.eh_proj[...]), ("batch", "seq", "eh_out"))
        return self.block(constrain(y, act_names(self.plan)))  # gathered over t, scattered over s with SP


def shifted_mask(t_BxS: jax.Array, k: int) -> jax.Array:
    """1 where a position's shifted target is real, 0 on the last k positions the roll wraps around [b, s]."""
    s = t_BxS.shape[-1]
    return jnp.broadcast_to(jnp.arange(s) < s - k, t_BxS.shape)
