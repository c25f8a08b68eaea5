"""Profile `jax`: jaxcheck's compiled train step as a table of buffers, per device (pure sympy, no jax).

Every device holds the same buffers (SPMD): embedding, final norm and LM head replicated over pipe, its stage's L/p
layers, and the schedule's loop on every stage: 1F1B's ticks with residual rings of K = min(m, p) micro batches
(recipes.jax.onef1b), or GPipe's I = m + p - 1 iterations. Arguments and outputs are exact; the temporaries are rows
of symbolic.recipes.jax.buffers, live in the phases of the step (the derivation of each row, from XLA's
buffer-assignment dumps of grids/derive.toml and grids/derive-1f1b.toml, is in docs/jaxcheck.md; the dumps of each
row are in docs/accuracy.md under its name; its doc says what the buffer is).
"""

from __future__ import annotations

import functools
from dataclasses import replace

import sympy as sp

from ...components import FP32, INT32, Component
from ...components.experts import expert_data_parallel
from ...components.base import GROUPS
from ...config.switches import Switches
from ...config.symbols import B_o, B_w, L, L_e, b, c, m, n_mtp, s
from . import clock, mtp as jaxmtp, onef1b as jax1f1b, zero as jaxzero
from .buffers import PHASES, Buffer, live, on, peak
from . import gpipe
from .gpipe import ALL, I
from .params import device_experts, device_params
from .vectors import unsharded_vectors
from .tensors import layer_tensors as _layer_tensors

TITLE = "jaxcheck's compiled step (flax + XLA, 1F1B or GPipe written out)"
DESCRIPTION = (
    "Per-device buffers of jaxcheck's train step: parameters in B_w (fp32) and AdamW mu, nu (B_o = 2 x B_w) over d*c "
    "with ZeRO-1 as arguments; as temporaries, the residuals each layer keeps under the remat policy, in rings of "
    "min(m, p) micro batches under 1F1B (all m + p - 1 iterations of the GPipe loop under --schedule gpipe), one "
    "gradient accumulator per stacked weight, the LM head's and the embedding's, "
    "and the working sets of the phase XLA's heap must hold at once (one layer's forward or backward, one micro "
    "batch's fp32 logits, the relayout of a residual stack between forward and backward)."
)

POINTER = sp.Integer(8)  # one entry of an XLA output tuple's index table


def layer_tensors(sw: Switches, moe: bool = False) -> list[Component]:
    """The activation residuals one layer (an MoE layer with `moe`) keeps for one micro batch under the remat policy."""
    return _layer_tensors(sw, moe)


def arguments(sw: Switches) -> list[Buffer]:
    """The step's inputs: parameters, AdamW state, batch (exact: checked against XLA's argument bytes)."""
    zero = GROUPS.zero_group if sw.dist_opt else sp.Integer(1)
    expert_zero = expert_data_parallel() if sw.dist_opt else sp.Integer(1)
    params, experts = device_params(sw), device_experts(sw)
    whole = unsharded_vectors(sw) * (1 - 1 / zero)  # what those vectors add to a 1/(d*c) share
    expert_params = expert_data_parallel() if sw.sharded_weights else sp.Integer(1)
    moe_doc = (
        "; routed experts E/e per device, their f_e over t_e, their ZeRO shards over the expert data-parallel "
        "d t c / (e t_e)"
        if sw.moe
        else ""
    )
    return [
        Buffer(
            "params",
            (params / jaxzero.param_shards(sw) + experts / expert_params + (whole if sw.sharded_weights else 0),),
            B_w,
            ALL,
            "parameters in "
            "param dtype, sharded as jaxcheck.rules (matrices and vocabulary over t, layers over p"
            + ("; ZeRO-3: each also over d*c on a layer's major dimension" if sw.sharded_weights else "")
            + moe_doc
            + ")",
        ),
        Buffer(
            "adam_moments",
            (params / zero + experts / expert_zero + whole,),
            B_o,
            ALL,
            "AdamW mu and nu in param "
            "dtype"
            + (
                ", over d*c (ZeRO-1: first dimension divisible by d*c; ZeRO-2/3: as the gradients)"
                if sw.dist_opt
                else ", sharded like params"
            ),
        ),
        Buffer("adam_count", (), INT32, ALL, "AdamW step count, one replicated int32"),
        Buffer(
            "batch",
            (m, b, s / c),
            INT32,
            ALL,
            "int32 tokens and targets [m, d*b, s] over data and context",
            count=sp.Integer(2),
        ),
    ]


