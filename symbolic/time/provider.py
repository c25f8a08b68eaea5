"""What a trainer's model provider and recipe set that changes which kernels a layer runs, beside the model's shape
(Megatron-Bridge 0.3.1's GPTModelProvider fields, read by megatron-core 0.16.1); no sympy. The defaults are the
fused kernels the step-time model times for every model (Megatron-Bridge 0.3.1 recipes/llama/llama3.py:96-97,
recipes/qwen/qwen3_moe.py:80, recipes/deepseek/deepseek_v3.py:135; models/llama/llama_provider.py:48-49)."""

from __future__ import annotations

from typing import NamedTuple

CROSS_ENTROPY = ("te", "native")  # megatron-core 0.16.1 model_parallel_config.py:246 cross_entropy_fusion_impl


class Provider(NamedTuple):
    """A provider's kernel settings: YaRN's scaling factor (0: plain RoPE), the GLU clamp (0: none), whether bias,
    dropout and residual add are one kernel, the fused cross entropy's implementation, whether RoPE may be TE's
    fused kernel, the router's dtype."""

    yarn: float = 0.0  # yarn_rotary_scaling_factor under position_embedding_type "yarn" (0: not YaRN)
    clamp: float = 0.0  # activation_func_clamp_value (0: none)
    bias_dropout_fusion: bool = True  # TransformerConfig.bias_dropout_fusion
    cross_entropy: str = "te"  # cross_entropy_fusion_impl, one of CROSS_ENTROPY
    rope_fusion: bool = True  # TransformerConfig.apply_rope_fusion as the model is built (after provide()'s check)
    router_dtype: str = "fp32"  # moe_router_dtype: "fp32" (the Qwen3 and DeepSeek-V3 providers', T_route's) or "bf16"

    @property
    def rope_fused(self) -> bool:
        """TE's fused RoPE runs where apply_rope_fusion is set and YaRN's concentration factor 0.1 ln(factor) + 1 is 1
        (yarn_mscale unset: megatron-core 0.16.1 models/common/embeddings/yarn_rotary_pos_embedding.py:252-268,
        rope_utils.py:279-284); otherwise megatron-core's eager _apply_rotary_pos_emb_bshd."""
        return self.rope_fusion and self.yarn <= 1
