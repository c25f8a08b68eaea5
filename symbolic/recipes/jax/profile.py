"""Profile `jax`: jaxcheck's compiled train step as a table of buffers, per device (pure sympy, no jax).

Every device holds the same buffers (SPMD): embedding, final norm and LM head replicated over pipe, its stage's L/p
layers, and the schedule's loop on every stage: 1F1B's ticks with residual rings of K = min(m, p) micro batches
(recipes.jax.onef1b), or GPipe's I = m + p - 1 iterations. Arguments and outputs are exact; the temporaries are rows
of symbolic.recipes.jax.buffers, live in the phases of the step (the derivation of each row, from XLA's
buffer-assignment dumps of grids/derive.toml and grids/derive-1f1b.toml, is in its doc and in the README).
"""
from __future__ import annotations

import functools
from dataclasses import replace

import sympy as sp

from ...components import FP32, INT32, Component
from . import moe as jaxmoe, onef1b as jax1f1b, zero as jaxzero
from ...components.experts import expert_data_parallel, experts_params
from .params import (N, device_experts, device_params, moe_layer_params, one_layer, one_layer_dense,
                                    stack_layers)
from .buffers import PHASES, Buffer, live, on, peak
from .tensors import head_widths, layer_tensors as _layer_tensors, out_width, scores, tokens
from ...components.weights import layer_params
from .step import FLASH_BLOCK
from ...config.switches import Switches
from ...config.symbols import B_a, B_g, B_o, B_w, L, L_e, a, b, c, d, dh, h, k, m, p, s, t, v

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
PARAM_LEAVES = 12  # embed, head, final norm + 9 stacked block tensors (wq wk wv wo gate up down, 2 norm scales)
I = m + p - 1  # iterations of the GPipe loop
ALL = PHASES
FLASH_FWD_BYTES = 2 * FP32  # fp32 masked scores and exp(scores - max) of one key block
FLASH_BWD_BYTES = 3 * FP32  # fp32 probabilities and the dK, dV products of one key block (XLA's transposed layout)


def layer_tensors(sw: Switches, moe: bool = False) -> list[Component]:
    """The activation residuals one layer (an MoE layer with `moe`) keeps for one micro batch under the remat policy."""
    return _layer_tensors(sw, moe)


def _per_layer(sw: Switches, moe: bool = False) -> sp.Expr:
    return sp.Add(*(x.expr for x in layer_tensors(sw, moe)))


def _per_layer_fp32(sw: Switches, moe: bool = False) -> sp.Expr:
    """One layer's residuals with every compute-dtype tensor widened to fp32 (as XLA:CPU converts them)."""
    return sp.Add(*(x.expr.subs(B_a, FP32) for x in layer_tensors(sw, moe)))


def _iteration_slice(sw: Switches) -> sp.Expr:
    """One iteration's residuals of one layer copied out of the fp32 stacks by XLA:CPU for the backward's layer loop.
    Not under full remat (the layer loop reads the stacked inputs in place), nor with one iteration (m + p - 1 = 1:
    XLA removes the trip-count-1 pipeline loop, so the layer loop reads the stacks themselves)."""
    if sw.recompute == "full":
        return sp.Integer(0)
    return sp.Piecewise((0, sp.Eq(I, 1)), (_per_layer_fp32(sw, sw.moe), True))


def _looped(width: sp.Expr) -> sp.Expr:
    """A width that exists only inside the loss loop: 0 with one micro batch, where the compiled program has no loop
    (XLA removes a while loop of one trip and schedules its body with the rest of the step; dumps of the three-layer
    model, d4 t2 b4 selective, m = 1 against m = 2)."""
    return sp.Piecewise((0, sp.Eq(m, 1)), (width, True))


def _stream(sw: Switches) -> tuple:
    """Per-device shape of one micro batch's [b, s, h] in the between-blocks layout (s over c, and t with SP)."""
    return (b, s / (c * (t if sw.sp else 1)), h)


