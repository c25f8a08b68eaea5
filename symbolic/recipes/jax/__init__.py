"""Profile `jax`: jaxcheck's compiled train step as XLA's buffer table (no trainer: --profile jax, compile, verify)."""

from ..base import Recipe
from .rules import RULES
from .step import jax_widths

# jaxcheck's default dtypes: fp32 parameters, gradients and AdamW moments, bf16 compute, fp32 logits
RECIPE = Recipe(
    name="jax",
    package="jax",
    total_column="each device (SPMD)",
    precision=jax_widths(),
    rules=RULES,
    groups=("no-fp8", "gdn", "no-tp-overlap"),
)
