"""The model providers' kernel settings of the models in NVIDIA's tables (../shared/data/throughput/MODELS.md, each
model's section), as the step-time model's Provider: what Megatron-Bridge 0.3.1's provider or bridge sets for the
model (megatron-core 0.16.1 transformer_config.py:354-371's defaults where it sets none: every fusion off), then what
the performance scripts every row ran override, which wins (MB@<tag> = NVIDIA-NeMo/Megatron-Bridge at that tag, as
MODELS.md cites): apply_rope_fusion True and cross_entropy_fusion_impl "te" for every model, in every release the
rows name (MB@r0.1.0 scripts/performance/run_script.py:178 and configs/*/*.yaml cross_entropy_fusion_impl "te";
MB@v0.2.0 utils/helpers.py:107-108; MB@v0.3.1 utils/overrides.py:64-65, called by set_workload_base_configs:222
after the recipe; MB@v0.5.1 overrides.py:67-70; MB@v0.6.0 src/megatron/bridge/perf_recipes/_common.py:67-68).
masked_softmax_fusion (read only by megatron-core's local DotProductAttention, dot_product_attention.py:104, not TE's)
and gradient_accumulation_fusion (the wgrad GEMM accumulating into main_grad, which the step time assumes) are not
read here."""

from __future__ import annotations

from symbolic.time.provider import Provider

# LLAMA3_8B, LLAMA3_70B, LLAMA3.1_405B: Megatron-Bridge 0.3.1 models/llama/llama_provider.py:48-49 (Llama3 and
# Llama31 providers :120-121; llama_bridge.py:69-70): bias_dropout_fusion and apply_rope_fusion True; recipes/llama/
# llama3.py:96-97 cross_entropy_fusion_impl "te". The fused defaults: Provider().
LLAMA = Provider(rope_fusion=True, bias_dropout_fusion=True, cross_entropy="te")

# Qwen3_30B_a3B, Qwen3_235B_a22B: Megatron-Bridge 0.3.1 models/qwen/qwen_provider.py:364-398 (Qwen3MoEModelProvider;
# qwen3_moe_bridge.py:48-61) sets neither fusion, so apply_rope_fusion and bias_dropout_fusion keep megatron-core
# 0.16.1's False (transformer_config.py:368, :371); recipes/qwen/qwen3_moe.py:79-80 cross entropy "te". The
# performance scripts turn apply_rope_fusion on (above): TE's fused RoPE. bias_dropout_fusion stays False: no linear
# has a bias (add_bias_linear False) and hidden_dropout is 0, so the unfused bias-dropout-add is the residual add
# alone (megatron-core 0.16.1 fusions/fused_bias_dropout.py:40-49; torch's dropout at p = 0 returns its input).
QWEN3_MOE = Provider(rope_fusion=True, bias_dropout_fusion=False, cross_entropy="te")

# DeepSeekV3: Megatron-Bridge 0.3.1 models/deepseek/deepseek_v3_bridge.py:70-78: apply_rope_fusion False,
# bias_dropout_fusion True, cross_entropy_fusion_impl "te"; the performance scripts turn apply_rope_fusion on (above),
# megatron-core 0.16.1 transformer/multi_latent_attention.py:553, :747 then fuse MLA's RoPE (fused_apply_mla_rope_*;
# recipes/deepseek/deepseek_v3.py:193-194 enables megatron-core's experimental flag for it).
DEEPSEEK_V3 = Provider(rope_fusion=True, bias_dropout_fusion=True, cross_entropy="te")

# GPT OSS 120B (MODELS.md 3): Megatron-Bridge 0.3.1 models/gpt_oss/gpt_oss_provider.py:59-84 (position_embedding_type
# "yarn", YaRN factor 32 with yarn_mscale unset, bias_dropout_fusion False, activation_func_clamp_value 7.0) and
# recipes/gpt_oss/gpt_oss.py:213 (cross_entropy_fusion_impl "native", which the performance scripts set back to "te":
# MB@v0.3.1 configs/gpt_oss/gpt_oss_llm_pretrain.py:52-55 build the recipe, then set_workload_base_configs). Their
# apply_rope_fusion True is undone at build: models/gpt_provider.py:210-211 with utils/fusions.py:66-74 (RoPE fusion
# only for position_embedding_type "rope").
# Its provider sets no moe_router_dtype: megatron-core 0.16.1's None, the input's BF16 (moe/router.py:95-100).
GPT_OSS = Provider(
    yarn=32.0, rope_fusion=False, clamp=7.0, bias_dropout_fusion=False, cross_entropy="te", router_dtype="bf16"
)

PROVIDERS = {
    "LLAMA3_8B": LLAMA,
    "LLAMA3_70B": LLAMA,
    "LLAMA3.1_405B": LLAMA,
    "Qwen3_30B_a3B": QWEN3_MOE,
    "Qwen3_235B_a22B": QWEN3_MOE,
    "DeepSeekV3": DEEPSEEK_V3,
    "GPT OSS 120B": GPT_OSS,
}


def provider(name: str) -> Provider:
    """The Provider of a table model name (MODELS.md's), the fused defaults where its section sets none of these."""
    return PROVIDERS.get(name, Provider())