def arguments(sw: Switches) -> list[Buffer]:
    """The step's inputs: parameters, AdamW state, batch (exact: checked against XLA's argument bytes)."""
    zero = d * c if sw.dist_opt else sp.Integer(1)
    expert_zero = expert_data_parallel() if sw.dist_opt else sp.Integer(1)
    params, experts = device_params(sw), device_experts(sw)
    expert_params = expert_data_parallel() if sw.sharded_weights else sp.Integer(1)
    moe_doc = ("; routed experts E/e per device, their f_e over t_e, their ZeRO shards over the expert data-parallel "
               "d t c / (e t_e)" if sw.moe else "")
    return [
        Buffer("params", (params / jaxzero.param_shards(sw) + experts / expert_params,), B_w, ALL, "parameters in "
               "param dtype, sharded as jaxcheck.rules (matrices and vocabulary over t, layers over p" + (
                   "; ZeRO-3: each also over d*c on a layer's major dimension" if sw.sharded_weights else "") + moe_doc + ")"),
        Buffer("adam_moments", (params / zero + experts / expert_zero,), B_o, ALL, "AdamW mu and nu in param dtype" + (
            ", over d*c (ZeRO-1: first dimension divisible by d*c; ZeRO-2/3: as the gradients)" if sw.dist_opt
            else ", sharded like params")),
        Buffer("adam_count", (), INT32, ALL, "AdamW step count, one replicated int32"),
        Buffer("batch", (m, b, s / c), INT32, ALL, "int32 tokens and targets [m, d*b, s] over data and context",
               count=sp.Integer(2)),
    ]


def param_leaves(sw: Switches) -> sp.Expr:
    """Parameter leaves: embedding, final norm, LM head (none when tied), 9 per dense block (wq wk wv wo gate up down,
    2 norm scales) and per MoE block wq wk wv wo, 2 norm scales, router, gate, up, down and the shared experts' 3
    and their gate's 1; MLA's attention has 7 leaves in place of wq wk wv wo (wq_a, q_norm, wq_b, wkv_a, kv_norm,
    wkv_b, wo), or 5 without a query latent."""
    ends = 3 - (1 if sw.tied else 0)
    mla = ((7 if sw.q_lora else 5) - 4) if sw.mla else 0  # leaves beyond GQA's four
    if not sw.moe:
        return sp.Integer(PARAM_LEAVES - (1 if sw.tied else 0) + mla)
    moe = 10 + (3 if sw.shared else 0) + (1 if sw.shared_gate else 0) + mla
    return ends + moe + sp.Piecewise((9 + mla, L - L_e > 0), (0, True))  # a dense stack when some layers are dense


def outputs(sw: Switches) -> list[Buffer]:
    """The loss and the output tuple's pointer table; new params and AdamW state come back in the donated buffers."""
    leaves = param_leaves(sw)
    return [Buffer("loss_and_tuple", (), FP32 + POINTER * (3 * leaves + 2), ALL,
                   "fp32 loss + the output tuple's pointer table (8 bytes per output); params and AdamW are aliased")]


def _recomputed(sw: Switches) -> sp.Expr:
    """One layer's residuals of its attention half that the backward recomputes before the attention backward:
    full remat, all of them (remat none's list up to 'attn_out'); selective, those it did not save."""
    if sw.recompute == "none":
        return sp.Integer(0)
    kept = Switches(recompute="none", flash_attn=sw.flash_attn, sp=sw.sp, backend=sw.backend, mla=sw.mla,
                    q_lora=sw.q_lora)
    parts = layer_tensors(kept)
    half = parts[: [x.name for x in parts].index("attn_out") + 1]
    if sw.recompute == "selective":
        saved = {x.name for x in layer_tensors(sw)}
        half = [x for x in half if x.name not in saved]
    return sp.Add(*(x.expr for x in half))


def _attention_backward(sw: Switches) -> sp.Expr:
    """One layer's attention backward beyond its residuals. Flash: one key block's fp32 probabilities and dK, dV
    products, bf16 transposed copies of q and dO (two each), the fp32 dq carry, fp32 dk, dv of the gathered keys.
    Unfused: fp32 dS, bf16 dP and dS per score element."""
    if sw.flash_attn:
        block = FLASH_BWD_BYTES * b * a * s * sp.Min(s, FLASH_BLOCK) / (t * c)
        q_w, k_w, v_w = head_widths(sw)
        return block + 2 * tokens(q_w + out_width(sw), B_a, True) + tokens(q_w, FP32, True) \
            + c * tokens(k_w + v_w, FP32, True)
    return scores(FP32 + 2 * B_a)


