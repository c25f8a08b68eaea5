"""Attention whose layers differ by kind (MiMo-V2-Flash): value heads d_v narrower than the query/key heads dh (V and O
at d_v), and sliding-window layers (swa_layers) with their own k_w KV heads and, only there, a sink logit per head;
checked in one line each. Sources: transformers 5.x modular_mimo_v2_flash.py (MiMoV2FlashAttention: q_proj
[h, a dh], k_proj [h, k dh], v_proj [h, k d_v], o_proj [a d_v, h]; sinks [a] where add_swa_attention_sink_bias or
add_full_attention_sink_bias says so for the layer's kind)."""

from __future__ import annotations

from .bounds import positive
from .errors import ConfigError
from .hybrid import _indices


def check_swa(shape) -> None:
    """v_dim beside GQA (v_dim == dh is the plain model: stored as 0), layer_window one window a layer, and swa_layers
    with swa_k KV heads dividing a and swa_sinks, all or none; none of it beside MLA (whose v_dim is its own), hybrid mixers or sinks in every layer."""
    if not shape.mla and shape.v_dim == shape.head_dim:
        object.__setattr__(shape, "v_dim", 0)
    positive(shape.name, "swa_k", shape.swa_k, zero=True)
    window = tuple(shape.layer_window)  # a --json record's list read back as the tuple
    if window and (
        len(window) != shape.L or any(isinstance(w, bool) or not isinstance(w, int) or w < 0 for w in window)
    ):
        raise ConfigError(
            f"model {shape.name!r}: layer_window holds a window (0: none) for each of the L={shape.L} layers, "
            f"got {len(window)} entries"
        )
    object.__setattr__(shape, "layer_window", window)
    object.__setattr__(shape, "swa_layers", _indices(shape, "swa_layers"))
    if bool(shape.swa_layers) != bool(shape.swa_k) or shape.swa_sinks and not shape.swa_layers:
        raise ConfigError(
            f"model {shape.name!r}: swa_layers, their KV heads swa_k and swa_sinks go together, got "
            f"{len(shape.swa_layers)} layers, swa_k={shape.swa_k}, swa_sinks={shape.swa_sinks}"
        )
    if shape.swa_k and shape.a % shape.swa_k:
        raise ConfigError(
            f"model {shape.name!r}: heads a={shape.a} are not divisible by the sliding-window layers' "
            f"KV heads swa_k={shape.swa_k}"
        )
    if (shape.swa_layers or shape.v_dim and not shape.mla) and (
        shape.mla
        or shape.sinks
        or shape.linear_layers
        or shape.mamba_layers
        or shape.mixerless_layers
        or shape.attn_gate
        or shape.mtp
    ):
        raise ConfigError(
            f"model {shape.name!r}: value heads of their own width and sliding-window layers of their "
            "own KV heads are modelled beside plain GQA attention (MiMo-V2-Flash), not beside MLA, "
            "sinks in every layer, hybrid mixers, gated attention or MTP modules"
        )
