"""Recipe `torchtitan`: FSDP2 training of a Llama as torchtitan's code allocates it (pytorch/torchtitan 9dec370)."""

from ...config.parallel import ZERO_WEIGHTS
from ..base import Recipe
from .rules import RULES

RECIPE = Recipe(
    name="torchtitan",
    package="torchtitan",
    flag="torchtitan",
    # config_manager.py: mixed_precision_param bf16, mixed_precision_reduce fp32: FSDP2 keeps fp32 shards (no
    # separate master) and AdamW; the loss upcasts the logits
    precision={
        "weight_dtype": "fp32",
        "grad_dtype": "fp32",
        "master_weights": False,
        "optimizer": "adamw",
        "moment_dtype": "fp32",
        "act_dtype": "bf16",
        "logits": "fp32",
    },
    # FSDP2 reshards after forward (ZeRO-3) and its llama3 configs checkpoint (8B: selective op)
    defaults={"zero": ZERO_WEIGHTS, "recompute": "selective"},
    rules=RULES,
    groups=("recipes",),
)
