"""Recipe `megatron` (the `paper` profile): Megatron-LM as Fujii, Watanabe, Yokota 2024 model it, with Megatron-Core's
MoE, MLA and MTP layouts."""

from ...config import precision
from ..base import Recipe
from .rules import RULES

# Megatron-LM bf16 mixed precision (Fujii et al. 2024): Training's own defaults
RECIPE = Recipe(
    name="paper", package="megatron", flag="megatron", precision=dict(precision.MEGATRON), rules=RULES, groups=("gdn",)
)
