"""torchtitan's FSDP2 training of a Llama, tensor by tensor (pytorch/torchtitan at 9dec370, the code its December
2024 H100 benchmark ran, parallelisms/parallelize_llama.py and train.py; torch.distributed FSDP2 fully_shard):
sharded fp32 parameters, gradients and AdamW moments, bf16 weights all-gathered per TransformerBlock, fp32
reduce-scatter, per-block activation checkpointing (full, or op-level selective with its save list), a loss that
upcasts the logits to fp32."""

from __future__ import annotations

import sympy as sp

from ...config.switches import Switches
from ...config.symbols import B_a, B_g, B_l, B_o, B_w, a, b, c, dh, f, h, n_ac, p, s, t, v
from ...components.base import FP32, GROUPS, INT64, Component
from ...components.weights import end_params, layer_params, mixer_params, mlp_params
from .compiled import compiled_selective, compiled_tensors
from .moe import experts_gathered, layer_weights, moe_selective, moe_tensors
from .tensors import block_input, flash_attention, fp8_tp, sac_attention, tensor_parallel, token_tensor


def sharded_states(params: sp.Expr) -> list[Component]:
    """Weights, gradients and optimizer states of the stage's parameters, each a 1/(d c) shard: FSDP2 shards every
    parameter over the flattened dp_shard x cp mesh (parallelize_llama.py apply_fsdp), and AdamW's moments are
    zeros_like the sharded parameter (torch.optim); the gradients, None from zero_grad at the step's start, exist
    under the pipeline only once its last backward reduce-scatters them (pipeline.step_end)."""
    shard = params / GROUPS.zero_group
    return [
        Component(
            "weights",
            B_w * shard,
            "the sharded parameters, B_w bytes each (fp32 DTensor shards: "
            "FSDP2 keeps the original dtype; the bf16 copy is gathered per block)",
        ),
        Component(
            "gradients",
            B_g * shard * sp.Piecewise((0, p > 1), (1, True)),
            "the sharded gradients, reduce-scattered in reduce_dtype fp32 "
            "(mixed_precision_reduce) and kept in the parameter's dtype, B_g bytes each; none at the peak with p > 1 "
            "(zero_grad before the step, reduce-scattered by its last backward: pipeline.step_end)",
        ),
        Component(
            "optimizer",
            B_o * shard,
            "AdamW exp_avg and exp_avg_sq of the shards, B_o bytes per "
            "parameter (no separate master copy: the fp32 shard is the master)",
        ),
    ]


def block_params(sw: Switches, moe_layers: sp.Expr) -> sp.Expr:
    """The parameters of the stage's largest block unsharded: a Llama block's, or where the stage has MoE layers an
    MoE block's (its router, shared experts and E/ep local experts; an MoE model's dense blocks are smaller)."""
    if not sw.moe:
        return layer_params(sw)
    return sp.Piecewise((layer_params(sw, moe=True) + experts_gathered(sw), moe_layers > 0), (layer_params(sw), True))


def gathered(stage: str, sw: Switches, params: sp.Expr, layers: sp.Expr, moe_layers: sp.Expr = 0) -> Component:
    """The bf16 (mixed_precision_param) weights FSDP2 holds unsharded at the peak, B_a bytes each; with torchao's FSDP2
    Float8 all-gather (--fp8-all-gather: WeightWithDynamicFloat8CastTensor's fsdp_pre_all_gather) the blocks' linear
    weights one byte each (their per-tensor scales, one fp32 a weight, not counted); `params` with the local experts."""
    ends = end_params(stage, sw)
    layer = block_params(sw, moe_layers)
    whole_stage = sp.Piecewise((params, p > 1), (ends + 2 * layer, True)) if sw.sharded_weights else params
    blocks = sp.Piecewise((layers, p > 1), (2, True)) if sw.sharded_weights else layers
    fp8 = (B_a - 1) * blocks * (mixer_params(sw) + mlp_params(sw)) if sw.fp8_gather else 0
    return Component(
        "params_gathered",
        B_a * whole_stage - fp8,
        "unsharded bf16 weights: the root group (embedding, final norm, LM head: gathered from the root's "
        "forward through its backward), the last block (not resharded after forward) and the next block "
        "prefetched; with pp > 1 (reshard_after_forward off) or --zero 2 the whole stage"
        + ("; the blocks' linear weights in FP8 (--fp8-all-gather)" if sw.fp8_gather else ""),
    )


def loss_backward() -> sp.Expr:
    """The loss's backward: log_softmax's saved fp32 output, its incoming and returned gradients, B_l*s*b*v/(t c)
    each, one more at t > 1 (loss_parallel's exp(x))."""
    return (3 + loss_parallel_extra()) * B_l * s * b * v / (t * c)


