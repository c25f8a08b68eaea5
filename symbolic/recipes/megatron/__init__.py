"""Recipe `megatron` (the `paper` profile): Megatron-LM as Fujii, Watanabe, Yokota 2024 model it, with Megatron-Core's
MoE, MLA and MTP layouts."""
from ...config import precision
from ...config.training import Training
from ..base import Recipe
from .rules import RULES

# Megatron-LM bf16 mixed precision (Fujii et al. 2024): bf16 weights, fp32 main gradients, fp32 master weights + Adam
# m, v, bf16 activations, fp32 logits for the loss: Training's own defaults
RECIPE = Recipe(name="paper", package="megatron", flag="megatron",
                precision={name: getattr(Training, name) for name in precision.FIELDS}, rules=RULES,
                groups=("gdn",))
