"""Each family's library defaults: the value transformers gives a structural key that a config.json leaves out, the
attribute default of its configuration class (transformers 5.25.0, src/transformers/models/<model_type>/
configuration_<model_type>.py, read 2026-12-03). A key a file leaves out and this table does not list takes the
reader's own fallback, which is what the library makes of null (k = a, dh = h / a, no experts), else it is refused as
missing. Null in a file is null, not the default (transformers passes None to the model: q_lora_rank null is a
plain query projection). deepseek and kimi_k2 are remote code with no class in transformers: no defaults."""

from __future__ import annotations

from .defaults_2026 import DEFAULTS_2026

_LLAMA_SHAPE = {"hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 32, "tie_word_embeddings": False}
# Qwen3Config's, which Qwen3VLTextConfig keeps
_QWEN3 = _LLAMA_SHAPE | {
    "intermediate_size": 22016,
    "num_key_value_heads": 32,
    "head_dim": 128,
    "vocab_size": 151936,
    "attention_bias": False,
}
_LLAMA = _LLAMA_SHAPE | {"intermediate_size": 11008, "vocab_size": 32000, "attention_bias": False, "mlp_bias": False}


# DeepseekV3Config, which DeepseekV32Config extends with the indexer's keys
_DEEPSEEK_V3 = {
    "hidden_size": 7168,
    "intermediate_size": 18432,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "num_hidden_layers": 61,
    "vocab_size": 129280,
    "tie_word_embeddings": False,
    "attention_bias": False,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "moe_intermediate_size": 2048,
    "num_experts_per_tok": 8,
    "first_k_dense_replace": 3,
    "n_group": 8,
    "topk_group": 4,
    "routed_scaling_factor": 2.5,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 128,
    "v_head_dim": 128,
    "topk_method": "noaux_tc",
    "scoring_func": "sigmoid",
}

DEFAULTS: dict[str, dict[str, object]] = {
    # LlamaConfig: num_key_value_heads None (= a), head_dim None (= h / a)
    "llama": _LLAMA,
    # GraniteConfig: LlamaConfig's (num_key_value_heads None, = a), the multipliers 1.0
    "granite": _LLAMA,
    "mistral": _LLAMA_SHAPE | {"intermediate_size": 14336, "num_key_value_heads": 8, "vocab_size": 32000},
    # Qwen2Config has no head_dim attribute (Qwen2Attention: h / a)
    "qwen2": _LLAMA_SHAPE | {"intermediate_size": 22016, "num_key_value_heads": 32, "vocab_size": 151936},
    "qwen3": _QWEN3,
    "mixtral": _LLAMA_SHAPE
    | {
        "intermediate_size": 14336,
        "num_key_value_heads": 8,
        "vocab_size": 32000,
        "num_local_experts": 8,
        "num_experts_per_tok": 2,
    },
    # PhimoeConfig (its defaults are Phi-3.5-MoE-instruct's shape, but attention_bias and lm_head_bias false)
    "phimoe": {
        "hidden_size": 4096,
        "intermediate_size": 6400,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "num_hidden_layers": 32,
        "vocab_size": 32064,
        "tie_word_embeddings": False,
        "num_local_experts": 16,
        "num_experts_per_tok": 2,
        "attention_bias": False,
        "lm_head_bias": False,
        "router_jitter_noise": 0.01,
        "input_jitter_noise": 0.0,
    },
    "qwen2_moe": {
        "hidden_size": 2048,
        "intermediate_size": 5632,
        "num_attention_heads": 16,
        "num_key_value_heads": 16,
        "num_hidden_layers": 24,
        "vocab_size": 151936,
        "tie_word_embeddings": False,
        "num_experts": 60,
        "num_experts_per_tok": 4,
        "moe_intermediate_size": 1408,
        "decoder_sparse_step": 1,
        "shared_expert_intermediate_size": 5632,
    },
    "qwen3_moe": {
        "hidden_size": 2048,
        "intermediate_size": 6144,
        "num_attention_heads": 32,
        "num_key_value_heads": 4,
        "num_hidden_layers": 24,
        "vocab_size": 151936,
        "tie_word_embeddings": False,
        "num_experts": 128,
        "num_experts_per_tok": 8,
        "moe_intermediate_size": 768,
        "decoder_sparse_step": 1,
        "attention_bias": False,
    },
    # Olmo2Config: num_key_value_heads None (= a)
    "olmo2": _LLAMA_SHAPE | {"intermediate_size": 11008, "vocab_size": 50304, "attention_bias": False},
    # OlmoeConfig: num_key_value_heads None (= a)
    "olmoe": {
        "hidden_size": 2048,
        "intermediate_size": 2048,
        "num_attention_heads": 16,
        "num_hidden_layers": 16,
        "vocab_size": 50304,
        "tie_word_embeddings": False,
        "attention_bias": False,
        "num_experts": 64,
        "num_experts_per_tok": 8,
    },
    # DeepseekV2Config: num_experts_per_tok None (refused as missing), moe_intermediate_size 1407 as the class has it
    "deepseek_v2": {
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "vocab_size": 102400,
        "tie_word_embeddings": False,
        "attention_bias": False,
        "n_routed_experts": 64,
        "n_shared_experts": 2,
        "moe_intermediate_size": 1407,
        "first_k_dense_replace": 0,
        "topk_method": "greedy",
        "routed_scaling_factor": 1.0,
        "q_lora_rank": 1536,
        "kv_lora_rank": 512,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "v_head_dim": 128,
    },
    # DeepseekV3Config; its router (DeepseekV3TopkRouter) always scores with a sigmoid and holds
    # e_score_correction_bias, which the reader's noaux_tc and sigmoid stand for; transformers builds no MTP module
    "deepseek_v3": _DEEPSEEK_V3,
    # DeepseekV32Config and GlmMoeDsaConfig: DeepSeek-V3's shape (GLM-5's its own) with the indexer's keys; their
    # routers (DeepseekV32TopkRouter, GlmMoeDsaTopkRouter) score with a sigmoid and hold e_score_correction_bias, as
    # DeepSeek-V3's, which noaux_tc and sigmoid stand for; mlp_layer_types and layer_types default to what
    # first_k_dense_replace and "indexed_attention" in every layer give, and GLM-5's indexer_types to "full" in every
    # layer (index_topk_freq 1)
    "deepseek_v32": _DEEPSEEK_V3 | {"index_topk": 2048, "index_head_dim": 128, "index_n_heads": 64},
    # GLM-5's own sizes and indexer over DeepSeek-V3's keys (modular_glm_moe_dsa.py builds on deepseek_v3's layers)
    "glm_moe_dsa": _DEEPSEEK_V3
    | {
        "hidden_size": 6144,
        "intermediate_size": 12288,
        "num_attention_heads": 64,
        "num_key_value_heads": 64,
        "num_hidden_layers": 78,
        "vocab_size": 154880,
        "n_group": 1,
        "topk_group": 1,
        "q_lora_rank": 2048,
        "qk_nope_head_dim": 192,
        "v_head_dim": 256,
        "index_topk": 2048,
        "index_head_dim": 128,
        "index_n_heads": 32,
    },
    # Phi3Config: num_key_value_heads None (= a); its defaults are Phi-3-mini's (microsoft/Phi-3-mini-4k-instruct)
    "phi3": _LLAMA_SHAPE
    | {"hidden_size": 3072, "intermediate_size": 8192, "vocab_size": 32064, "resid_pdrop": 0.0, "embd_pdrop": 0.0},
    # Qwen3VLTextConfig (tie_word_embeddings: the outer Qwen3VLConfig's, families.multimodal)
    "qwen3_vl_text": _QWEN3,
    # Qwen3VLMoeTextConfig: head_dim None (= h / a); nested, the outer Qwen3VLMoeConfig ties the head
    "qwen3_vl_moe_text": {
        "tie_word_embeddings": True,
        "hidden_size": 2048,
        "intermediate_size": 5632,
        "num_attention_heads": 16,
        "num_key_value_heads": 16,
        "num_hidden_layers": 24,
        "vocab_size": 151936,
        "attention_bias": False,
        "decoder_sparse_step": 1,
        "moe_intermediate_size": 1408,
        "num_experts_per_tok": 4,
        "num_experts": 60,
    },
    **DEFAULTS_2026,  # Llama 4 ... Nemotron-H (defaults_2026.py)
    # GPT2Config: n_inner None (= 4 n_embd)
    "gpt2": {
        "n_embd": 768,
        "n_layer": 12,
        "n_head": 12,
        "n_positions": 1024,
        "vocab_size": 50257,
        "activation_function": "gelu_new",
        "attn_pdrop": 0.1,
        "embd_pdrop": 0.1,
        "resid_pdrop": 0.1,
        "tie_word_embeddings": True,
    },
}