def param_leaves(sw: Switches) -> sp.Expr:
    """Parameter leaves: embedding, final norm, LM head (none when tied), 9 per dense block (wq wk wv wo gate up down,
    2 norm scales; with biases bq bk bv, bo, and the dense MLP's three; GPT's fc1 and fc2 in place of gate up down,
    their two biases, the LayerNorms' biases, the learned positions) and per MoE block wq wk wv wo, 2 norm scales,
    router, gate, up, down, the shared experts' 3, their gate's 1 and the score-correction bias; MLA's attention has
    7 leaves in place of wq wk wv wo (wq_a, q_norm, wq_b, wkv_a, kv_norm, wkv_b, wo), or 5 without a query latent;
    each multi-token-prediction module 4 (enorm, hnorm, eh_proj, final norm) and its block's; gated attention 1 more
    (wg; 2 with biases, bg); a hybrid's Gated DeltaNet block its 13 mixer leaves (wq wk wv wz wb wa, three
    convolutions, dt_bias, A_log, the gated norm's scale, wo), 2 norm scales and its MLP's, as its attention block's."""
    ends = 3 - (1 if sw.tied else 0)
    mla = ((7 if sw.q_lora else 5) - 4) if sw.mla else 0  # leaves beyond GQA's four
    mla += (3 if sw.qkv_bias else 0) + (2 if sw.qk_norm in ("head", "full") else 0)  # bq bk bv; q and k norm scales
    mla += (1 if sw.o_bias else 0) + (1 if sw.sinks else 0) + (2 if sw.norm == "layer" else 0)  # bo; sinks;
    # the two LayerNorms' biases
    mla += (1 + (1 if sw.qkv_bias else 0)) if sw.attn_gate else 0  # wg, and bg with the Q, K, V biases
    dense_mlp = (-1 if sw.mlp == "gelu" else 0) + (sw.mlp_bias and (2 if sw.mlp == "gelu" else 3))  # fc1 fc2, biases
    ends += (1 if sw.positions else 0) + (1 if sw.norm == "layer" else 0)  # positions; the final LayerNorm's bias
    dense = 9 + mla + dense_mlp
    moe = (
        10
        + (3 if sw.shared else 0)
        + (1 if sw.shared_gate else 0)
        + (4 if sw.moe_bias else 0)
        + mla
        + (1 if sw.expert_bias else 0)
    )
    # a multi-token-prediction module: enorm, hnorm, final norm (with LayerNorm, their biases), eh_proj, its layer
    mtp = n_mtp * (3 * (2 if sw.norm == "layer" else 1) + 1 + (moe if sw.mtp_moe else dense)) if sw.mtp else 0
    if sw.gdn:  # two stacks: attention and Gated DeltaNet blocks with one kind of MLP (13 mixer leaves in place of
        # attention's 4 and its extras; the LayerNorms' biases stay)
        block = moe if sw.moe else dense
        attention = 4 + mla - (2 if sw.norm == "layer" else 0)
        return ends + mtp + 2 * block - attention + 13
    if not sw.moe:
        return ends + dense + mtp
    return ends + moe + mtp + sp.Piecewise((dense, L - L_e > 0), (0, True))  # a dense stack where some are


