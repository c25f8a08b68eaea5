"""Gemma 4's layers as transformers 5.25.0 builds them (models/gemma4/modeling_gemma4.py: Gemma4TextModel,
Gemma4TextDecoderLayer, Gemma4TextAttention, Gemma4TextMLP, Gemma4TextRouter, Gemma4TextExperts): the checks of
ModelShape's Gemma 4 fields and its parameter count, layer by layer. No sympy."""

from __future__ import annotations

from .errors import ConfigError


def check_gemma4(shape) -> None:
    """ModelShape's Gemma 4 fields (g_layers, g_dh, g_k, k_eq_v, kv_shared, wide_shared, ple, ple_v, moe_beside):
    each set only on a Gemma 4 shape (g_dh > 0), and consistent with its layers."""
    name, L = shape.name, shape.L
    object.__setattr__(shape, "g_layers", tuple(shape.g_layers))  # a --json shape's list read back
    others = (
        shape.g_layers,
        shape.g_k,
        shape.k_eq_v,
        shape.kv_shared,
        shape.wide_shared,
        shape.ple,
        shape.ple_v,
        shape.moe_beside,
    )
    if not shape.g_dh:
        if any(others):
            raise ConfigError(
                f"model {name!r}: g_layers, g_k, k_eq_v, kv_shared, wide_shared, ple, ple_v and "
                "moe_beside describe Gemma 4's layers, but g_dh=0"
            )
        return
    full = tuple(shape.g_layers)
    if (
        not full
        or any(not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < L for i in full)
        or len(set(full)) != len(full)
        or L - 1 not in full
    ):
        raise ConfigError(
            f"model {name!r}: g_layers must be distinct layer indices below L={L}, the last one "
            f"among them (transformers makes the last layer full attention), got {list(full)}"
        )
    object.__setattr__(shape, "g_layers", tuple(sorted(full)))  # the order transformers' layer_types give them
    if not shape.g_k or shape.a % shape.g_k:
        raise ConfigError(
            f"model {name!r}: heads a={shape.a} are not divisible by the full layers' KV heads g_k={shape.g_k}"
        )
    if not 0 <= shape.kv_shared < L:
        raise ConfigError(
            f"model {name!r}: kv_shared={shape.kv_shared} layers reusing K/V need 0 <= kv_shared < "
            f"L={L} (every layer reusing another's is an assistant model's: not modelled)"
        )
    first = L - shape.kv_shared
    if shape.kv_shared and {i in full for i in range(first)} != {i in full for i in range(L)}:
        raise ConfigError(
            f"model {name!r}: each kind of layer reusing K/V (full, sliding) needs an earlier layer of "
            "its kind that computes them (transformers' kv_sharing_modes)"
        )
    if (shape.ple > 0) != (shape.ple_v > 0):
        raise ConfigError(f"model {name!r}: per-layer inputs need both their width ple and their table's rows ple_v")
    if shape.moe_beside != bool(shape.E) or shape.dense_layers or shape.f_s or shape.shared_gate:
        raise ConfigError(
            f"model {name!r}: Gemma 4's MoE block (moe_beside) is E routed experts in every layer "
            "beside the dense MLP, with no shared experts"
        )
    if (
        shape.mla
        or shape.qk_norm != "head"
        or shape.mlp != "swiglu"
        or shape.norm != "rms"
        or shape.mtp
        or shape.qkv_bias
        or shape.o_bias
        or shape.mlp_bias
        or shape.sinks
        or shape.attn_softcap
        or not shape.sandwich
        or shape.linear_layers
        or shape.mamba_layers
        or shape.swa_layers
    ):
        raise ConfigError(
            f"model {name!r}: Gemma 4's layers are GQA with per-head q/k norms, sandwich RMSNorms and "
            "a GeGLU MLP, without biases, sinks or other layer kinds"
        )


def gemma4_attention(shape, i: int) -> int:
    """Parameters of layer i's attention: q [h, a dh_i], its norm [dh_i], o [a dh_i, h]; where the layer computes
    its own K and V (not one of the last kv_shared), k [h, k_i dh_i], its norm [dh_i] and v [h, k_i dh_i] but on a
    full layer with k_eq_v (its values are its keys); v_norm has no weight. A full layer's dh_i, k_i are g_dh, g_k."""
    h, a = shape.h, shape.a
    dh, k = (shape.g_dh, shape.g_k) if i in shape.g_layers else (shape.dh, shape.k)
    own_kv = i < shape.L - shape.kv_shared
    values = 0 if shape.k_eq_v and i in shape.g_layers else 1
    return 2 * h * a * dh + dh + ((1 + values) * h * k * dh + dh if own_kv else 0)


def gemma4_layer(shape, i: int) -> int:
    """Parameters of layer i: its attention, a GeGLU MLP (gate, up, down: 2f wide on a layer reusing K/V with
    wide_shared, use_double_wide_mlp), four RMSNorms [h]; with per-layer inputs the gate [h, d_pl], the projection
    [d_pl, h] and their norm [h]; with the MoE block the router (proj [h, E], scale [h], per_expert_scale [E]), the E
    experts (gate_up [2 f_e, h], down [h, f_e]) and three more RMSNorms [h]. layer_scalar is a buffer."""
    h, E = shape.h, shape.E
    f = 2 * shape.f if shape.wide_shared and i >= shape.L - shape.kv_shared else shape.f
    ple = 2 * h * shape.ple + h if shape.ple else 0
    moe = h * E + h + E + E * shape.expert_count + 3 * h if shape.moe_beside else 0
    return gemma4_attention(shape, i) + 3 * h * f + 4 * h + ple + moe


def gemma4_count(shape) -> int:
    """Every parameter of Gemma4ForCausalLM: the embedding [v, h], the L layers, the final norm [h], the LM head
    unless tied; with per-layer inputs their table [v_pl, L d_pl], the model projection [h, L d_pl] and its norm
    [d_pl]."""
    h, L, ple = shape.h, shape.L, shape.ple
    per_layer = shape.ple_v * L * ple + h * L * ple + ple if ple else 0
    return (
        shape.v * h + per_layer + sum(gemma4_layer(shape, i) for i in range(L)) + h + (0 if shape.tied else h * shape.v)
    )


def gemma4_mechanisms(shape) -> str:
    """What of Gemma 4's layers a shape has, in words (the recipes' refusal names them); "" for another model."""
    if not shape.g_dh:
        return ""
    return ", ".join(
        part
        for part, present in (
            (
                f"full-attention layers of {shape.g_dh}-wide heads and {shape.g_k} KV heads"
                + (" whose values are their keys" if shape.k_eq_v else ""),
                True,
            ),
            (
                f"{shape.kv_shared} layers reusing an earlier layer's K/V"
                + (" with 2f-wide MLPs" if shape.wide_shared else ""),
                shape.kv_shared,
            ),
            (f"per-layer input embeddings [{shape.ple_v}, L x {shape.ple}]", shape.ple),
            (f"{shape.E} experts beside each layer's dense MLP", shape.moe_beside),
        )
        if present
    )
