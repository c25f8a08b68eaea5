"""Profile `jax`: what jaxcheck's compiled train step holds on one device, buffer by buffer (pure sympy, no jax).

Derived from the implementation (jaxcheck/rules.py, llama.py, pipeline.py, step.py, state.py), not fitted to XLA.
Every device holds the same buffers (SPMD): the embedding, final norm and LM head are replicated over the pipe axis,
each device holds its stage's L/p layers, and the GPipe scan runs m + p - 1 iterations on every stage.

Byte widths: B_w is the parameter dtype (fp32: 4), B_g the gradient dtype (= parameter dtype), B_o the Adam mu + nu
bytes per parameter (2 x parameter dtype: 8; the step count is a separate 4-byte int32), B_a the compute dtype
(bf16: 2). `byte_widths(param_dtype, compute_dtype)` is the one place these numbers come from: jaxcheck's verify
builds the Training it evaluates this profile with from its JaxOptions through it (so `mem4d estimate --profile jax`
agrees with `mem4d verify` only when given the same widths; the Training defaults are the paper's bf16 widths).

Each component belongs to one of XLA's memory-analysis groups (GROUP): argument (params, AdamW state, batch; exact),
output (the loss and the output tuple's pointer table; donated params and AdamW state come back aliased, counted once),
temp (gradients, saved residuals, pipeline buffers, embeddings, logits). total = argument + output + temp - alias.
Flash attention does not exist here (sw.flash_attn is ignored: XLA's attention materialises s x s scores).

How the temps were found: XLA's temp is the size of its packed heap of temporaries, which holds at least the buffers
live at the step's peak. The temp components are the buffers listed live at that peak in XLA's live-range dump
(XLA_FLAGS=--xla_dump_to) of jaxcheck's step, named after what they hold (e.g. three stacked fp32 layer-gradient
buffers: the scan's zero-initialised accumulator, one iteration's gradients and the copy they are added to), and
checked with compiled variants (mem4d verify --explain). No term is a constant fitted to XLA's numbers. Known gaps:
the peak moves (end of forward vs start of backward) with the remat policy and m, heap packing adds fragmentation,
and XLA:CPU keeps some bf16 residual stacks as fp32 copies; `mem4d verify` shows the remaining error per config.
"""
from __future__ import annotations

import sympy as sp

from ..components import Component, Switches
from ..components.weights import embedding_params, head_params, layer_params
from ..components.jaxstep import FP32, layer_tensors as _layer_tensors, scores, tokens
from ..symbols import B_a, B_g, B_o, B_w, L, a, b, c, d, f, h, k, m, p, s, t, v

TITLE = "jaxcheck's compiled step (flax + XLA, GPipe scan)"
DESCRIPTION = (
    "Per-device buffers of jaxcheck's jax train step: parameters in B_w (fp32), AdamW mu and nu (B_o = 2 x B_w) over "
    "d*c with ZeRO-1, gradients as XLA temporaries, the residuals autodiff keeps per layer under the remat policy for "
    "all m + p - 1 iterations of the scanned GPipe schedule, K/V all-gathered over context, fp32 s x s attention "
    "scores (no flash attention), fp32 logits of one micro batch, int32 batch tokens and targets."
)

DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
INT32 = sp.Integer(4)
POINTER = sp.Integer(8)  # one entry of an XLA output tuple's index table
PARAM_LEAVES = 12  # embed, head, final norm + 9 stacked block tensors (wq wk wv wo gate up down, 2 norm scales)


def byte_widths(param_dtype: str = "float32", compute_dtype: str = "bfloat16") -> dict[str, int]:
    """Training byte widths of the jax step: weights and gradients in param dtype, Adam mu + nu 2x, activations."""
    w = DTYPE_BYTES[param_dtype]
    return {"weight_bytes": w, "grad_bytes": w, "opt_bytes": 2 * w, "act_bytes": DTYPE_BYTES[compute_dtype]}


def device_params() -> sp.Expr:
    """Parameters on one device: L/p stacked layers (matrices over t, norms whole) + embedding + final norm + head."""
    return embedding_params() + (L / p) * layer_params() + head_params()


def matrix_params() -> sp.Expr:
    """Weight-matrix parameters of one layer on one device (Q K V O gate up down, split over t)."""
    return 2 * h**2 * (1 + k / a) / t + 3 * h * f / t


def layer_activation(sw: Switches) -> sp.Expr:
    return sp.Add(*(part.expr for part in _layer_tensors(sw)))


def layer_tensors(sw: Switches) -> list[Component]:
    """The tensors one layer keeps for one micro batch under the remat policy (jaxcheck.step.remat_policy)."""
    return _layer_tensors(sw)


