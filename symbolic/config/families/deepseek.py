"""The DeepSeek families of config.json: DeepSeekMoE with multi-head attention (model_type deepseek), and multi-head
latent attention with DeepSeekMoE layers, multi-token prediction and DeepSeek-V3's routing (deepseek_v2, deepseek_v3,
kimi_k2)."""

from __future__ import annotations

from ..hfkeys import BASE, Only, Reader, count_or_null, real, TRUE_OR_FALSE
from .registry import family

# multi-head latent attention (DeepSeek-V2/V3, Kimi K2): read by the MLA families only, refused in any other
MLA = ("q_lora_rank", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")


def deepseek(raw: dict, r: Reader) -> dict:
    """DeepSeekMoE (model_type deepseek, multi-head attention): layer i routes over n_routed_experts experts of
    moe_intermediate_size when i >= first_k_dense_replace and i % moe_layer_freq == 0 (else a dense MLP of
    intermediate_size), with n_shared_experts shared experts of moe_intermediate_size."""
    E = r.count("n_routed_experts", 0, zero=True)
    L = r.count("num_hidden_layers")
    if E == 0:
        return {}
    first, freq = r.count("first_k_dense_replace", 0, zero=True), r.count("moe_layer_freq", 1)
    f_e = r.count("moe_intermediate_size")
    bias = r.flag("attention_bias")
    return {
        "E": E,
        "k_e": r.count("num_experts_per_tok"),
        "f_e": f_e,
        "f_s": r.count("n_shared_experts", 0, zero=True) * f_e,
        "qkv_bias": bias,
        "o_bias": bias,
        "dense_layers": tuple(i for i in range(L) if not (i >= first and i % freq == 0)),
    }


DEEPSEEK_MOE = (
    "n_routed_experts",
    "n_shared_experts",
    "moe_intermediate_size",
    "num_experts_per_tok",
    "first_k_dense_replace",
    "moe_layer_freq",
    "scoring_func",
    "aux_loss_alpha",
    "seq_aux",
)
# DeepSeek-V2/V3's routing: its method (greedy, group_limited_greedy, noaux_tc: a score-correction bias), groups,
# the scale of the routed output (a scalar), the inference-only expert-parallel size of its modeling code
ROUTING = ("topk_method", "n_group", "topk_group", "routed_scaling_factor", "ep_size")


def mla(raw: dict, r: Reader) -> dict:
    """DeepSeek-V2/V3 and Kimi K2 (transformers' DeepseekV3Attention, Megatron-Core MLASelfAttention): multi-head
    latent attention of a heads (q_lora_rank, null or 0 for a plain query projection; kv_lora_rank; a query/key
    head of qk_nope_head_dim + qk_rope_head_dim; a value head of v_head_dim), DeepSeekMoE layers, the
    score-correction bias [E] of noaux_tc routing (e_score_correction_bias) and num_nextn_predict_layers
    multi-token-prediction modules."""
    out = deepseek(raw, r)
    if out.get("dense_layers") is not None and len(out["dense_layers"]) == r.count("num_hidden_layers"):
        raise r.fail("first_k_dense_replace", "every layer is dense, so the routed experts are never used")
    out.pop("qkv_bias", None), out.pop("o_bias", None)
    width = r.count("qk_nope_head_dim") + r.count("qk_rope_head_dim")
    if r.get("qk_head_dim") not in (None, width):
        raise r.fail("qk_head_dim", f"disagrees with qk_nope_head_dim + qk_rope_head_dim = {width}")
    if r.flag("attention_bias"):
        raise r.fail("attention_bias", "not modelled; mem4d models multi-head latent attention without biases")
    if out.get("E"):
        out["expert_bias"] = r.get("topk_method") == "noaux_tc"
        out["sigmoid"] = r.get("scoring_func", "softmax") == "sigmoid"
        out.update(limited_groups(r))
    return {
        **out,
        "q_lora": r.count("q_lora_rank", 0, zero=True),
        "kv_lora": r.count("kv_lora_rank"),
        "rope_dim": r.count("qk_rope_head_dim"),
        "v_dim": r.count("v_head_dim"),
        "mtp": r.count("num_nextn_predict_layers", 0, zero=True),
    }


def limited_groups(r: Reader) -> dict:
    """Group-limited routing: transformers' DeepseekV2/V3 routers choose within a token's best topk_group of n_group
    expert groups under topk_method group_limited_greedy and noaux_tc (greedy ignores the groups), as Megatron-Core's
    group_limited_topk with moe_router_num_groups and moe_router_group_topk; topk_group >= n_group limits nothing."""
    if r.get("topk_method", "greedy") not in ("group_limited_greedy", "noaux_tc"):
        return {}
    groups = r.count("n_group", 1)
    if groups == 1:
        return {}
    group_topk = r.count("topk_group")
    return {"groups": groups, "group_topk": group_topk} if group_topk < groups else {}


def mla_letters(r: Reader) -> dict:
    """The base letters of an MLA config: head_dim is qk_nope_head_dim (the key/value heads are a: every head is
    decompressed from the latent)."""
    a = r.count("num_attention_heads")
    if r.raw.get("num_key_value_heads") not in (None, a):
        raise r.fail(
            "num_key_value_heads",
            f"multi-head latent attention decompresses a key and a value for each of "
            f"the a={a} heads; mem4d models num_key_value_heads = num_attention_heads",
        )
    if r.raw.get("head_dim") not in (None, r.raw.get("qk_nope_head_dim")) and r.raw.get("head_dim") != r.raw.get(
        "qk_rope_head_dim"
    ):
        raise r.fail(
            "head_dim",
            "an MLA head is qk_nope_head_dim + qk_rope_head_dim wide (values v_head_dim); "
            "another head_dim is not modelled",
        )
    return {
        "h": r.count("hidden_size"),
        "f": r.count("intermediate_size"),
        "a": a,
        "k": a,
        "L": r.count("num_hidden_layers"),
        "v": r.count("vocab_size"),
        "tied": r.flag("tie_word_embeddings"),
        "head_dim": r.count("qk_nope_head_dim"),
    }


# the values the DeepSeek families' non-integer structural keys may take (their builds read the integers)
DEEPSEEK_VALUES = {
    "attention_bias": TRUE_OR_FALSE,
    "scoring_func": Only(lambda x: x == "softmax", "softmax routing"),
    "aux_loss_alpha": Only(real, "a number"),
    "seq_aux": TRUE_OR_FALSE,
}
MLA_VALUES = DEEPSEEK_VALUES | {
    # sigmoid scores: the routing and the aux loss each keep their own fp32 [T, E] (symbolic.components.moe)
    "scoring_func": Only(lambda x: x in ("softmax", "sigmoid"), "softmax or sigmoid routing scores"),
    "topk_method": Only(
        lambda x: x in ("greedy", "group_limited_greedy", "noaux_tc"),
        "greedy, group_limited_greedy or noaux_tc expert selection",
    ),
    "n_group": Only(count_or_null, "a positive number of expert groups"),
    "topk_group": Only(count_or_null, "a positive number of groups per token"),
    "routed_scaling_factor": Only(real, "a number (it scales the routed output)"),
    "ep_size": Only(lambda x: x in (1, None), "1 (the modeling code's inference expert parallelism; mem4d takes --ep)"),
    # DeepseekV2Config's, DeepseekV32Config's and GlmMoeDsaConfig's mlp_bias (false): biases on the MLPs and experts
    "mlp_bias": Only(lambda x: x in (False, None), "no MLP biases (false)"),
    "rope_interleave": Only(lambda x: x is None or isinstance(x, bool), "true or false"),
    "qk_head_dim": Only(count_or_null, "a positive width (qk_nope_head_dim + qk_rope_head_dim)"),
    "q_lora_rank": Only(
        lambda x: x is None or isinstance(x, int) and not isinstance(x, bool) and x >= 0,
        "a non-negative rank, or null for a plain query projection",
    ),
}
# DeepseekV3Config's rope_interleave: the rotary part's layout, a permutation of the same tensors; qk_head_dim: the
# classes' nope + rope (checked by mla)
MLA_KEYS = (
    BASE
    + ("attention_bias", "mlp_bias")
    + DEEPSEEK_MOE
    + ROUTING
    + MLA
    + ("num_nextn_predict_layers", "qk_head_dim", "rope_interleave")
)
family(
    "deepseek", BASE + ("attention_bias",) + DEEPSEEK_MOE, "DeepSeekMoE (multi-head attention)", values=DEEPSEEK_VALUES
)(deepseek)
family("deepseek_v2", MLA_KEYS, "DeepSeek-V2 (multi-head latent attention)", mla_letters, MLA_VALUES)(mla)
family(
    "deepseek_v3",
    MLA_KEYS,
    "DeepSeek-V3 (multi-head latent attention, multi-token prediction)",
    mla_letters,
    MLA_VALUES,
)(mla)
family("kimi_k2", MLA_KEYS, "Kimi K2 (DeepSeek-V3's architecture)", mla_letters, MLA_VALUES)(mla)
