"""The library defaults of the families DESIGN.md's 2026 references name (Llama 4, Gemma 2 and 3, gpt-oss,
MiniMax-M2, MiMo-V2-Flash, Qwen3-Next, Qwen3.5, Nemotron-H), by model_type: each key's class attribute default of its
configuration class (transformers 5.25.0, src/transformers/models/<model_type>/configuration_<model_type>.py, read
2026-12-03); defaults.DEFAULTS holds them with the others (see there what a default means)."""

from __future__ import annotations

# the Gated DeltaNet's keys, alike in Qwen3NextConfig, Qwen3_5TextConfig and Qwen3_5MoeTextConfig
_GDN = {
    "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 128,
    "linear_value_head_dim": 128,
    "linear_num_key_heads": 16,
    "linear_num_value_heads": 32,
}
# Gemma2Config's and Gemma3TextConfig's shape, alike (their defaults are gemma-2-2b's)
_GEMMA_2B = {
    "hidden_size": 2304,
    "intermediate_size": 9216,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "num_hidden_layers": 26,
    "tie_word_embeddings": True,
}

DEFAULTS_2026: dict[str, dict[str, object]] = {
    # Llama4TextConfig (its defaults are Llama-4-Scout-17B-16E's language model)
    "llama4_text": {
        "hidden_size": 5120,
        "intermediate_size": 8192,
        "intermediate_size_mlp": 16384,
        "num_attention_heads": 40,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "num_hidden_layers": 48,
        "vocab_size": 202048,
        "tie_word_embeddings": False,
        "num_local_experts": 16,
        "num_experts_per_tok": 1,
        "interleave_moe_layer_step": 1,
        "use_qk_norm": True,
        "attention_bias": False,
    },
    # Gemma2Config (its defaults are gemma-2-2b's) and Gemma3TextConfig (no soft-capping by default)
    "gemma2": _GEMMA_2B | {"vocab_size": 256000, "final_logit_softcapping": 30.0, "attn_logit_softcapping": 50.0},
    "gemma3_text": _GEMMA_2B | {"vocab_size": 262208},
    # Gemma4TextConfig (its __post_init__ pops global_head_dim, default 512, and num_global_key_value_heads, default
    # None: no attributes; families/gemma4.py reads them)
    "gemma4_text": {
        "hidden_size": 2304,
        "intermediate_size": 9216,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "num_hidden_layers": 30,
        "vocab_size": 262144,
        "tie_word_embeddings": True,
        "hidden_size_per_layer_input": 256,
        "vocab_size_per_layer_input": 262144,
        "attention_k_eq_v": False,
        "num_kv_shared_layers": 0,
        "use_double_wide_mlp": False,
        "enable_moe_block": False,
    },
    # GptOssConfig (36 layers of 128 experts: gpt-oss-120b's shape)
    "gpt_oss": {
        "hidden_size": 2880,
        "intermediate_size": 2880,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "head_dim": 64,
        "num_hidden_layers": 36,
        "vocab_size": 201088,
        "tie_word_embeddings": False,
        "num_local_experts": 128,
        "num_experts_per_tok": 4,
        "attention_bias": True,
    },
    # MiniMaxM2Config (MiniMax-M2's shape: 62 layers of 256 experts)
    "minimax_m2": {
        "hidden_size": 3072,
        "intermediate_size": 1536,
        "num_attention_heads": 48,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "num_hidden_layers": 62,
        "vocab_size": 200064,
        "tie_word_embeddings": False,
        "num_local_experts": 256,
        "num_experts_per_tok": 8,
    },
    # MiMoV2FlashConfig (MiMo-V2-Flash's shape; layer_types and mlp_layer_types None: every 6th layer and the first
    # full attention, the first layer dense)
    "mimo_v2_flash": {
        "hidden_size": 4096,
        "intermediate_size": 16384,
        "num_attention_heads": 64,
        "num_key_value_heads": 4,
        "head_dim": 192,
        "v_head_dim": 128,
        "num_hidden_layers": 48,
        "vocab_size": 152576,
        "tie_word_embeddings": False,
        "attention_bias": False,
        "moe_intermediate_size": 2048,
        "n_routed_experts": 256,
        "num_experts_per_tok": 8,
    },
    # Qwen3NextConfig (Qwen3-Next-80B-A3B's shape), Qwen3_5TextConfig, Qwen3_5MoeTextConfig: layer_types None (every
    # 4th layer softmax attention, full_attention_interval); the MTP layers are not a class attribute (none)
    "qwen3_next": {
        "hidden_size": 2048,
        "intermediate_size": 5632,
        "num_hidden_layers": 48,
        "num_attention_heads": 16,
        "num_key_value_heads": 2,
        "head_dim": 256,
        "vocab_size": 151936,
        "tie_word_embeddings": False,
        "attention_bias": False,
        **_GDN,
        "decoder_sparse_step": 1,
        "moe_intermediate_size": 512,
        "shared_expert_intermediate_size": 512,
        "num_experts_per_tok": 10,
        "num_experts": 512,
    },
    "qwen3_5_text": {
        "hidden_size": 4096,
        "intermediate_size": 12288,
        "num_hidden_layers": 32,
        "num_attention_heads": 16,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "vocab_size": 248320,
        "tie_word_embeddings": False,
        "attention_bias": False,
        **_GDN,
    },
    "qwen3_5_moe_text": {
        "hidden_size": 2048,
        "num_hidden_layers": 40,
        "num_attention_heads": 16,
        "num_key_value_heads": 2,
        "head_dim": 256,
        "vocab_size": 248320,
        "tie_word_embeddings": False,
        "attention_bias": False,
        **_GDN,
        "moe_intermediate_size": 512,
        "shared_expert_intermediate_size": 512,
        "num_experts_per_tok": 8,
        "num_experts": 256,
    },
    # NemotronHConfig: its default layers_block_type holds an MoE block (not modelled), so a file must give its
    # pattern; the other structural keys as the class has them
    "nemotron_h": {
        "hidden_size": 4096,
        "intermediate_size": 21504,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "vocab_size": 131072,
        "tie_word_embeddings": False,
        "mamba_num_heads": 128,
        "mamba_head_dim": 64,
        "ssm_state_size": 128,
        "n_groups": 8,
        "conv_kernel": 4,
        "use_conv_bias": True,
        "mlp_hidden_act": "relu2",
        "attention_bias": False,
        "mlp_bias": False,
        "use_bias": False,
    },
}