def _attention_forward(sw: Switches) -> sp.Expr:
    """One layer's attention forward beyond its residuals. Flash: one key block's fp32 scores and exp, and the fp32
    accumulator [b, s/c, a/t, dh] with its update. Unfused: fp32 scores, their exp and the softmax."""
    if sw.flash_attn:
        return FLASH_FWD_BYTES * b * a * s * sp.Min(s, FLASH_BLOCK) / (t * c) + 2 * tokens(out_width(sw), FP32, True)
    return scores(3 * FP32)


def _relayout(sw: Switches) -> sp.Expr:
    """The largest residual stack XLA:GPU copies into the backward's layout between forward and backward (the old
    and the new layout are live together for a moment): remat none, the normed inputs [b, s/c, h] (flash) or the
    fp32 exp of the scores (unfused); selective, q; full, none (the stacked layer inputs keep their layout)."""
    if sw.recompute == "full":
        return sp.Integer(0)
    if not sw.flash_attn and sw.recompute == "none":
        return scores(FP32)
    return tokens(head_widths(sw)[0], B_a, True) if sw.recompute == "selective" else tokens(h, B_a, False)


def _read(sw: Switches) -> Switches:
    """The switches this profile reads: it has no overhead components, so `overheads` does not key its caches."""
    return replace(sw, overheads=False)


def temporaries(sw: Switches) -> list[Buffer]:
    """Every temporary of the step with the phases it is live in (a new list; built once per switches)."""
    return list(_temporaries(_read(sw)))


@functools.lru_cache(maxsize=None)
def _temporaries(sw: Switches) -> tuple[Buffer, ...]:
    """The schedule's temporaries: GPipe's rows (_gpipe), or what the 1F1B clock makes of them (recipes.jax.onef1b)."""
    rows = _gpipe(sw)
    if sw.schedule == "gpipe":
        return rows
    shard = jaxzero.grad_shards(sw)
    return jax1f1b.rows(rows, sw, _stream(sw), shard, _per_layer(sw, sw.moe))


