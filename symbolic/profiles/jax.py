"""Profile `jax`: what jaxcheck's compiled train step holds on one device, buffer by buffer (pure sympy, no jax).
Derived from the implementation (jaxcheck/model, step.py, state.py), not fitted to XLA; how the temps were read off
XLA's dumps, and the known gaps, are in the README (section "The `jax` profile")."""
from __future__ import annotations

import sympy as sp

from ..components import FP32, INT32, Component
from ..components.jaxstep import held, layer_tensors as _layer_tensors, saved_none, score_blocks, scores, tokens
from ..components.weights import embedding_params, head_params, layer_params
from ..config.switches import Switches
from ..config.symbols import B_a, B_g, B_o, B_w, L, a, b, c, d, f, h, k, m, p, s, t, v

TITLE = "jaxcheck's compiled step (flax + XLA, GPipe scan)"
DESCRIPTION = (
    "Per-device buffers of jaxcheck's jax train step: parameters in B_w (fp32), AdamW mu and nu (B_o = 2 x B_w) over "
    "d*c with ZeRO-1, gradients as XLA temporaries, the residuals autodiff keeps per layer under the remat policy for "
    "all m + p - 1 iterations of the scanned GPipe schedule, K/V all-gathered over context, flash attention's fp32 "
    "score blocks (or, unfused, fp32 s x s scores), fp32 logits of one micro batch, int32 batch tokens and targets."
)

POINTER = sp.Integer(8)  # one entry of an XLA output tuple's index table
PARAM_LEAVES = 12  # embed, head, final norm + 9 stacked block tensors (wq wk wv wo gate up down, 2 norm scales)


def device_params() -> sp.Expr:
    """Parameters on one device: L/p stacked layers (matrices over t, norms whole) + embedding + final norm + head."""
    return embedding_params() + (L / p) * layer_params() + head_params()


def layer_tensors(sw: Switches) -> list[Component]:
    """The tensors one layer keeps for one micro batch under the remat policy (jaxcheck.step.remat_policy)."""
    return _layer_tensors(sw)


