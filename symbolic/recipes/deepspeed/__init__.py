"""Recipe `deepspeed`: ZeRO stages 1-3 with bf16 as DeepSpeed allocates them (deepspeedai/DeepSpeed edaa7221)."""

from ..base import Recipe
from .rules import RULES

RECIPE = Recipe(
    name="deepspeed",
    package="deepspeed",
    flag="deepspeed",
    # bf16 enabled, bf16_master_weights_and_grads off: fp32 master; grad_accum_dtype None: bf16 gradients; Adam
    precision={
        "weight_dtype": "bf16",
        "grad_dtype": "bf16",
        "master_weights": True,
        "optimizer": "adamw",
        "moment_dtype": "fp32",
        "act_dtype": "bf16",
        "logits": "fp32",
    },
    rules=RULES,
    groups=("recipes", "no-fp8", "no-tp-overlap"),
)
