"""What the torchtitan recipe refuses, and its flag refused elsewhere: its rows of the one rule table."""

from __future__ import annotations

import numpy as np

from ...config.parallel import ZERO_GRADIENTS, ZERO_WEIGHTS
from ...config.precision import TORCHAO_RECIPES
from ...config.rules import Rule, only

RULES: tuple[Rule, ...] = (
    # its block listing (fsdp2.py) is Llama's TransformerBlock: the tensors a q/k norm, a bias, Gemma's sandwich norms
    # or soft-capping add are not in it, so a model with them is refused rather than under-counted
    Rule(
        "torchtitan: Llama blocks",
        lambda x: np.logical_not(x.bias | x.gemma) & (x.qk_norm == "none"),
        lambda x: (
            f"{x.model} has q/k norms, biases, sandwich norms or soft-capping: the torchtitan recipe lists "
            f"the saved tensors of Llama's TransformerBlock (use --recipe megatron)"
        ),
        scope="torchtitan",
        model=True,
    ),
    # its MoE (moe.py) is torchtitan 0.3.0's, listed eager at tp = 1: its TP/ETP plans, compile and Float8 of the
    # grouped GEMMs are not, nor per-layer selective checkpointing's placement of dense and MoE blocks
    Rule(
        "torchtitan MoE: tp = 1",
        lambda x: (x.E == 0) | ((x.t == 1) & (x.t_e == 1)),
        lambda x: (
            f"{x.model} has routed experts: the torchtitan recipe lists its MoE layer at tp = 1 (its "
            f"tensor- and expert-tensor-parallel plans are not modelled): --tp 1, got tp={x.t} etp={x.t_e}"
        ),
        scope="torchtitan",
        model=True,
    ),
    Rule(
        "torchtitan MoE: eager",
        lambda x: (x.E == 0) | (np.logical_not(x.compile) & (x.fp8 == "none")),
        lambda x: (
            f"{x.model} has routed experts: the torchtitan recipe lists its MoE layer eager and in bf16 "
            f"(--compile and --fp8 are listed for dense blocks only)"
        ),
        scope="torchtitan",
        model=True,
    ),
    Rule(
        "torchtitan MoE: no --ac-every",
        lambda x: (x.E == 0) | (x.ac_every is None),
        lambda x: (
            f"--ac-every {x.ac_every} with {x.model}'s experts: torchtitan 0.3.0, whose MoE the recipe "
            f"lists, has no per-layer selective checkpointing (its SelectiveAC is op-level: --recompute "
            f"selective, full or none)"
        ),
        scope="torchtitan",
        model=True,
    ),
    only(
        "torchtitan: no multi-token prediction",
        "mtp",
        0,
        "{x.model} has multi-token prediction modules, which the torchtitan recipe does not list (use --recipe "
        "megatron)",
        scope="torchtitan",
        model=True,
    ),
    only(
        "torchtitan MoE: no shared-expert gate",
        "shared_gate",
        False,
        "{x.model} gates its shared experts (Qwen2-MoE's shared_expert_gate), which torchtitan's MoE does not have "
        "(use --recipe megatron)",
        scope="torchtitan",
        model=True,
    ),
    Rule(
        "torchtitan: FSDP2",
        lambda x: (x.zero == ZERO_GRADIENTS) | (x.zero == ZERO_WEIGHTS),
        lambda x: (
            f"torchtitan shards with FSDP2 (fully_shard): --zero 3 (reshard after forward, its default) or 2 "
            f"(--parallelism.fsdp_reshard_after_forward never); got --zero {x.zero}"
        ),
        scope="torchtitan",
    ),
    Rule(
        "torchtitan: its precision",
        lambda x: np.logical_not(x.master_weights) & (x.logits == "fp32"),
        lambda x: (
            "torchtitan keeps no separate master copy (its sharded parameters are the master) and its loss "
            "upcasts the logits to fp32 (train.py at 9dec370): --master-weights and --logits other than fp32 "
            "are not what it allocates"
        ),
        scope="torchtitan",
    ),
    Rule(
        "torchtitan: --ac-every with selective",
        lambda x: (x.ac_every is None) | (x.recompute == "selective"),
        lambda x: (
            f"--ac-every {x.ac_every} is torchtitan's selective per-layer checkpointing "
            f"(selective_ac_option = N): give it with --recompute selective, got --recompute {x.recompute}"
        ),
        scope="torchtitan",
        policy=True,
    ),
    # torchao's Float8 tensor-parallel styles cast per tensor (PrepareFloat8ModuleInput: "assumes tensorwise")
    Rule(
        "--fp8 rowwise: torchtitan at tp = 1",
        lambda x: (x.fp8 != "rowwise") | (x.t == 1),
        lambda x: (
            f"--fp8 rowwise with tensor parallelism: torchao's Float8 TP styles (Float8ColwiseParallel, "
            f"PrepareFloat8ModuleInput) scale per tensor; use --fp8 tensorwise, got tp={x.t}"
        ),
        scope="torchtitan",
    ),
    # 9dec370 parallelize_llama.py: with tp > 1, "Async TP requires --training.compile" (inductor's micro_pipeline_tp
    # pass); at tp = 1 apply_tp does not run and the flag changes nothing (pipeline.symmetric_workspace: 0)
    Rule(
        "torchtitan async TP: compiled",
        lambda x: np.logical_not(getattr(x, "tp_comm_overlap", False)) | x.compile | (x.t == 1),
        lambda x: (
            f"--tp-comm-overlap under --recipe torchtitan is its async TP, inductor's micro-pipelined "
            f"tensor parallelism: at tp={x.t} it needs --compile (torchtitan raises \"Async TP requires "
            f"--training.compile\")"
        ),
        scope="torchtitan",
    ),
    only(
        "--compile: torchtitan only",
        "compile",
        False,
        "--compile is torchtitan's torch.compile of each TransformerBlock: give it with --recipe torchtitan",
        scope="!torchtitan",
    ),
    Rule(
        "--fp8: torchao's recipes",
        lambda x: np.isin(x.fp8, TORCHAO_RECIPES) & np.logical_not(x.fp8_param_gather),
        lambda x: (
            f"torchtitan's Float8 is torchao's (tensorwise, rowwise): --fp8 {x.fp8}"
            + (" --fp8-param-gather" if x.fp8_param_gather else "")
            + " is Megatron-LM's Transformer Engine "
            "FP8 (--recipe megatron)"
        ),
        scope="torchtitan",
    ),
    only(
        "--fp8-all-gather: torchtitan only",
        "fp8_all_gather",
        False,
        "--fp8-all-gather is torchao's FSDP2 Float8 all-gather: give it with --recipe torchtitan --fp8 tensorwise",
        scope="!torchtitan",
    ),
    only(
        "--ac-every: torchtitan only",
        "ac_every",
        None,
        "--ac-every {x.ac_every} is torchtitan's selective per-layer checkpointing: give it with --recipe torchtitan",
        scope="!torchtitan",
    ),
)