def _arguments(sw: Switches) -> list[Component]:
    P = device_params()
    zero = d * c if sw.dist_opt else sp.Integer(1)
    return [
        Component("params", B_w * P, "parameters in param dtype, sharded as jaxcheck.model.rules: matrices/vocab over t, layers over p"),
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


def _iterations() -> sp.Expr:
    """Iterations of the GPipe scan, m + p - 1."""
    return m + p - 1


def _sum(parts: list[Component]) -> sp.Expr:
    return sp.Add(*(part.expr for part in parts))


def _head_until_loss() -> sp.Expr:
    """LM head buffers live through the forward and the loss scan: its fp32 [h, v/t] gradient (carry of the loss scan)
    and an fp32 copy, and its compute-dtype cast for the logits dot."""
    return (2 * B_g + B_a) * h * v / t


def _head_update(sw: Switches) -> sp.Expr:
    """AdamW's update of the LM head inside the pipeline's backward, once the head's gradient is final: new weights,
    mu and nu in fp32 [h, v/t], over d*c with ZeRO-1."""
    return 3 * B_w * h * v / t / (d * c if sw.dist_opt else 1)


# Every device holds the same buffers (SPMD): embedding, final norm and LM head replicated over pipe, the stage's L/p
# layers, m + p - 1 GPipe iterations on every stage. XLA's temp holds at least the buffers live at the step's peak
# program point, which is one of three live sets; the profile takes the largest (sympy Max): end of forward
# (forward_set), the loss scan (loss_set), inside the backward pipeline loop (backward_set).
def loss_set(sw: Switches) -> sp.Expr:
    """The loss scan between the pipeline's forward and backward: the residual stacks as the forward wrote them and one
    micro batch's fp32 logits [b, s/c, v/t] with their gradient (the checkpointed loss recomputes them per micro
    batch; they are dead again before the pipeline's backward starts), and the LM head's buffers (the third fp32
    buffer per stacked weight, a forward-only fp32 copy, is dead by then: llama3-8b d2 p4 dump)."""
    return _iterations() * (L / p) * _sum(held(sw, B_a)) + 2 * tokens(v, FP32, True) + _head_until_loss()


def forward_set(sw: Switches) -> sp.Expr:
    """End of forward (the last layer's attention of the last iteration): every layer's residuals of every iteration
    as the forward writes them, plus that attention's working set and the third fp32 buffer per stacked weight."""
    stacks = _iterations() * (L / p) * _sum(held(sw, B_a))
    return stacks + _attention_forward(sw) + _layer_grads() + _head_until_loss()


def backward_set(sw: Switches) -> sp.Expr:
    """Inside the backward pipeline loop: the residual stacks converted to fp32 by XLA:CPU, one iteration's slice of
    them in fp32 (the L/p layers the inner backward scan reads), and one layer's attention backward.
    Flash attention: every policy's stacks are converted; with several iterations the pipeline loop also carries the
    third fp32 buffer per stacked weight and the cotangent of the last stage's outputs in fp32 [m + p - 1, b, s, h]
    (convert_convert_fusion in the dumps of tiny t4 p4 and llama3-8b d2 p4); with one iteration XLA removes the
    pipeline loop, the slice is the stack itself and the layer scan holds two buffers per weight (llama2-7b d2 t2,
    tiny d2 t2 s512 dumps). Unfused attention (full remat reads its bf16 x stack as is); with one iteration the peak
    is the set entering the backward layer scan (_backward_once)."""
    iteration = (L / p) * _sum(held(sw, FP32, gathered_kv=True))
    if sw.flash_attn:
        stacks = _iterations() * iteration
        outputs_grad = _iterations() * tokens(h, FP32, sw.sp)
        return (sp.Piecewise((iteration, sp.Eq(_iterations(), 1)),
                             (stacks + iteration + _layer_grads() + outputs_grad, True))
                + _attention_backward(sw) + _head_update(sw))
    stack_width = B_a if sw.recompute == "full" else FP32
    stacks = _iterations() * (L / p) * _sum(held(sw, stack_width, gathered_kv=True))
    several = stacks + iteration + _attention_backward(sw) + _layer_grads()
    return (sp.Piecewise((_backward_once(sw) + _layer_grads(), sp.Eq(_iterations(), 1)), (several, True))
            + _head_update(sw))


def _backward_once(sw: Switches) -> sp.Expr:
    """Unfused attention, one iteration, entering the backward layer scan: the L/p layers' residual stacks as the
    forward wrote them, and (remat none) an fp32 copy [L/p, b, a/t, s/c, s] of the bf16 probabilities stack that
    XLA:CPU converts for the backward's P V dots while the bf16 stack is still live (wrapped_convert of the probs
    stack in the buffer assignment of tiny d1 t2 c4 s2048, offsets disjoint from both stacks)."""
    probs32 = scores(FP32) if sw.recompute == "none" else sp.Integer(0)
    return (L / p) * (_sum(held(sw, B_a)) + probs32)


def _attention_forward(sw: Switches) -> sp.Expr:
    """Working set of one layer's attention forward beyond the stacks. Flash: one key block's fp32 scores and
    probabilities (FLASH_FWD_BYTES per block element) and the fp32 accumulator [b, s/c, a/t, dh] with its update.
    Unfused: FWD_ATTN_BYTES per score element and the bool causal mask broadcast to the scores' shape."""
    if sw.flash_attn:
        return score_blocks(FLASH_FWD_BYTES) + 2 * tokens(h, FP32, True)
    return scores(FWD_ATTN_BYTES[sw.recompute]) + scores(sp.Integer(1))


def _attention_backward(sw: Switches) -> sp.Expr:
    """Working set of one layer's attention backward. Flash: one key block's fp32 probabilities and the two fp32
    products of the dK / dV dots in their transposed layout (FLASH_BWD_BYTES per block element), bf16 transposed
    copies of q and dO for those dots (two each), the fp32 dq carry and fp32 dk, dv of the gathered keys, and under
    full remat the recomputed residuals of the layer's attention half.
    Unfused: BWD_ATTN_BYTES per score element and the causal mask (remat none: the saved broadcast; else [s/c, s])."""
    if sw.flash_attn:
        recomputed = _recomputed_attention_half(sw) if sw.recompute == "full" else sp.Integer(0)
        return (score_blocks(FLASH_BWD_BYTES) + 4 * tokens(h, B_a, True) + tokens(h, FP32, True)
                + 2 * c * tokens(h * k / a, FP32, True) + recomputed)
    mask = scores(sp.Integer(1)) if sw.recompute == "none" else s * s / c
    return scores(BWD_ATTN_BYTES[sw.recompute]) + mask


def _recomputed_attention_half(sw: Switches) -> sp.Expr:
    """Full remat: while one layer's attention backward runs, the residuals of that layer's attention half that the
    backward recomputed (remat none's list up to 'attn_out': fp32 norm-1 intermediates, attn_in, gathered k and v,
    q, flash's output and log-sum-exp; rematted_computation buffers in the dump of tiny s8192 full); the MLP half's
    were freed by its backward, which runs first."""
    parts = saved_none(sw)
    return _sum(parts[:[x.name for x in parts].index("attn_out") + 1])


def _temps(sw: Switches) -> list[Component]:
    vocab = h * v / t
    return [
        Component("layer_grads", 2 * _layer_grads(),
                  "two fp32 [L/p, ...] buffers per stacked weight live throughout: the zero-initialised gradient "
                  "accumulator of the backward scan and the fp32 copy the dots read (a third is in the live sets)"),
        Component("embed_grad", B_g * vocab, "fp32 [v/t, h] gradient accumulator of the embedding (scatter-add)"),
        Component("activations_at_peak", sp.Max(forward_set(sw), loss_set(sw), backward_set(sw)),
                  f"largest of three live sets ({sw.recompute} remat): end of forward (residual stacks of L/p layers "
                  "x m + p - 1 iterations, attention working set, a third fp32 buffer per stacked weight, the LM "
                  "head's fp32 gradient, copy and bf16 cast), the loss scan (stacks, fp32 logits of one micro batch "
                  "and their gradient, the LM head's buffers) and inside the backward pipeline loop (stacks "
                  "converted to fp32, one iteration's fp32 slice, attention backward, the LM head's AdamW update)"),
        Component("stage_outputs", _iterations() * tokens(h, B_a, sw.sp),
                  "last stage's output of every scan iteration [m + p - 1, b, s, h] (pipeline.gpipe)"),
        Component("embeddings", m * tokens(h, B_a, sw.sp), "embedded micro batches [m, b, s, h] in compute dtype"),
    ]


# bytes per [b, a/t, s/c, s] score element beyond the stacks while one layer's attention runs, buffer by buffer:
# forward, none: the fp32 fill value jnp.where broadcasts to the scores' shape (4; scores/probs are in the stacks);
# forward, selective/full: that fill (4) + the fp32 masked scores (4) + the fp32 softmax output (4), none of them saved;
# backward, selective/full: recomputed fp32 dS of the softmax backward (4), bf16 dP = dO V^T (2) and dS's bf16 copy (2);
# backward, none: 0 beyond the fp32 stacks, which already hold scores and probabilities.
FWD_ATTN_BYTES = {"none": sp.Integer(4), "selective": FP32 * 3, "full": FP32 * 3}
BWD_ATTN_BYTES = {"none": sp.Integer(0), "selective": FP32 + 2 * B_a, "full": FP32 + 2 * B_a}

# flash attention, bytes per [b, a/t, s/c, block] element of the key block being processed (jaxcheck.model.flash):
# forward: fp32 masked scores (4) and fp32 exp(scores - max) (4); backward: fp32 probabilities (4) and the fp32
# dK / dV dot products in XLA:CPU's transposed [k, block, a/k * s] layout (4 + 4).
FLASH_FWD_BYTES = FP32 * 2
FLASH_BWD_BYTES = FP32 * 3

# XLA memory-analysis group of each component: argument (params, AdamW state, batch; exact), output (loss and the
# output tuple's pointer table; donated params and AdamW state come back aliased, counted once), temp (the rest);
# total = argument + output + temp - alias
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
