"""--recompute-modules mlp: a dense layer's MLP under Megatron-Core's checkpoint.

Source of truth: megatron-core 0.16.1 transformer/transformer_layer.py (recompute_mlp is set for "mlp" only where the
layer is not an MoE layer; _forward_mlp runs self.mlp under tensor_parallel.checkpoint, or te_checkpoint with FP8,
whose forward runs without grad and saves its input alone: with Transformer Engine's layer spec pre_mlp_layernorm is
an IdentityOp and the norm lives in linear_fc1, so that input is the residual stream after attention; the
bias-dropout-add after the MLP is outside the checkpoint). Tolerance: exact (sympy expressions and names)."""

import sympy as sp

from symbolic.components.activations import layer_tensors, recomputed_tensors
from symbolic.config.switches import Switches
from symbolic.config.symbols import B_a, b, c, f, h, s, t

SWIGLU = Switches(recompute="selective", modules="core_attn", mlp="swiglu", dropout=True)
MLP = Switches(recompute="selective", modules="core_attn+mlp", mlp="swiglu", dropout=True)


def _names(sw: Switches, moe: bool = False) -> set[str]:
    return {part.name for part in layer_tensors(sw, moe=moe)}


def test_a_dense_layer_keeps_the_checkpoint_input_and_the_dropout_mask_alone():
    dropped = _names(SWIGLU) - _names(MLP)
    assert dropped == {"mlp_input", "gate", "up", "swiglu", "down_input"}
    assert {"norm2_input", "mlp_dropout_mask"} <= _names(MLP)


def test_what_it_drops_by_hand_and_reruns_in_the_backward():
    """Per layer and micro batch with SP and CP: the normed input [s b h / (t c)] and gate, up, SiLU(gate), their product
    [s b f / t] each, in bf16 (B_a); the same tensors are the working set its backward rebuilds."""
    by_hand = B_a * s * b * (h + 4 * f) / (t * c)
    saved = sum(p.expr for p in layer_tensors(SWIGLU)) - sum(p.expr for p in layer_tensors(MLP))
    assert sp.simplify(saved - by_hand) == 0
    assert sp.simplify(recomputed_tensors(MLP) - by_hand) == 0


def test_moe_layers_and_the_local_spec():
    """An MoE layer's MLP is not checkpointed (is_moe_layer); with --transformer-impl local the separate
    pre_mlp_layernorm's output is the checkpoint's input and stays."""
    assert _names(MLP, moe=True) == _names(SWIGLU, moe=True)
    local = Switches(recompute="selective", modules="core_attn+mlp", mlp="swiglu", dropout=True, local=True)
    assert "mlp_input" in _names(local) and "gate" not in _names(local)