def _arguments(sw: Switches) -> list[Component]:
    P = device_params()
    zero = d * c if sw.dist_opt else sp.Integer(1)
    return [
        Component("params", B_w * P, "parameters in param dtype, sharded as jaxcheck.rules: matrices/vocab over t, layers over p"),
        Component("adam_moments", B_o * P / zero,
                  "AdamW mu and nu (param dtype), over d*c with ZeRO-1 (rules.zero1_spec; assumes d*c divides h)"
                  if sw.dist_opt else "AdamW mu and nu (param dtype), sharded like the parameters (no ZeRO-1)"),
        Component("adam_count", INT32, "AdamW step count, one replicated int32"),
        Component("batch", 2 * INT32 * m * b * s / c, "int32 tokens and targets [m, d*b, s], over data and context"),
    ]


def _outputs() -> list[Component]:
    n_out = 3 * PARAM_LEAVES + 2  # new params, mu, nu, count, loss
    return [Component("loss_and_tuple", FP32 + POINTER * n_out,
                      "fp32 loss + the output tuple's pointer table (8 bytes per output); params/AdamW state are aliased")]


def _layer_grads() -> sp.Expr:
    """fp32 gradients of the stage's stacked layers [L/p, ...] (one copy)."""
    return B_g * (L / p) * layer_params()


def _temps(sw: Switches) -> list[Component]:
    vocab = h * v / t
    parts = [
        Component("layer_grad_accumulator", _layer_grads(),
                  "zero-initialised accumulator of the stacked layer gradients, carried by the backward pipeline scan"),
        Component("layer_grad_step", _layer_grads(), "one scan iteration's stacked layer gradients, converted to fp32"),
        Component("layer_grad_copy", _layer_grads(), "copy of the accumulator that the iteration's gradients are added to"),
        Component("current_layer_grads", B_g * layer_params(), "gradients of the one layer the inner backward scan is on"),
        Component("vocab_grads", 3 * B_g * vocab,
                  "fp32 [v/t, h] gradients: LM head (carry and step of the loss scan) and the embedding's accumulator"),
        Component("vocab_cast", B_a * vocab, "compute-dtype copy of the embedding table for the lookup"),
        Component("residuals", (m + p - 1) * (L / p) * layer_activation(sw),
                  f"per-layer tensors ({sw.recompute} remat) x L/p layers x m + p - 1 iterations of the GPipe scan"),
        Component("attention_backward", scores(ATTN_BWD_BYTES[sw.recompute]),
                  "one layer's attention backward: " + ATTN_BWD_DOC[sw.recompute]),
        Component("causal_mask", scores(sp.Integer(1)), "bool causal mask broadcast to the scores' shape (loop-invariant)"),
        Component("stage_outputs", (m + p - 1) * tokens(h, B_a, sw.sp),
                  "last stage's output of every scan iteration [m + p - 1, b, s, h] (pipeline.gpipe)"),
        Component("embeddings", m * tokens(h, B_a, sw.sp), "embedded micro batches [m, b, s, h] in compute dtype"),
        Component("logits", 2 * tokens(v, FP32, True), "fp32 logits [b, s/c, v/t] of one micro batch and their gradient"),
    ]
    if sw.recompute != "none":
        parts.insert(7, Component("residuals_converted", (m + p - 1) * (L / p) * layer_activation(sw),
                                  "second buffer of the checkpointed residual stack: the converted copy the backward "
                                  "while loop reads (wrapped_convert in XLA's buffer assignment)"))
    if sw.recompute == "none":
        parts.append(Component("weight_casts", B_a * (L / p) * matrix_params(),
                               "compute-dtype copies of the stage's weight matrices, kept as residuals (no remat)"))
    return parts


# bytes per [b, a/t, s/c, s] element live while one layer's attention runs backward
ATTN_BWD_BYTES = {"none": sp.Integer(8), "selective": sp.Integer(14), "full": sp.Integer(14)}
ATTN_BWD_DOC = {
    "none": "bf16 dP = dO V^T, fp32 dS of the softmax backward and its bf16 copy for the dQ/dK dots (scores are saved)",
    "selective": "recomputed fp32 scores and bf16 probabilities, bf16 dP, fp32 dS and its bf16 copy",
    "full": "recomputed fp32 scores and bf16 probabilities, bf16 dP, fp32 dS and its bf16 copy",
}

GROUP: dict[str, str] = {
    "params": "argument", "adam_moments": "argument", "adam_count": "argument", "batch": "argument",
    "loss_and_tuple": "output",
}


def group_of(name: str) -> str:
    """XLA memory-analysis group of a component: argument, output, or temp."""
    return GROUP.get(name, "temp")


def components(sw: Switches) -> list[Component]:
    """Every device's buffers: arguments (exact), outputs not aliased, temps."""
    return _arguments(sw) + _outputs() + _temps(sw)


def stage_components(sw: Switches, stage: str) -> list[Component]:
    """All stages hold the same buffers under SPMD (embedding and head replicated over pipe, equal stage sizes)."""
    return components(sw)
