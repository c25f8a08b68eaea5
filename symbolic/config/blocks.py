"""A block config per layer (DeciLM / nemotron-nas: Llama-3.3-Nemotron-Super-49B, Llama-3.1-Nemotron-Ultra-253B): each
layer's attention (its KV heads, or none) and SwiGLU MLP (its width, or none), checked in one line each. Sources: the
checkpoints' remote code (modeling_decilm.py DeciLMDecoderLayer: input_layernorm and self_attn only where attention is
not no_op, post_attention_layernorm and mlp only where the FFN is not), Megatron-Core 0.16.1
transformer/heterogeneous/heterogeneous_config.py (HeterogeneousTransformerConfig.per_block_parameters) and
models/gpt/heterogeneous/heterogeneous_layer_specs.py (IdentityOp for a no-op part)."""

from __future__ import annotations

from .bounds import positive
from .errors import ConfigError

FFN_ROUND = 256  # a layer's SwiGLU width rounds up to a multiple of this (MLPConfig.find_multiple(n, 256))


def ffn_width(ffn_mult: float, h: int) -> int:
    """A layer's SwiGLU width from its ffn_mult: int(2 ffn_mult h / 3) rounded up to a multiple of 256 (Megatron-Core
    0.16.1 heterogeneous_config.py MLPConfig.ffn_mult_to_intermediate_size; the remote code's
    _ffn_mult_to_intermediate_size)."""
    width = int(2 * ffn_mult * h / 3)
    return width + (-width % FFN_ROUND)


def check_blocks(shape) -> None:
    """layer_k and layer_f, both empty (every layer alike) or one entry per layer: KV heads dividing a or 0 (no
    attention), a SwiGLU width or 0 (no MLP); k and f the largest of them (k = a where no layer has attention), so the
    letters keep their meaning; Llama's layers only (no experts, MLA, hybrid mixers or other per-layer kinds)."""
    for field in ("layer_k", "layer_f"):
        object.__setattr__(shape, field, tuple(getattr(shape, field)))
    if not (shape.layer_k or shape.layer_f):
        return
    if not len(shape.layer_k) == len(shape.layer_f) == shape.L:
        raise ConfigError(
            f"model {shape.name!r}: layer_k and layer_f give each of the L={shape.L} layers its KV heads "
            f"and MLP width, got {len(shape.layer_k)} and {len(shape.layer_f)} entries"
        )
    for field in ("layer_k", "layer_f"):
        for value in getattr(shape, field):
            positive(shape.name, field, value, zero=True)
    if any(k and shape.a % k for k in shape.layer_k):
        raise ConfigError(
            f"model {shape.name!r}: every layer's KV heads (layer_k) must divide a={shape.a}, got "
            f"{sorted(set(shape.layer_k))}"
        )
    if shape.k != (max(shape.layer_k) or shape.a) or shape.f != max(shape.layer_f):
        raise ConfigError(
            f"model {shape.name!r}: with a block config per layer k and f are the largest of layer_k "
            f"and layer_f ({max(shape.layer_k) or shape.a} and {max(shape.layer_f)}), got k={shape.k}, "
            f"f={shape.f}"
        )
    if (
        shape.E
        or shape.mla
        or shape.mtp
        or shape.sinks
        or shape.sandwich
        or shape.attn_gate
        or shape.positions
        or shape.linear_layers
        or shape.mamba_layers
        or shape.blocks
        or shape.swa_layers
        or shape.vision
    ):
        raise ConfigError(
            f"model {shape.name!r}: a block config per layer is modelled for Llama's layers (DeciLM): "
            "not beside experts, MLA, MTP, sinks, sandwich norms, gated attention, learned positions, "
            "hybrid mixers, one-part blocks, sliding-window layers or a vision tower"
        )
