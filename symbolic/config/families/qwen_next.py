"""Gated DeltaNet hybrids: Qwen3-Next and Qwen3.5's language models (transformers 5.25.0 Qwen3NextConfig,
Qwen3_5TextConfig, Qwen3_5MoeTextConfig; a qwen3_5 / qwen3_5_moe checkpoint's text_config is read with --text-only)."""

from __future__ import annotations

from ..hfkeys import BASE, Only, Reader, false_or_null, number, TRUE_OR_FALSE
from .qwen_moe import QWEN_MOE, qwen_moe
from .registry import family

LINEAR = (
    "linear_num_key_heads",
    "linear_num_value_heads",
    "linear_key_head_dim",
    "linear_value_head_dim",
    "linear_conv_kernel_dim",
)
LAYER_KINDS = ("linear_attention", "full_attention")  # what layer_types may say in a hybrid
HYBRID = (
    BASE
    + LINEAR
    + (
        "attention_bias",
        "layer_types",
        "full_attention_interval",
        "partial_rotary_factor",
        "mtp_num_hidden_layers",
        "mtp_use_dedicated_embeddings",
        "attn_output_gate",
    )
)
HYBRID_VALUES = {
    "attention_bias": TRUE_OR_FALSE,
    "layer_types": Only(
        lambda x: x is None or isinstance(x, list) and all(kind in LAYER_KINDS for kind in x),
        "Gated DeltaNet or softmax attention in every layer (" + ", ".join(LAYER_KINDS) + ")",
    ),
    # RoPE over a fraction of each head (0.25): no parameter, no buffer
    "partial_rotary_factor": Only(lambda x: number(x) and 0 < x <= 1, "a fraction of the head from 0 to 1"),
    # the multi-token-prediction module shares the embedding (as DeepSeek-V3's); one of its own is not modelled
    "mtp_use_dedicated_embeddings": Only(false_or_null, "the embedding shared with the model (false)"),
    # the published files' attention is gated (Qwen3NextAttention, Qwen3_5Attention always are)
    "attn_output_gate": Only(lambda x: x in (True, None), "the gated attention Qwen3-Next and Qwen3.5 have (true)"),
}


def hybrid(raw: dict, r: Reader) -> dict:
    """The layers' kinds from layer_types, or (absent) every full_attention_interval-th layer softmax attention and
    the others Gated DeltaNet (the configuration classes' __post_init__; interval 4); the Gated DeltaNet's heads and
    widths; gated softmax attention with per-head q/k norms and optional Q, K, V, O biases (attention_bias); the
    multi-token-prediction modules the published checkpoints hold (mtp_num_hidden_layers: mtp.* tensors, which
    transformers skips on load and mem4d counts, as DeepSeek-V3's; their layer is a softmax-attention layer)."""
    L = r.count("num_hidden_layers")
    kinds = r.get("layer_types")
    if kinds is None:
        every = r.count("full_attention_interval", 4)
        kinds = ["linear_attention" if (i + 1) % every else "full_attention" for i in range(L)]
    elif len(kinds) != L:
        raise r.fail("layer_types", f"must list the kind of each of the {L} layers (num_hidden_layers)")
    bias = r.flag("attention_bias")
    return {
        "linear_layers": tuple(i for i, kind in enumerate(kinds) if kind == "linear_attention"),
        **{
            field: r.count(key)
            for field, key in zip(("lin_k_heads", "lin_v_heads", "lin_k_dim", "lin_v_dim", "conv_width"), LINEAR)
        },
        "attn_gate": True,
        "qk_norm": "head",
        "qkv_bias": bias,
        "o_bias": bias,
        "mtp": r.count("mtp_num_hidden_layers", 0, zero=True),
    }


@family(
    "qwen3_next",
    HYBRID + QWEN_MOE + ("shared_expert_intermediate_size",),
    "Qwen3-Next (Gated DeltaNet hybrid)",
    values=HYBRID_VALUES,
)
def qwen3_next(raw: dict, r: Reader) -> dict:
    """Qwen3-Next (Qwen3NextDecoderLayer): three Gated DeltaNet layers to one gated softmax-attention layer, and
    Qwen2-MoE's mixture of experts (a sigmoid-gated shared expert) but in mlp_only_layers or off the
    decoder_sparse_step (a dense MLP of intermediate_size there)."""
    return {**hybrid(raw, r), **qwen_moe(raw, r, True)}


@family("qwen3_5_text", HYBRID, "Qwen3.5's language model (Gated DeltaNet hybrid)", values=HYBRID_VALUES)
def qwen3_5_text(raw: dict, r: Reader) -> dict:
    """Qwen3.5 dense (Qwen3_5DecoderLayer): Qwen3-Next's two layer kinds, a dense SwiGLU MLP of intermediate_size
    in every layer."""
    return hybrid(raw, r)


def _moe_letters(r: Reader) -> dict:
    """Qwen3.5-MoE's base letters: no intermediate_size (every layer an MoE layer); f is read as the shared expert's
    width, the one dense-MLP-shaped weight its layers hold (what Megatron-Core's dummy weight gradients take)."""
    return {
        "h": r.count("hidden_size"),
        "f": r.count("shared_expert_intermediate_size"),
        "a": r.count("num_attention_heads"),
        "k": r.count("num_key_value_heads", r.count("num_attention_heads")),
        "L": r.count("num_hidden_layers"),
        "v": r.count("vocab_size"),
        "tied": r.flag("tie_word_embeddings"),
        "head_dim": r.count("head_dim", 0) or None,
    }


@family(
    "qwen3_5_moe_text",
    tuple(key for key in HYBRID if key != "intermediate_size")
    + (
        "num_experts",
        "num_experts_per_tok",
        "moe_intermediate_size",
        "shared_expert_intermediate_size",
        "mlp_only_layers",
    ),
    "Qwen3.5-MoE's language model (Gated DeltaNet hybrid)",
    letters=_moe_letters,
    values=HYBRID_VALUES
    | {
        # the published files carry Qwen3-MoE's key, empty; Qwen3_5MoeDecoderLayer builds an MoE in every layer
        "mlp_only_layers": Only(
            lambda x: x in ([], None), "an MoE in every layer ([]): Qwen3_5MoeDecoderLayer builds no dense layer"
        )
    },
)
def qwen3_5_moe_text(raw: dict, r: Reader) -> dict:
    """Qwen3.5-MoE (Qwen3_5MoeDecoderLayer): Qwen3-Next's two layer kinds and an MoE in every layer (router [h, E],
    num_experts experts of moe_intermediate_size, a sigmoid-gated shared expert)."""
    f_s = r.count("shared_expert_intermediate_size")
    return {
        **hybrid(raw, r),
        "E": r.count("num_experts"),
        "k_e": r.count("num_experts_per_tok"),
        "f_e": r.count("moe_intermediate_size"),
        "f_s": f_s,
        "shared_gate": True,
    }
