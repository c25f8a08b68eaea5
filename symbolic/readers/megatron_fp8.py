"""A Megatron-LM run's FP8 and FP4 arguments (--fp8-format, --fp8-recipe, --fp8-param-gather, --fp4-format) and
Megatron-FSDP's fp32 main weights, under mem4d's flag names (megatron/training/arguments.py @ d98e8a64, Megatron-Core
0.16.1's TransformerConfig, DistributedDataParallelConfig and OptimizerConfig)."""

from __future__ import annotations

from .megatron_table import Args

REUSE = "reuse_grad_buf_for_mxfp8_param_ag"


def _fp4(args: Args) -> dict:
    """--fp4-format e2m1 --fp4-recipe nvfp4 [--fp4-param-gather]: Transformer Engine's NVFP4BlockScaling, mem4d's
    --fp8 nvfp4 (TransformerConfig refuses it beside --fp8-format, and --fp4-param-gather without it)."""
    if args.get("fp4_recipe") != "nvfp4":
        args.refuse("fp4_recipe", "nvfp4 is modelled")
    if args.get("fp8"):
        args.refuse("fp4", "beside --fp8-format Megatron-Core refuses it (contradicting)")
    return {"fp8": "nvfp4", "fp8_param_gather": bool(args.get("fp4_param_gather"))}


def fp8_flags(args: Args) -> dict:
    """--fp8-format's recipe and --fp8-param-gather (or --fp4-format's, _fp4); MXFP8 weights modelled as Megatron-Core
    keeps them with the gradient buffer reused for their all-gather (megatron-core 0.16.1
    optimizer/optimizer_config.py:365 warns that without it 'significant additional GPU memory' is used: not
    modelled)."""
    if args.get("fp4"):
        return _fp4(args)
    if args.given("fp4_param_gather"):
        args.refuse("fp4_param_gather", "without --fp4-format it does nothing (contradicting)")
    reuse = bool(args.get(REUSE))
    if reuse and not (args.get("fp8") and args.get("fp8_recipe") == "mxfp8" and args.get("fp8_param_gather")):
        args.refuse(
            REUSE,
            "needs --fp8-recipe mxfp8 with --fp8-param-gather (distributed_data_parallel_config.py "
            "asserts --fp8-param-gather; only MXFP8 weights share the buffer)",
        )
    if args.get("fp8") and args.get("fp8_recipe") == "mxfp8" and args.get("fp8_param_gather") and not reuse:
        args.refuse(
            "fp8_param_gather",
            "with mxfp8 and without --reuse-grad-buf-for-mxfp8-param-ag Megatron-Core "
            "keeps another parameter buffer (not modelled)",
        )
    if not args.get("fp8"):
        for dest in ("fp8_recipe", "fp8_param_gather"):
            if args.given(dest):
                args.refuse(dest, "without --fp8-format it does nothing (contradicting)")
        return {"fp8": "none"}
    recipe = args.get("fp8_recipe")
    if recipe not in ("delayed", "tensorwise", "blockwise", "mxfp8"):
        args.refuse("fp8_recipe", "delayed, tensorwise, blockwise and mxfp8 are modelled")
        recipe = "delayed"
    return {"fp8": recipe, "fp8_param_gather": bool(args.get("fp8_param_gather"))}


def fp32_fsdp_flags(args: Args, out: dict) -> dict:
    """fp32 training (neither --bf16 nor --fp16) under Megatron-FSDP: its ParamAndGradBuffer keeps an fp32 main-weight
    buffer whatever the model's dtype (megatron-core 0.16.1 distributed/fsdp/src/megatron_fsdp/param_and_grad_buffer.py
    allocate_buffers_for_parameters: main_weight_buffer under preserve_fp32_weights, True by default), which is a
    master copy only where the model's weights are not fp32: the FP8 weights of --fp8-param-gather (uint8 model-weight
    buffer, TE's Float8Tensors); the distributed optimizer makes fp32 main copies of bf16 and fp16 parameters alone
    (optimizer/distrib_optimizer.py _build_model_and_main_param_groups)."""
    if out["weight_dtype"] != "fp32":
        return {}
    fsdp = args.get("use_megatron_fsdp")
    if out.get("fp8_param_gather") and not fsdp:
        args.refuse(
            "fp8_param_gather",
            "with fp32 weights (no --bf16) outside Megatron-FSDP the distributed optimizer "
            "keeps no fp32 main copy of FP8 weights (distrib_optimizer.py): not modelled",
        )
    elif fsdp and not out.get("fp8_param_gather"):
        args.refuse(
            "use_megatron_fsdp",
            "with fp32 weights (no --bf16) Megatron-FSDP keeps an fp32 main-weight "
            "buffer beside them (param_and_grad_buffer.py preserve_fp32_weights): not modelled",
        )
    if not (fsdp and out.get("fp8_param_gather")):
        return {}
    return {"weight_dtype": "fp8", "master_weights": True}
