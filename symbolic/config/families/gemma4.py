"""Gemma 4 config.json files (transformers 5.25.0's Gemma4TextConfig, models/gemma4/configuration_gemma4.py; a gemma4
checkpoint's text_config with --text-only): its layers as config/gemma4.py counts them."""

from __future__ import annotations

from ..hfkeys import ATTENTION_KINDS, BASE, Only, Reader, count_or_null, TRUE_OR_FALSE
from .gemma import GEMMA_VALUES
from .registry import family

GEMMA4 = BASE + (
    "hidden_activation",
    "final_logit_softcapping",
    "attention_bias",
    "use_bidirectional_attention",
    "layer_types",
    "global_head_dim",
    "num_global_key_value_heads",
    "per_layer_config",
    "attention_k_eq_v",
    "num_kv_shared_layers",
    "use_double_wide_mlp",
    "hidden_size_per_layer_input",
    "vocab_size_per_layer_input",
    "enable_moe_block",
    "num_experts",
    "top_k_experts",
    "moe_intermediate_size",
)


def _overrides(x) -> bool:
    """per_layer_config as Gemma4TextConfig writes it: layer index -> the full layers' head_dim (and KV heads)."""
    return (
        x is None
        or isinstance(x, dict)
        and all(
            isinstance(value, dict)
            and value
            and set(value) <= {"head_dim", "num_key_value_heads"}
            and all(count_or_null(n) and n is not None for n in value.values())
            for value in x.values()
        )
    )


GEMMA4_VALUES = {
    **{key: GEMMA_VALUES[key] for key in ("hidden_activation", "final_logit_softcapping", "attention_bias")},
    # "vision": image tokens attend to each other both ways, text tokens causally (the language model alone:
    # causal); "all" is an encoder's (EmbeddingGemma's), its window halved: not modelled
    "use_bidirectional_attention": Only(lambda x: x in (None, "vision"), "causal text attention (null or 'vision')"),
    "layer_types": Only(
        lambda x: x is None or isinstance(x, list) and all(kind in ATTENTION_KINDS for kind in x),
        "full or sliding-window attention layers",
    ),
    "per_layer_config": Only(_overrides, "the full layers' head_dim and num_key_value_heads by layer index"),
    **{key: TRUE_OR_FALSE for key in ("attention_k_eq_v", "use_double_wide_mlp", "enable_moe_block")},
}


def _kinds(r: Reader, L: int) -> tuple[int, ...]:
    """The full-attention layers: layer_types (the last one made full, as Gemma4TextConfig.__post_init__ does), or
    its default, a full layer after every five sliding ones."""
    kinds = r.get("layer_types")
    if kinds is None:
        return tuple(i for i in range(L) if (i + 1) % 6 == 0) + (() if L % 6 == 0 else (L - 1,))
    if len(kinds) != L:
        raise r.fail("layer_types", f"must name one kind per layer, L = {L}")
    return tuple(i for i, kind in enumerate(kinds) if kind == "full_attention" or i == L - 1)


def _full_heads(r: Reader, full: tuple[int, ...], dh: int, k: int) -> tuple[int, int]:
    """The full layers' head width and KV heads: global_head_dim (default 512) and, with attention_k_eq_v,
    num_global_key_value_heads (null: k); or a saved file's per_layer_config, one override for every full layer."""
    table = r.get("per_layer_config")
    if table is None:
        k_g = r.count("num_global_key_value_heads", k) if r.flag("attention_k_eq_v") else k
        return r.count("global_head_dim", 512), k_g
    for key in ("global_head_dim", "num_global_key_value_heads"):
        if r.get(key) is not None:
            raise r.fail(key, "given beside per_layer_config, which transformers reads in its place")
    rows = {int(index): value for index, value in table.items() if str(index).isdigit()}
    if (
        len(rows) != len(table)
        or sorted(rows) != list(full)
        or len({tuple(sorted(v.items())) for v in rows.values()}) > 1
    ):
        raise r.fail(
            "per_layer_config",
            "must override the full-attention layers alone, each alike (Gemma 4's "
            "global heads); other per-layer shapes are not modelled",
        )
    override = next(iter(rows.values()))
    return override.get("head_dim", dh), override.get("num_key_value_heads", k)


@family(
    "gemma4_text",
    GEMMA4,
    "Gemma 4 (global layers, shared K/V, per-layer inputs, MoE beside the MLP)",
    values=GEMMA4_VALUES,
)
def gemma4_text(raw: dict, r: Reader) -> dict:
    """Gemma 4 (Gemma4TextDecoderLayer): Gemma 3's sandwich-normed GeGLU layers with per-head q/k norms, full layers
    of their own head width and KV heads (values from the keys with attention_k_eq_v), the last num_kv_shared_layers
    reusing an earlier layer's K and V (their MLPs 2f wide with use_double_wide_mlp), per-layer input embeddings of
    hidden_size_per_layer_input per layer, and with enable_moe_block num_experts GeGLU experts (top_k_experts per
    token, moe_intermediate_size wide) beside every layer's dense MLP; num_experts and its kin build nothing without
    it (Gemma4TextDecoderLayer reads them only then)."""
    L, dh, k = r.count("num_hidden_layers"), r.count("head_dim"), r.count("num_key_value_heads")
    full = _kinds(r, L)
    g_dh, g_k = _full_heads(r, full, dh, k)
    ple, shared = r.count("hidden_size_per_layer_input", 0, zero=True), r.count("num_kv_shared_layers", 0, zero=True)
    if shared >= L or shared and {i in full for i in range(L - shared)} != {i in full for i in range(L)}:
        raise r.fail(
            "num_kv_shared_layers",
            "each kind of layer reusing K/V needs an earlier layer of its kind that "
            "computes them (transformers' kv_sharing_modes); every layer reusing K/V is an assistant "
            "model's, not modelled",
        )
    moe = r.flag("enable_moe_block")
    experts = (
        {
            "E": r.count("num_experts"),
            "k_e": r.count("top_k_experts"),
            "f_e": r.count("moe_intermediate_size"),
            "moe_beside": True,
        }
        if moe
        else {}
    )
    return {
        "sandwich": True,
        "qk_norm": "head",
        "logit_softcap": r.get("final_logit_softcapping") is not None,
        "g_layers": full,
        "g_dh": g_dh,
        "g_k": g_k,
        "k_eq_v": r.flag("attention_k_eq_v"),
        "kv_shared": shared,
        "wide_shared": r.flag("use_double_wide_mlp"),
        "ple": ple,
        "ple_v": r.count("vocab_size_per_layer_input") if ple else 0,
        **experts,
    }
