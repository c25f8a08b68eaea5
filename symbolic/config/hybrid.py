"""A hybrid model's fields checked in one line each: Gated DeltaNet layers (Qwen3-Next, Qwen3.5) and Mamba-2 layers
with Nemotron-H's one-part blocks (a mixer alone or an MLP alone), beside GQA softmax attention."""

from __future__ import annotations

from .bounds import positive
from .errors import ConfigError

GDN_CHUNK = 64  # tokens per chunk of the chunked gated delta rule: fla's chunk_gated_delta_rule's default BT (fla-core
# 0.6.0), which jaxcheck's rule uses too (jaxcheck.model.gdn); a plain int, so the rule table reads it without sympy

GDN_SIZES = ("lin_k_heads", "lin_v_heads", "lin_k_dim", "lin_v_dim")
SSM_SIZES = ("ssm_heads", "ssm_head_dim", "ssm_state", "ssm_groups")
# heads split in groups: (where the model has them, the count, the group count, what the two are)
_MULTIPLES = (
    ("gdn", "lin_v_heads", "lin_k_heads", "Gated DeltaNet value heads must be a multiple of key heads"),
    ("mamba", "ssm_heads", "ssm_groups", "Mamba-2 heads must be a multiple of its groups"),
)
LAYER_SETS = ("linear_layers", "mamba_layers", "mixerless_layers", "mlpless_layers")


def _indices(shape, field: str) -> tuple[int, ...]:
    """A field of distinct layer indices below L, sorted (one line otherwise)."""
    got = tuple(getattr(shape, field))
    if any(not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < shape.L for i in got) or len(set(got)) != len(
        got
    ):
        raise ConfigError(
            f"model {shape.name!r}: {field} must be distinct layer indices below L={shape.L}, got {list(got)}"
        )
    return tuple(sorted(got))


def _sizes(shape, names: tuple[str, ...], kind: str, present: bool) -> None:
    """The sizes of a layer kind: all positive where the model has such layers, all 0 where it has none."""
    values = {name: getattr(shape, name) for name in names}
    for name, value in values.items():
        positive(shape.name, name, value, zero=True)
    if present and not all(values.values()):
        raise ConfigError(
            f"model {shape.name!r}: {kind} layers need positive " + ", ".join(f"{n}={v}" for n, v in values.items())
        )
    if not present and any(values.values()):
        raise ConfigError(f"model {shape.name!r}: {', '.join(names)} describe {kind} layers, but the model has none")


def check_hybrid(shape) -> None:
    """Distinct indices below L in each layer set; each kind's sizes positive exactly where it has layers; n_gv a
    multiple of n_gk and n_m of g_m; K_c where a convolution is; no layer both without a mixer and without an MLP,
    nor a Gated DeltaNet or Mamba-2 mixer in a mixerless layer; softmax attention of GQA kind beside them (and in a
    multi-token-prediction module's layer, which repeats the last layer); a mixer-alone layer without experts."""
    for field in LAYER_SETS:
        object.__setattr__(shape, field, _indices(shape, field))
    _sizes(shape, GDN_SIZES, "Gated DeltaNet", shape.gdn)
    _sizes(shape, SSM_SIZES, "Mamba-2", shape.mamba)
    positive(shape.name, "conv_width", shape.conv_width, zero=True)
    if bool(shape.conv_width) != (shape.gdn or shape.mamba):
        raise ConfigError(
            f"model {shape.name!r}: conv_width (K_c) is the width of a Gated DeltaNet or Mamba-2 "
            f"convolution: positive exactly where the model has such layers, got {shape.conv_width}"
        )
    if shape.ssm_conv_bias and not shape.mamba:
        raise ConfigError(f"model {shape.name!r}: ssm_conv_bias describes Mamba-2 layers, but the model has none")
    for present, many, few, what in _MULTIPLES:
        if getattr(shape, present) and getattr(shape, many) % getattr(shape, few):
            raise ConfigError(
                f"model {shape.name!r}: {what}, got {many}={getattr(shape, many)}, {few}={getattr(shape, few)}"
            )
    mixers = set(shape.linear_layers) | set(shape.mamba_layers)
    if (
        set(shape.linear_layers) & set(shape.mamba_layers)
        or mixers & set(shape.mixerless_layers)
        or set(shape.mixerless_layers) & set(shape.mlpless_layers)
    ):
        raise ConfigError(
            f"model {shape.name!r}: a layer holds one token mixer (attention, Gated DeltaNet or "
            "Mamba-2) or none, and not both no mixer and no MLP"
        )
    if not (mixers or shape.blocks):
        return
    if shape.mla or shape.sinks or shape.sandwich or shape.attn_softcap or shape.qk_norm == "full":
        raise ConfigError(
            f"model {shape.name!r}: Gated DeltaNet and Mamba-2 layers are modelled beside GQA softmax "
            "attention (Qwen3-Next, Qwen3.5, Nemotron-H), not beside MLA, sinks, sandwich norms, "
            "soft-capping or whole-width q/k norms"
        )
    # learned positions beside Mamba-2: Megatron-LM's mamba_builders.py passes --position-embedding-type (default
    # learned_absolute) to MambaModel, whose LanguageModelEmbedding then holds a [max_position_embeddings, h] table
    # (megatron-core 0.16.1 models/mamba/mamba_model.py, common/embeddings/language_model_embedding.py): the first
    # stage's parameters, as in a GPT model; beside Gated DeltaNet (jaxcheck builds those too) they are not modelled
    if shape.positions and shape.linear_layers:
        raise ConfigError(
            f"model {shape.name!r}: learned positions are modelled beside Mamba-2 layers, not beside "
            "Gated DeltaNet layers"
        )
    if shape.moe and not set(shape.mlpless_layers) <= set(shape.dense_layers):
        raise ConfigError(
            f"model {shape.name!r}: a layer of a mixer alone has no MLP, so no experts: list it in dense_layers"
        )
    # Nemotron 3's MTP layer is an attention block and an MoE block (mtp_hybrid_override_pattern "*E"): the two-part
    # layer of attention and the last layer's MoE MLP that mtp_count and components.mtp count
    if shape.mtp and (shape.L - 1 in mixers or shape.blocks and not shape.is_moe_layer(shape.L - 1)):
        raise ConfigError(
            f"model {shape.name!r}: a multi-token-prediction module repeats the last layer: only a "
            "softmax-attention last layer with its MLP, or a hybrid's attention and MoE, is modelled"
        )
