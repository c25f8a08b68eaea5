"""The model providers' kernel settings of the models in NVIDIA's tables (../shared/data/throughput/MODELS.md, each
model's section), as the step-time model's Provider: what Megatron-Bridge 0.3.1 sets for the model, whichever row."""

from __future__ import annotations

from symbolic.time.provider import Provider

# MODELS.md 3 (GPT-OSS 120B): Megatron-Bridge 0.3.1 models/gpt_oss/gpt_oss_provider.py:59-84 (YaRN factor 32 with
# yarn_mscale unset, bias_dropout_fusion False, activation_func_clamp_value 7.0) and recipes/gpt_oss/gpt_oss.py:213
# (cross_entropy_fusion_impl "native"); every other model here runs TE's cross entropy (recipes/llama/llama3.py:97,
# recipes/qwen/qwen3_moe.py:80, recipes/deepseek/deepseek_v3.py:135) and the fused defaults (no bias to add, no YaRN
# factor: Provider())
PROVIDERS = {"GPT OSS 120B": Provider(yarn=32.0, clamp=7.0, bias_dropout_fusion=False, cross_entropy="native")}


def provider(name: str) -> Provider:
    """The Provider of a table model name (MODELS.md's), the fused defaults where its section sets none of these."""
    return PROVIDERS.get(name, Provider())