def _gpipe(sw: Switches) -> tuple[Buffer, ...]:
    """Every temporary of the step with the phases it is live in (forward: one layer of the last iteration; relayout:
    between forward and loss; loss: one micro batch; backward_attention / backward_weights: one layer's attention
    backward / its weight gradients; update: AdamW)."""
    stream = _stream(sw)
    vocab = (h, v / t)
    shard = jaxzero.grad_shards(sw)
    held = (h / shard, v / t)  # the head's gradient as the step keeps it (ZeRO-2/3: over d*c on h)
    dense_layers, moe_layers = stack_layers(sw)
    fwd_to_bwd = ("forward", "relayout", "loss", "loss_head", "backward_attention", "backward_weights")
    backward = ("backward_attention", "backward_weights")
    return (
        Buffer("residual_stacks", (I, dense_layers), _per_layer(sw), fwd_to_bwd,
               f"every layer's residuals ({sw.recompute} remat) for every iteration, [m + p - 1, L/p, ...], written by "
               "the forward in place, read by the backward" + (" (the dense layers' stack: (L - L_e)/p layers)"
                                                                if sw.moe else "")),
        *([Buffer("moe_residual_stacks", (I, moe_layers), _per_layer(sw, moe=True), fwd_to_bwd,
                  f"every MoE layer's residuals ({sw.recompute} remat) for every iteration, [m + p - 1, L_e/p, ...] "
                  "(recipes.jax.moe)")] if sw.moe else []),
        Buffer("stage_outputs", (I,) + stream, B_a, ("forward", "relayout", "loss", "loss_head"),
               "the last stage's output of every iteration [m + p - 1, b, s, h]"),
        Buffer("embeddings", (m,) + stream, B_a, ("forward",), "embedded micro batches [m, b, s, h]"),
        Buffer("lookup_partial", (m, b, s / c, h), B_a, ("forward_embed",), "the vocab-parallel lookup's partial "
               "sums of every micro batch [m, b, s/c, h] before their sum over t (derive-moe 6: loop_multiply_fusion "
               "bf16[512,4,1,1024] of the lookup's shard_map, beside the embedding's all-gather)"),
        Buffer("stage_buffer", stream, B_a, ("forward",) + backward, "the stage buffer and its copy shifted one "
               "stage by the collective-permute (forward: activations, backward: their cotangents)", count=2),
        Buffer("head_grad", held, _looped(B_g), ("loss", "loss_head"), "fp32 gradient of the LM head (of the embedding when "
               "tied) while the logits exist: the loss loop's accumulator, made when the loop starts. With one micro "
               "batch there is no loop (XLA removes a loop of one trip) and the gradient is one product made after "
               "the logits gradient, so it is not live with the logits"),
        Buffer("head_grad_zeros", held, _looped(B_g), ("forward", "relayout"), "the zeros that accumulator starts "
               "from: XLA:GPU materialises them at the step's start, as it does iteration_grads_zeros, and updates "
               "them in place in the loss loop (dump of llama3-8b d2 t2 p2 c2 m8: a broadcast f32[h, v/t] live from "
               "the step's 11th instruction to the loss loop)", backend="gpu"),
        Buffer("head_grad_kept", held, B_g, backward + ("update", "update_gather"), "the same gradient, complete "
               "before the "
               "pipeline backward (an optimization barrier with the pipeline's cotangent) and kept until the AdamW "
               "update, which starts once every gradient exists (a second barrier)"),
        Buffer("embed_grad", (v / t, h), B_g, ("update",), "fp32 gradient of the embedding's local [v/t, h] rows, "
               "made after the pipeline backward by the lookup's scatter-add and summed over d*c (its all-reduce, or "
               "with ZeRO-1 the all-gather of the updated rows, is in flight as the update starts)"),
        Buffer("tied_grad_sum", vocab, B_g if sw.tied else sp.Integer(0), ("update",), "tied: the embedding's "
               "whole gradient, the lookup's plus the head's, a third buffer while both still exist"),
        Buffer("norm_grad", (h / shard,), B_g, ALL, "fp32 gradient of the final norm"),
        Buffer("block_grads", (dense_layers * layer_params(sw) / shard + moe_layers * (
                   moe_layer_params(sw) / shard + experts_params() / jaxzero.expert_grad_shards(sw)),), B_g,
               backward + ("update", "update_gather"),
               "one fp32 accumulator per stacked weight [L/p, ...], each layer's gradient added in place"),
        Buffer("output_grads", (m,) + stream, B_a, ("loss", "loss_head") + backward, "cotangent of the pipeline's outputs"),
        Buffer("iteration_grads", (I,) + stream, B_a, backward, "cotangents reaching the last stage and leaving "
               "stage 0 in every iteration [m + p - 1, b, s, h]", count=2),
        Buffer("iteration_grads_zeros", (I,) + stream, B_a, ("forward", "relayout", "loss", "loss_head"), "the zeros those "
               "cotangent stacks start from: a constant XLA:GPU materialises at the step's start and holds until the "
               "backward copies it (dumps of grids/derive.toml, e.g. llama3-8b t2 p4 m16)", backend="gpu"),
        Buffer("relayout_copy", (I, N), _relayout(sw), ("relayout",),
               "one residual stack in the backward's layout while the forward's copy still exists", backend="gpu"),
        Buffer("stacks_widened", (I, N), _per_layer_fp32(sw, sw.moe) - _per_layer(sw, sw.moe), backward,
               "what the residual stacks grow by when XLA:CPU converts their compute-dtype tensors to fp32 before "
               "the backward loop (wrapped_convert in its buffer assignment)", backend="cpu"),
        Buffer("iteration_slice", (N,), _iteration_slice(sw), backward, "one iteration's residuals copied out "
               "of the fp32 stacks for the backward's layer loop", backend="cpu"),
        Buffer("layer_casts", (one_layer(sw),), B_a, ("forward",), "one layer's weights cast to compute dtype"),
        Buffer("attention_forward", (), _attention_forward(sw), ("forward",),
               "one layer's attention forward: score blocks and the fp32 accumulator (unfused: s x s scores)"),
        Buffer("logits", (b, s / c, v / t), FP32, ("loss",), "one micro batch's fp32 logits and their gradient",
               count=2),
        Buffer("head_input", (b, s / c, h), B_a, ("loss",), "one micro batch's final-norm output all-gathered over t "
               "(sequence parallelism), the LM head's input"),
        Buffer("head_cast", vocab, _looped(B_a), ("loss",), "the LM head cast to compute dtype inside the loss loop "
               "(XLA:GPU fuses the cast into the logits product; with one micro batch there is no loop)", backend="cpu"),
        Buffer("layer_weights", (one_layer_dense(sw),), sp.Piecewise((0, sp.Eq(N, 1)), (B_w, True)) if not sw.sharded_weights
               else B_a, backward,
               "one layer's weights sliced from the stage's stack in param dtype, for its backward (with one layer per "
               "stage there is no layer loop, which XLA removes, and the stack is read in place); ZeRO-3: all-gathered "
               "over d*c in compute dtype (llama3-8b d4 t2 selective zero3: all-gather-start.16 bf16[2048,14336])"),
        Buffer("recomputed", (), _recomputed(sw), ("backward_attention",), "one layer's attention-half residuals "
               "that the backward recomputes (full remat: all of them; selective: those it did not save)"),
        Buffer("attention_backward", (), _attention_backward(sw), ("backward_attention",),
               "one layer's attention backward: score blocks, transposed q and dO, dq, dk, dv"),
        Buffer("input_grads", (b, s / c, h), B_a, ("backward_attention",), "gradients of the layer's normed input "
               "from the Q, K and V projections, [b, s/c, h] before their reduce-scatter over t", count=3),
        Buffer("layer_grads", (one_layer_dense(sw),), B_g, ("backward_weights",),
               "one layer's weight gradients converted to param dtype, before they join the accumulator"),
        *jaxzero.rows(sw),
        *jaxmoe.rows(sw),
        *([Buffer("layer_gathered", (one_layer(sw),), B_w, ("update_gather",), "ZeRO-2: one layer's updated weights "
                  "all-gathered in param dtype (its routed experts over their expert data-parallel group, the rest "
                  "over d*c) into the donated parameter stack, while the updated shards of every layer exist "
                  "(jaxcheck.zero.apply_updates; holdout-moe 8: all-gather-start f32[32,256,1280] x 3 beside the "
                  "updated shards f32[1,3,8,256,1280] x 3)")] if (sw.sharded_grads and not sw.sharded_weights) else []),
    )