def block_backward(sw: Switches, head: bool, moe_layers: sp.Expr = 0) -> sp.Expr:
    """A block's backward: its recomputed tensors, its unsharded bf16 gradients with the fp32 reduce-scatter input
    they are copied into (FSDP2 foreach_reduce; none with p > 1, where post_backward with reduce_grads off adds them
    into accumulated_gradients: torch 2.6.0 _fsdp_param_group.py), and on the head's stage the LM head's unsharded
    bf16 gradient, which waits for the root group's reduce-scatter at the end of backward; an MoE block's where it
    is the larger."""
    per_token = lambda parts: sp.Add(*(part.expr for part in parts))  # noqa: E731

    def recomputed(moe: bool) -> sp.Expr:  # a checkpointed block's backward: what it rebuilds beyond what it kept
        kept = block_input().expr if sw.ac_every else per_token(layer_tensors(sw, moe))
        return per_token(unchecked_tensors(sw, moe)) - kept

    grads = B_a + sp.Piecewise((0, p > 1), (B_g, True))  # the bf16 gradient, and the reduce-scatter input at p = 1
    blocks = recomputed(False) + grads * layer_params(sw)
    if sw.moe:
        moe = recomputed(True) + grads * (layer_params(sw, moe=True) + experts_gathered(sw))
        blocks = sp.Piecewise((sp.Max(blocks, moe), moe_layers > 0), (blocks, True))
    return blocks + (B_a * h * v / t if head else 0)


def transient(sw: Switches, head: bool, moe_layers: sp.Expr = 0) -> Component:
    """The larger of the step's two moments beyond what every moment holds: the loss's backward (on the head's
    stage) and a block's backward."""
    block = block_backward(sw, head, moe_layers)
    return Component(
        "transient",
        sp.Max(loss_backward(), block) if head else block,
        "max(the loss's backward: log_softmax's fp32 output, its incoming and returned gradients, "
        "B_l*s*b*v/t each, one more at t > 1 (loss_parallel's exp(x)); a block's backward: its "
        "recomputed tensors, bf16 gradients + fp32 reduce-scatter input (B_a + B_g per parameter; B_a under "
        "the pipeline, which accumulates instead), the LM head's bf16 gradient)",
    )


def loss_parallel_extra() -> sp.Expr:
    """The fourth fp32 [b s, v/t] tensor of the loss's backward under tensor parallelism: torchtitan runs the loss in
    loss_parallel() (9dec370 train.py, train_context), whose nll_loss backward (torch/distributed/tensor/parallel/
    loss.py _nll_loss_and_log_softmax_backward, read at torch 2.13) holds the saved log-softmax x, grad_input =
    zeros_like(x) with the target's -1 scattered in, and exp(x) while it forms (grad_input + exp(x)): four at once,
    where aten's fused log_softmax/nll backward at t = 1 holds three."""
    return sp.Piecewise((1, t > 1), (0, True))


def rms_norm(name: str, out: sp.Expr = B_a) -> list[Component]:
    """What torchtitan's Python RMSNorm (norms.py, norm_type rmsnorm: x.float() * rsqrt(mean(x^2) + eps), type_as,
    * weight) keeps per token: the fp32 copy of its input, the fp32 rsqrt [b, s, 1], the bf16 normalised value and
    the output the next matmuls save, `out` bytes an element (one where Float8's TP styles gather it in FP8)."""
    return [
        token_tensor(f"{name}_fp32_input", h, FP32, True, "fp32 copy of the norm's input (x.float())"),
        token_tensor(f"{name}_rsqrt", 1, FP32, True, "fp32 rsqrt of the mean square, [b, s, 1]"),
        token_tensor(f"{name}_normed", h, B_a, True, "bf16 normalised value, before the weight"),
        token_tensor(
            f"{name}_out",
            h,
            out,
            False,
            "its output, the input the next projections save: with tp > 1 "
            "all-gathered from Shard(1) to Replicate first (PrepareModuleInput), so the whole sequence; in "
            "FP8 with Float8 and tp > 1 (PrepareFloat8ModuleInput casts before the all-gather)",
        ),
    ]


def eager_tensors(sw: Switches, moe: bool = False) -> list[Component]:
    """Everything eager autograd keeps of one TransformerBlock without checkpointing: two norms (each output
    all-gathered over t before the projections save it), Q, K and V after repeat_kv (a heads each: the expand is
    copied) and the flash kernel's output (wo's input, the same storage) and logsumexp, and the FFN's w1 output, SiLU
    output, w3 output and their product (model.py at 9dec370; listed at tp = 1 and 2 by benchmarks/torch_saved.py).
    With Float8 at tp > 1 the norms' gathered outputs and the product are saved as their FP8 casts, and wo keeps an
    FP8 cast of its input beside the flash output (Float8RowwiseParallel casts before its matmul). An MoE block (moe)
    keeps the ffn norm's tensors but its output (the gate saves an fp32 copy; the shared experts save it) and the
    MoE's (moe.py)."""
    q8 = fp8_tp(sw)
    gemm = B_a - q8 * (B_a - 1)  # a saved GEMM input's bytes: FP8 under Float8's TP styles
    return [
        *rms_norm("attention_norm", gemm),
        *flash_attention(),
        token_tensor("wo_input_fp8", a * dh, q8, True, "wo's FP8 cast of its input (Float8 at tp > 1)"),
        *(
            rms_norm("ffn_norm", gemm)[:3] + moe_tensors(sw) + [layer_weights()]
            if moe
            else [
                *rms_norm("ffn_norm", gemm),
                token_tensor("w1_out", f, B_a, True, "w1 output, saved by SiLU"),
                token_tensor("silu_out", f, B_a, True, "SiLU(w1 x), saved by the product"),
                token_tensor("w3_out", f, B_a, True, "w3 output, saved by the product"),
                token_tensor(
                    "ffn_product",
                    f,
                    gemm,
                    True,
                    "SiLU(w1 x) * w3 x, w2's saved input (its FP8 cast with Float8 at tp > 1)",
                ),
            ]
        ),
    ]


