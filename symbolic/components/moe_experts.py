"""The routed experts' saved tensors per GPU for one micro batch, as Megatron-Core 0.16.1's TEGroupedMLP keeps them
(transformer/moe/experts.py): SwiGLU experts with the fused weighted SwiGLU, GeLU or squared-ReLU experts, and the
fused weighted squared ReLU; over the R rows of moe_rows."""

from __future__ import annotations

from ..config.switches import Switches
from ..config.symbols import B_a, f_e, t_e
from .base import Component
from .moe_rows import expert_rows, rows, token_width


def _kept(*table: tuple) -> list[Component]:
    """The experts' [R, width] tensors in the activations' dtype, one a row (name, width, doc) of `table`."""
    R = expert_rows()
    return [rows(name, R, width, B_a, doc) for name, width, doc in table]


def expert_tensors(sw: Switches) -> list[Component]:
    """Routed experts, per GPU (TEGroupedMLP with the fused weighted SwiGLU, experts.py, fused_bias_swiglu.py): the
    R token rows they receive, fc1's output [R, 2 f_e / t_e] (gate and up), the router probability of each row, and
    the SwiGLU output [R, f_e / t_e] (fc2's input); the unpermute keeps only indices (the probabilities are applied
    in the activation). GeLU or squared-ReLU experts (no --swiglu) in their place: unary_expert_tensors."""
    if sw.mlp != "swiglu":
        return unary_expert_tensors(sw)
    return _kept(
        (
            "expert_input",
            token_width(sw),
            "tokens the experts receive, permuted by expert, all-to-all'd over e and "
            "all-gathered over t_e: the grouped fc1's input, kept for its weight gradient",
        ),
        (
            "expert_fc1_output",
            2 * f_e / t_e,
            "fc1's output, gate and up of each received token [R, 2 f_e / t_e], kept by the weighted SwiGLU's backward",
        ),
        (
            "expert_probs",
            1,
            "the router probability of each received row [R, 1] in the router dtype "
            "(bf16 unless --moe-router-dtype fp32), kept by the weighted SwiGLU",
        ),
        (
            "expert_fc2_input",
            f_e / t_e,
            "the weighted SwiGLU output [R, f_e / t_e], the grouped fc2's input, kept for its weight gradient",
        ),
    ) + clamped_glu_tensors(sw)


def clamped_glu_tensors(sw: Switches) -> list[Component]:
    """gpt-oss's clamped GLU (its swiglu_limit; moe_bias marks the family): Megatron-Bridge 0.3.1's GPT-OSS provider
    sets activation_func_clamp_value 7.0 with quick_gelu, and megatron-core 0.16.1 fusions/fused_bias_geglu.py
    weighted_bias_quick_geglu_impl clamps gate and up in plain PyTorch (clamp keeps its input: fc1's output,
    expert_fc1_output) and torch.cat's the two for WeightedBiasQuickGeGLUFunction, which keeps that copy
    (records/expert-saved-gptoss-cpu.jsonl: two [R, 2 f_e] bf16 storages clamped, one without)."""
    if not sw.moe_bias:
        return []
    return _kept(
        (
            "expert_fc1_clamped",
            2 * f_e / t_e,
            "the clamped gate and up concatenated [R, "
            "2 f_e / t_e], kept by the fused weighted quick-GeGLU (fc1's output stays with the clamps)",
        )
    )


def unary_expert_tensors(sw: Switches) -> list[Component]:
    """GeLU or squared-ReLU routed experts (TEGroupedMLP bias_act_func without --swiglu, megatron-core 0.16.1
    transformer/moe/experts.py: activation_func(fc1_output) * permuted_probs, unfused): the R received rows, the
    tensor the activation keeps (F.gelu its input, fc1's output; squared_relu = pow(relu(x), 2) relu's output, which
    the pow reads too), the activation's output kept by the multiplication by the probabilities (for their
    gradient), the probabilities [R, 1], and the product, fc2's input. The fused weighted squared ReLU in their
    place: fused_srelu_expert_tensors."""
    if sw.srelu_fusion and sw.mlp == "relu2":
        return fused_srelu_expert_tensors(sw)
    kept = (
        ("expert_fc1_output", "fc1's output [R, f_e / t_e], kept by F.gelu's backward")
        if sw.mlp == "gelu"
        else ("expert_relu_output", "relu(fc1 output) [R, f_e / t_e], kept by relu's and the square's backward")
    )
    return _kept(
        (
            "expert_input",
            token_width(sw),
            "tokens the experts receive, permuted by expert: the grouped fc1's input, kept for its weight gradient",
        ),
        (kept[0], f_e / t_e, kept[1]),
        (
            "expert_act_output",
            f_e / t_e,
            f"the {sw.mlp}'s output [R, f_e / t_e], kept by its product with the probabilities for their gradient",
        ),
        ("expert_probs", 1, "the router probability of each received row [R, 1], kept by the product"),
        (
            "expert_fc2_input",
            f_e / t_e,
            f"{sw.mlp}(fc1) x probs [R, f_e / t_e], the grouped fc2's input, kept for its weight gradient",
        ),
    )


def fused_srelu_expert_tensors(sw: Switches) -> list[Component]:
    """Squared-ReLU routed experts with --use-fused-weighted-squared-relu (megatron-core 0.16.1 and Megatron-LM
    d98e8a64 fusions/fused_weighted_squared_relu.py WeightedSquaredReLUFunction: save_for_backward(input, weights),
    relu(x)^2 x probs recomputed in its backward; experts.py bias_act_func): the R received rows, fc1's output and
    the probabilities the fused function keeps, and its output, fc2's input; no relu output or square of their own."""
    return _kept(
        (
            "expert_input",
            token_width(sw),
            "tokens the experts receive, permuted by expert: the grouped fc1's input, kept for its weight gradient",
        ),
        (
            "expert_fc1_output",
            f_e / t_e,
            "fc1's output [R, f_e / t_e], kept by the fused weighted "
            "squared ReLU (WeightedSquaredReLUFunction.save_for_backward)",
        ),
        (
            "expert_probs",
            1,
            "the router probability of each received row [R, 1], kept by the fused "
            "weighted squared ReLU for the probabilities' gradient",
        ),
        (
            "expert_fc2_input",
            f_e / t_e,
            "relu(fc1)^2 x probs [R, f_e / t_e], the fused function's "
            "output and the grouped fc2's input, kept for its weight gradient",
        ),
    )