def table(sw: Switches) -> list[Buffer]:
    """Arguments, outputs and the temporaries the switches' backend holds."""
    return arguments(sw) + outputs(sw) + on(temporaries(sw), sw.backend)


def phase_bytes(sw: Switches) -> dict[str, sp.Expr]:
    """Temporary bytes live in each phase."""
    rows = on(temporaries(sw), sw.backend)
    return {phase: live(rows, phase) for phase in PHASES}


GROUP: dict[str, str] = {"params": "argument", "adam_moments": "argument", "adam_count": "argument",
                         "batch": "argument", "loss_and_tuple": "output"}


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
    return tuple([row.component() for row in arguments(sw) + outputs(sw)] + at_peak
                 + [Component("other_phase", sp.Max(0, excess, evaluate=False) if excess != 0 else sp.Integer(0),
                              "bytes by which the largest phase's live set "
                              f"exceeds the {PEAK_PHASE} phase's (0 when that phase is the peak)")])


def stage_components(sw: Switches, stage: str, layers: sp.Expr | None = None, micro: sp.Expr | None = None,
                     moe_layers: sp.Expr | None = None) -> list[Component]:
    """All stages hold the same buffers under SPMD (embedding and head replicated over pipe, equal stage sizes of L/p
    layers, every stage runs all m + p - 1 iterations): `layers`, `micro` and `moe_layers` change nothing."""
    return components(sw)


def in_flight(rank: sp.Expr, sw: Switches | None = None) -> sp.Expr:
    """Micro batches whose residuals a stage keeps: 1F1B's rings hold K = min(m, p) on every stage (the most loaded
    rank's count: one SPMD program); every stage of the GPipe loop keeps all m + p - 1 iterations'."""
    return I if sw is not None and sw.schedule == "gpipe" else jax1f1b.in_flight()
