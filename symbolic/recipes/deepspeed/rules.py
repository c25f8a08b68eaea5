"""What the deepspeed recipe refuses, and its flag refused elsewhere: its rows of the one rule table."""

from __future__ import annotations

from ...config.parallel import ZERO_GRADIENTS, ZERO_OPTIMIZER, ZERO_WEIGHTS
from ...config.rules import Rule, only

RULES: tuple[Rule, ...] = (
    # DeepSpeed's MoE (deepspeed/moe: MOELayer, TopKGate, its expert-data-parallel groups) is not modelled
    only(
        "deepspeed: dense models",
        "E",
        0,
        "{x.model} has routed experts: the deepspeed recipe models dense Llama models; DeepSpeed's MoE "
        "(deepspeed.moe) is not modelled (use --recipe megatron or torchtitan)",
        scope="deepspeed",
        model=True,
    ),
    only(
        "--no-zero-init: DeepSpeed only",
        "zero_init",
        True,
        "--no-zero-init describes a DeepSpeed ZeRO-3 model built outside deepspeed.zero.Init: give it with --recipe "
        "deepspeed --zero 3",
        scope="!deepspeed",
    ),
    Rule(
        "deepspeed: --no-zero-init at ZeRO-3",
        lambda x: x.zero_init | (x.zero == ZERO_WEIGHTS),
        lambda x: f"--no-zero-init is ZeRO-3's (stages 1 and 2 gather no weights): got --zero {x.zero}",
        scope="deepspeed",
        policy=True,
    ),
    Rule(
        "deepspeed: fp32 gradients at ZeRO 1 or 3",
        lambda x: (x.grad_dtype == "bf16") | (x.zero != ZERO_GRADIENTS),
        lambda x: (
            "DeepSpeed ZeRO-2 with grad_accum_dtype fp32 (--grad-dtype fp32) is not modelled (stage 1 runs "
            "BF16_Optimizer, stage 3 partitions fp32 gradients): --grad-dtype bf16, or --zero 1 or 3"
        ),
        scope="deepspeed",
    ),
    # deepspeed/runtime/pipe/engine.py (DeepSpeed 0.19.8), PipelineEngine.__init__: assert
    # self.zero_optimization_stage() < ZeroStageEnum.gradients, "ZeRO-2 and ZeRO-3 are incompatible with pipeline
    # parallelism"
    Rule(
        "deepspeed: pp > 1 at ZeRO 0-1",
        lambda x: (x.p == 1) | (x.zero < ZERO_GRADIENTS),
        lambda x: (
            f"DeepSpeed's pipeline engine refuses ZeRO-{x.zero} (deepspeed/runtime/pipe/engine.py: \"ZeRO-2 "
            f"and ZeRO-3 are incompatible with pipeline parallelism\"): with --pp {x.p} give --zero 1"
        ),
        scope="deepspeed",
    ),
    Rule(
        "deepspeed: ZeRO 1-3",
        lambda x: x.zero >= ZERO_OPTIMIZER,
        lambda x: (
            "DeepSpeed with bf16 and ZeRO stage 0 runs its bf16 DDP path (engine.py: DDP_BFLOAT16), "
            "which the deepspeed recipe does not model: --zero 1, 2 or 3"
        ),
        scope="deepspeed",
    ),
)
