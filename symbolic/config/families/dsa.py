"""DeepSeek Sparse Attention's families of config.json: DeepSeek-V3.2 (model_type deepseek_v32) and GLM-5
(glm_moe_dsa), DeepSeek-V3's multi-head latent attention and DeepSeekMoE with a lightning indexer in every layer
(transformers' DeepseekV32Indexer, GlmMoeDsaIndexer; Megatron-Core DSAIndexer)."""

from __future__ import annotations

from ..hfkeys import Only, Reader
from .deepseek import MLA_KEYS, MLA_VALUES, mla, mla_letters
from .registry import family

INDEXER = ("index_n_heads", "index_head_dim", "index_topk")
# every layer's attention and MLP kind: transformers writes them out ("indexed_attention" each; "dense" for the
# first_k_dense_replace layers, then "sparse"), and GLM-5's indexer_types says which layers run their own indexer
KINDS = ("layer_types", "mlp_layer_types")
DSA_VALUES = MLA_VALUES | {
    "layer_types": Only(
        lambda x: x is None or isinstance(x, list) and all(kind == "indexed_attention" for kind in x),
        "sparse attention with its indexer in every layer (indexed_attention)",
    ),
    "mlp_layer_types": Only(
        lambda x: x is None or isinstance(x, list) and all(kind in ("dense", "sparse") for kind in x),
        "a list of dense and sparse (MoE) layers",
    ),
    # "shared" layers reuse the previous layer's top-k instead of an indexer of their own: not in Megatron-Core
    # 0.16.1's DSA, not modelled
    "indexer_types": Only(
        lambda x: x is None or isinstance(x, list) and all(kind == "full" for kind in x),
        "an indexer of its own in every layer (full; shared layers are not modelled)",
    ),
    # what GlmMoeDsaConfig makes indexer_types of when a file leaves it out: a pattern of F (full) and S (shared)
    # layers, else every index_topk_freq-th layer from index_skip_topk_offset full and the rest shared
    "index_topk_pattern": Only(
        lambda x: x is None or isinstance(x, (str, list)) and all(kind in ("F", "full") for kind in x),
        "F (an indexer of its own) for every layer; shared layers are not modelled",
    ),
    "index_topk_freq": Only(
        lambda x: x in (None, 1) and not isinstance(x, bool),
        "1 (every layer runs its own indexer; shared layers are not modelled)",
    ),
    "index_skip_topk_offset": Only(
        lambda x: x is None or isinstance(x, int) and not isinstance(x, bool) and x >= 0,
        "a layer offset (with index_topk_freq 1 every layer runs its own indexer)",
    ),
    # the layout of the indexer's rotary part (GLM-5's file; interleaved or not): a permutation of the same tensors
    "indexer_rope_interleave": Only(lambda x: x is None or isinstance(x, bool), "true or false"),
}
GLM_INDEXER = (
    "indexer_types",
    "index_topk_pattern",
    "index_topk_freq",
    "index_skip_topk_offset",
    "indexer_rope_interleave",
)


def dsa(raw: dict, r: Reader) -> dict:
    """DeepSeek-V3.2 and GLM-5: DeepSeek-V3's reading (mla) and in every layer an indexer of index_n_heads heads
    index_head_dim wide choosing index_topk keys per query; mlp_layer_types, where given, names the dense layers in
    place of first_k_dense_replace."""
    out = mla(raw, r)
    L = r.count("num_hidden_layers")
    for key in ("layer_types", "mlp_layer_types", "indexer_types", "index_topk_pattern"):
        kinds = r.get(key)
        if kinds is not None and len(kinds) != L:
            raise r.fail(key, f"must name each of the L={L} layers")
    kinds = r.get("mlp_layer_types")
    if kinds is not None:
        dense = tuple(i for i, kind in enumerate(kinds) if kind == "dense")
        if len(dense) == L:
            raise r.fail("mlp_layer_types", "every layer is dense, so the routed experts are never used")
        out["dense_layers"] = dense
    return {
        **out,
        "index_heads": r.count("index_n_heads"),
        "index_dim": r.count("index_head_dim"),
        "index_topk": r.count("index_topk"),
    }


family(
    "deepseek_v32", MLA_KEYS + INDEXER + KINDS, "DeepSeek-V3.2 (DeepSeek Sparse Attention)", mla_letters, DSA_VALUES
)(dsa)
family(
    "glm_moe_dsa",
    MLA_KEYS + INDEXER + KINDS + GLM_INDEXER,
    "GLM-5 (DeepSeek Sparse Attention)",
    mla_letters,
    DSA_VALUES,
)(dsa)