def outputs(sw: Switches) -> list[Buffer]:
    """The loss and the output tuple's pointer table; new params and AdamW state come back in the donated buffers."""
    leaves = param_leaves(sw)
    return [
        Buffer(
            "loss_and_tuple",
            (),
            FP32 + POINTER * (3 * leaves + 2),
            ALL,
            "fp32 loss + the output tuple's pointer table (8 bytes per output); params and AdamW are aliased",
        )
    ]


def _read(sw: Switches) -> Switches:
    """The switches this profile reads: it has no overhead components, so `overheads` does not key its caches."""
    return replace(sw, overheads=False)


def temporaries(sw: Switches) -> list[Buffer]:
    """Every temporary of the step with the phases it is live in (a new list; built once per switches)."""
    return list(_temporaries(_read(sw)))


@functools.lru_cache(maxsize=None)
def _temporaries(sw: Switches) -> tuple[Buffer, ...]:
    """The schedule's temporaries: GPipe's table (recipes.jax.gpipe), or 1F1B's (recipes.jax.onef1b) with the MTP
    modules' rows (recipes.jax.mtp)."""
    return gpipe.rows(sw) if sw.schedule == "gpipe" else jax1f1b.rows(sw) + jaxmtp.rows(sw)


def table(sw: Switches) -> list[Buffer]:
    """Arguments, outputs and the temporaries the switches' backend holds."""
    return arguments(sw) + outputs(sw) + on(temporaries(sw), sw.backend)


def phase_bytes(sw: Switches) -> dict[str, sp.Expr]:
    """Temporary bytes live in each phase."""
    rows = on(temporaries(sw), sw.backend)
    return {phase: live(rows, phase) for phase in PHASES}


GROUP: dict[str, str] = {
    "params": "argument",
    "adam_moments": "argument",
    "adam_count": "argument",
    "batch": "argument",
    "loss_and_tuple": "output",
}


def group_of(name: str) -> str:
    """XLA memory-analysis group of a component: argument, output, or temp."""
    return GROUP.get(name, "temp")


PEAK_PHASE = "backward_weights"  # the phase whose rows are listed as components (the peak in the derive grid)


def components(sw: Switches) -> list[Component]:
    """The estimator's components (a new list; built once per switches): see _components."""
    return list(_components(_read(sw)))


@functools.lru_cache(maxsize=None)
def _components(sw: Switches) -> tuple[Component, ...]:
    """Arguments, output, the temporaries live at the end of a layer's backward, and `other_phase` (what the largest
    phase holds beyond that one: 0 when it is the peak). Their sum is the table's total."""
    rows = on(temporaries(sw), sw.backend)
    at_peak = [row.component() for row in rows if PEAK_PHASE in row.phases]
    excess = peak(rows) - live(rows, PEAK_PHASE)
    return tuple(
        [row.component() for row in arguments(sw) + outputs(sw)]
        + at_peak
        + [
            Component(
                "other_phase",
                sp.Max(0, excess, evaluate=False) if excess != 0 else sp.Integer(0),
                "bytes by which the largest phase's live set "
                f"exceeds the {PEAK_PHASE} phase's (0 when that phase is the peak)",
            )
        ]
    )


def stage_components(sw: Switches, stage: str, *_, **__) -> list[Component]:
    """All stages hold the same buffers under SPMD (embedding and head replicated over pipe, equal stage sizes of L/p
    layers, every stage runs all m + p - 1 iterations): `layers`, `micro`, `moe_layers` and a hybrid's `kinds`
    change nothing (the rule table's jax scope: every stage holds as many Gated DeltaNet layers)."""
    return components(sw)


def in_flight(rank: sp.Expr, sw: Switches | None = None) -> sp.Expr:
    """Micro batches whose residuals a stage keeps: 1F1B's rings hold K = min(m, p) on every stage (the most loaded
    rank's count: one SPMD program); every stage of the GPipe loop keeps all m + p - 1 iterations'."""
    return I if sw is not None and sw.schedule == "gpipe" else clock.in_flight()
