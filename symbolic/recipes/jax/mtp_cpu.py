"""XLA:CPU's own rows of the multi-token-prediction modules in the `jax` profile's 1F1B table (recipes.jax.mtp): the
modules' weights widened to fp32 and the all-reduce at the tick's end; read from XLA:CPU's dumps of
grids/derive-mtp.toml, each row's evidence in docs/accuracy.md under its name."""

from __future__ import annotations

import sympy as sp

from ...components.base import FP32, GROUPS
from ...config.switches import Switches
from ...config.symbols import B_g, h, n_mtp, t, v
from .buffers import Buffer
from .clock import TICK
from .params import N, mtp_module_params, mtp_module_whole, one_layer_dense
from .zero import tick_slices


def cpu_rows(sw: Switches) -> tuple[Buffer, ...]:
    """XLA:CPU's own rows: the modules' widened weights and the all-reduce at the tick's end."""
    sliced = tick_slices(sw)
    module = mtp_module_whole(sw)
    summed = sp.Piecewise((0, sp.Eq(GROUPS.zero_group, 1)), (B_g, True))  # the all-reduce's fp32: none at d*c = 1
    return (
        Buffer(
            "mtp_widened",
            (n_mtp, module),
            FP32,
            TICK,
            "each module's weights widened to fp32 for XLA:CPU's "
            "fp32 dots, and a transposed copy of each, once for the whole tick",
            count=2,
            backend="cpu",
        ),
        Buffer(
            "mtp_head_grads",
            (n_mtp, h / sliced, v / t),
            B_g,
            ("loss_head", "backward_embed"),
            "each module's "
            "fp32 gradient of the LM head for the micro batch (tick_slices: a ZeRO shard of it), beside the "
            "model's, held to the tick's end, where XLA:CPU sums the tick's gradients over d*c in one all-reduce "
            "at every ZeRO stage (it reduce-scatters none of them)",
            backend="cpu",
        ),
        Buffer(
            "mtp_model_head_grad",
            (h / sliced, v / t),
            B_g,
            ("backward_embed",),
            "the model's own fp32 head "
            "gradient for the micro batch (recipes.jax.zero's head_grad_micro; tick_slices) held with the "
            "modules' to that all-reduce, at every ZeRO stage",
            backend="cpu",
        ),
        Buffer(
            "mtp_tick_grads",
            (2, n_mtp * mtp_module_params(sw) / sliced + sp.Piecewise((one_layer_dense(sw), sp.Eq(N, 1)), (0, True))),
            summed,
            ("backward_embed",),
            "the tick's own fp32 gradients of the modules' weights but their routed experts (tick_slices), and "
            "their sums from that all-reduce beside them; with one layer per stage (XLA removes the one-trip "
            "layer loop), its layer's too; none when d*c = 1",
            backend="cpu",
        ),
        Buffer(
            "mtp_grads_summed",
            ((n_mtp + 1) / sliced + 1, v / t, h),
            summed,
            ("backward_embed",),
            "that all-reduce's outputs beside its inputs: the model's and each module's "
            "head gradient and the shifted tokens' lookup gradient (the first stage's lookup's is "
            "lookup_grad_summed); none when d*c = 1",
            backend="cpu",
        ),
        Buffer(
            "mtp_lookup_grad",
            (v / t, h),
            B_g,
            ("backward_embed",),
            "the shifted tokens' fp32 lookup "
            "gradient of the local embedding rows [v/t, h], a scatter of its own beside the first stage's "
            "lookup_grad",
            backend="cpu",
        ),
    )