def unchecked_tensors(sw: Switches, moe: bool = False) -> list[Component]:
    """What a block (an MoE block: moe) keeps without checkpointing: eager autograd's tensors, or with --compile the
    partitioner's (dense blocks only: torchtitan's MoE is refused with --compile)."""
    if sw.compiled:
        return compiled_tensors(sw)
    return eager_tensors(sw, moe)


def layer_tensors(sw: Switches, moe: bool = False) -> list[Component]:
    """What one TransformerBlock keeps for backward per micro batch. none, and a block per-layer selective
    checkpointing leaves alone (--ac-every): eager_tensors. full: its input (ptd_checkpoint_wrapper). selective:
    op-level SAC, the outputs of aten.mm but every second one (of wq, wk, wv, wo, w1, w3, w2: wq, wv, w1, w2), of the
    flash attention kernel and of the TP reduce-scatters, with the block's input (_save_list and its policy); an MoE
    block (moe) under torchtitan 0.3.0's policy (moe.moe_selective)."""
    if sw.recompute == "none" or sw.ac_every:
        return unchecked_tensors(sw, moe)
    if sw.recompute == "full":
        return [block_input()]
    if moe:
        return moe_selective(sw)
    if sw.compiled:
        return compiled_selective(sw)
    tp = tensor_parallel()
    return [
        block_input(),
        *sac_attention(True),
        token_tensor(
            "wo_reduce_scatter", h, tp * B_a, True, "reduce_scatter_tensor output of the row-parallel wo (t > 1)"
        ),
        token_tensor("w1_out", f, B_a, True, "aten.mm output of w1, the gate before SiLU [b, s, f / t]"),
        token_tensor(
            "w2_out", h, B_a, False, "aten.mm output of w2 [b, s, h]: partial sums before the reduce-scatter when t > 1"
        ),
        token_tensor(
            "w2_reduce_scatter", h, tp * B_a, True, "reduce_scatter_tensor output of the row-parallel w2 (t > 1)"
        ),
    ]


def stage_activation(sw: Switches, layers: sp.Expr, moe_layers: sp.Expr = 0) -> sp.Expr:
    """Bytes `layers` blocks, `moe_layers` of them MoE blocks, keep for one micro batch: each its layer_tensors, or
    with per-layer selective checkpointing (selective_ac_option = n_ac; dense models only) floor(layers / n_ac) blocks
    their input and the others everything (parallelize_llama.py: ptd_checkpoint_wrapper._count, a module-wide
    counter, checkpoints block n when n % n_ac == 0)."""
    per_layer = sp.Add(*(part.expr for part in layer_tensors(sw)))
    if sw.moe:
        per_moe = sp.Add(*(part.expr for part in layer_tensors(sw, moe=True)))
        return (layers - moe_layers) * per_layer + moe_layers * per_moe
    if not sw.ac_every:
        return layers * per_layer
    checkpointed = sp.floor(layers / n_ac)
    return (layers - checkpointed) * per_layer + checkpointed * block_input().expr


def output_tensors(sw: Switches) -> list[Component]:
    """Last stage, one micro batch, what the loss's backward and the blocks' backward both find: the final norm's
    tensors (not checkpointed; its output is the LM head's saved input, with tp > 1 all-gathered over the sequence by
    the head's ColwiseParallel(input_layouts=Shard(1)) as a block's norms are by PrepareModuleInput) and the int64
    targets the loss saves (the loss's own fp32 tensors are in `transient`; train.py deletes pred, the bf16 logits,
    before backward)."""
    return [*rms_norm("final_norm"), token_tensor("targets", 1, INT64, False, "int64 labels [b, s], saved by the loss")]


def output_layer(sw: Switches) -> Component:
    return Component(
        "output_layer",
        sp.Add(*(part.expr for part in output_tensors(sw))),
        "the final norm's tensors (8*s*b*h + 4*s*b) and the int64 targets, one micro batch (torchtitan "
        "train.py; the loss's fp32 tensors: transient)",
    )
