"""Megatron-LM's training arguments -> mem4d's Training flags (the names of `mem4d estimate`'s flags: tp, pp, dp...),
as megatron/training/arguments.py @ d98e8a64 and Megatron-Core 0.16.1's configs read them (DistributedDataParallelConfig,
OptimizerConfig, TransformerConfig's recompute and fp8 fields)."""
from __future__ import annotations

from ..config.offload import OFFLOAD_MODULES
from ..config.training import CUDA_GRAPH_IMPLS, CUDA_GRAPH_SCOPES, MOE_DISPATCHERS, TRANSFORMER_IMPLS
from ..config.training_checks import RECOMPUTE_MODULES
from .megatron_stages import bf16_layers, stages
from .megatron_table import Args

# Megatron-LM's adam is AdamW (decoupled weight decay: TE/apex FusedAdam); muon is Megatron-Core's Muon (optimizer/muon.py)
OPTIMIZERS = {"adam": "adamw", "sgd": "sgd", "muon": "muon"}
FSDP_ZERO = {"no_shard": 0, "optim": 1, "optim_grads": 2, "optim_grads_params": 3}  # --data-parallel-sharding-strategy
FLASH = {"flash": True, "fused": True, "auto": True, "unfused": False, "local": False}  # --attention-backend


SIZES = ("tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size",
         "expert_model_parallel_size", "expert_tensor_parallel_size", "seq_length", "micro_batch_size",
         "global_batch_size")
NEEDED = ("seq_length", "micro_batch_size")  # Megatron-LM's GPT training asserts them; the rest have defaults


def _parallel(args: Args) -> dict:
    for dest in SIZES:
        if args.get(dest) is None and dest in NEEDED:
            args.refuse(dest, "not given: Megatron-LM's training needs it")
        elif args.get(dest) is not None and args.get(dest) < 1:
            args.refuse(dest, "must be a positive integer")
    out = {"tp": args.get("tensor_model_parallel_size"), "pp": args.get("pipeline_model_parallel_size"),
           "cp": args.get("context_parallel_size"), "ep": args.get("expert_model_parallel_size"),
           "etp": args.get("expert_tensor_parallel_size"), "seq": args.get("seq_length"),
           "mbs": args.get("micro_batch_size"), "gbs": args.get("global_batch_size"), "sp": bool(args.get("sequence_parallel"))}
    if args.given("num_distributed_optimizer_instances") and args.get("num_distributed_optimizer_instances") != 1:
        args.refuse("num_distributed_optimizer_instances", "optimizer instances beyond one are not modelled")
    return out


def _recompute(args: Args) -> dict:
    if args.get("checkpoint_activations"):
        args.refuse("checkpoint_activations", "a removed spelling: give --recompute-granularity")
    granularity = args.get("recompute_granularity") or ("selective" if args.get("recompute_activations") else None)
    if granularity == "selective":
        modules = args.get("recompute_modules") or ["core_attn"]
        unknown = [m for m in modules if m not in RECOMPUTE_MODULES]
        if unknown:
            args.refuse("recompute_modules", f"{', '.join(unknown)}: mem4d models {', '.join(RECOMPUTE_MODULES)}")
        return {"recompute": "selective", "recompute_modules": ",".join(m for m in modules if m in RECOMPUTE_MODULES)
                or "core_attn"}
    if granularity == "full":
        if args.get("recompute_method") != "uniform" or args.get("recompute_num_layers") != 1:
            args.refuse("recompute_method", "full recompute of every layer (--recompute-method uniform "
                        "--recompute-num-layers 1) is modelled")
        return {"recompute": "full"}
    for dest in ("recompute_method", "recompute_num_layers", "recompute_modules"):
        if args.given(dest):
            args.refuse(dest, "without --recompute-granularity it does nothing (contradicting)")
    return {"recompute": "none"}


def _sharding(args: Args) -> dict:
    if args.get("use_torch_fsdp2"):  # mem4d's --zero 3 under Megatron-LM is Megatron-FSDP's (components/zero.py)
        args.refuse("use_torch_fsdp2", "torch FSDP2's fully_shard prefetches one layer (megatron-core 0.16.1 "
                    "distributed/torch_fully_sharded_data_parallel.py), not Megatron-FSDP's window: not modelled")
        return {"zero": 3}
    if args.get("use_megatron_fsdp"):
        return {"zero": FSDP_ZERO[args.get("data_parallel_sharding_strategy")]}
    if args.get("use_distributed_optimizer") and args.get("optimizer") == "muon":
        # Megatron-Core's layer-wise distributed optimizer (0.16.1 optimizer/layer_wise_optimizer.py: whole parameters
        # dealt to the data-parallel ranks by size; components.layerwise), as --zero 1; the layer-wise parameter
        # layout of the DDP buffers that later versions default to is not in 0.16.1, so it is not read
        if args.get("use_layer_wise_param_layout"):
            args.refuse("use_distributed_optimizer", "with --optimizer muon and the layer-wise parameter layout "
                        "(give --no-use-layer-wise-param-layout): the layout of a Megatron-Core later than 0.16.1 "
                        "is not modelled")
        return {"zero": 1}
    return {"zero": 1 if args.get("use_distributed_optimizer") else 0}


def _precision(args: Args) -> dict:
    """bf16 (mixed precision with fp32 main gradients and master weights), fp16 likewise, or fp32 throughout."""
    if args.get("bf16") and args.get("fp16"):
        args.refuse("fp16", "contradicts --bf16")
    optimizer = OPTIMIZERS.get(args.get("optimizer"))
    if optimizer is None:
        args.refuse("optimizer", f"mem4d models {', '.join(OPTIMIZERS)}")
    for dest in ("exp_avg_dtype", "exp_avg_sq_dtype", "main_grads_dtype", "main_params_dtype"):
        if args.get(dest) != "fp32":
            args.refuse(dest, "fp32 is modelled")
    if args.get("bf16") or args.get("fp16"):
        width = "bf16" if args.get("bf16") else "fp16"
        grads = "bf16" if args.get("grad_reduce_in_bf16") else "fp32" if args.get("bf16") or args.get(
            "accumulate_allreduce_grads_in_fp32") else "fp16"
        out = {"weight_dtype": width, "act_dtype": width, "grad_dtype": grads, "master_weights": True}
    else:
        out = {"weight_dtype": "fp32", "act_dtype": "fp32", "grad_dtype": "fp32", "master_weights": False}
    # the loss keeps the fp32 softmax it makes of the bf16 logits (VocabParallelCrossEntropy.calculate_logits_max
    # upcasts them, exp and divide in place, save_for_backward) unfused and under --cross-entropy-fusion-impl native
    # alike (megatron-core 0.16.1 = Megatron-LM d98e8a64 fusions/fused_cross_entropy.py, language_module.py
    # compute_language_model_loss); Transformer Engine's fused cross entropy (te) reads the bf16 logits in place
    if args.given("cross_entropy_fusion_impl") and not args.get("cross_entropy_loss_fusion"):
        args.refuse("cross_entropy_fusion_impl", "without --cross-entropy-loss-fusion it does nothing (contradicting)")
    te_loss = args.get("cross_entropy_loss_fusion") and args.get("cross_entropy_fusion_impl") == "te"
    logits = "bf16" if te_loss else "fp32"
    return {**out, "optimizer": optimizer or "adamw", "moment_dtype": "fp32", "logits": logits}


REUSE = "reuse_grad_buf_for_mxfp8_param_ag"


def _fp4(args: Args) -> dict:
    """--fp4-format e2m1 --fp4-recipe nvfp4 [--fp4-param-gather]: Transformer Engine's NVFP4BlockScaling, mem4d's
    --fp8 nvfp4 (TransformerConfig refuses it beside --fp8-format, and --fp4-param-gather without it)."""
    if args.get("fp4_recipe") != "nvfp4":
        args.refuse("fp4_recipe", "nvfp4 is modelled")
    if args.get("fp8"):
        args.refuse("fp4", "beside --fp8-format Megatron-Core refuses it (contradicting)")
    return {"fp8": "nvfp4", "fp8_param_gather": bool(args.get("fp4_param_gather"))}


def _fp8(args: Args) -> dict:
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
        args.refuse(REUSE, "needs --fp8-recipe mxfp8 with --fp8-param-gather (distributed_data_parallel_config.py "
                    "asserts --fp8-param-gather; only MXFP8 weights share the buffer)")
    if args.get("fp8") and args.get("fp8_recipe") == "mxfp8" and args.get("fp8_param_gather") and not reuse:
        args.refuse("fp8_param_gather", "with mxfp8 and without --reuse-grad-buf-for-mxfp8-param-ag Megatron-Core "
                    "keeps another parameter buffer (not modelled)")
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


def _fp32_fsdp(args: Args, out: dict) -> dict:
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
        args.refuse("fp8_param_gather", "with fp32 weights (no --bf16) outside Megatron-FSDP the distributed optimizer "
                    "keeps no fp32 main copy of FP8 weights (distrib_optimizer.py): not modelled")
    elif fsdp and not out.get("fp8_param_gather"):
        args.refuse("use_megatron_fsdp", "with fp32 weights (no --bf16) Megatron-FSDP keeps an fp32 main-weight "
                    "buffer beside them (param_and_grad_buffer.py preserve_fp32_weights): not modelled")
    if not (fsdp and out.get("fp8_param_gather")):
        return {}
    return {"weight_dtype": "fp8", "master_weights": True}


def _graphs(args: Args) -> dict:
    """--cuda-graph-impl transformer_engine with its --cuda-graph-modules (or the deprecated --cuda-graph-scope), and
    --tp-comm-overlap (components.graphs, components.userbuffers)."""
    impl = args.get("cuda_graph_impl") or "none"
    given = [dest for dest in ("cuda_graph_modules", "cuda_graph_scope_deprecated") if args.given(dest)]
    scopes = list(args.get(given[0]) or []) if given else []
    out = {"tp_comm_overlap": bool(args.get("tp_comm_overlap"))}
    if impl not in CUDA_GRAPH_IMPLS:
        args.refuse("cuda_graph_impl", "Megatron-Core's own graphs (CudaGraphManager, full_iteration) are not modelled; "
                    "transformer_engine's per-layer graphs are")
        return out
    unknown = [scope for scope in scopes if scope not in CUDA_GRAPH_SCOPES]
    if unknown:
        args.refuse("cuda_graph_modules", f"{', '.join(unknown)}: mem4d models {', '.join(CUDA_GRAPH_SCOPES[1:])}")
    elif scopes and impl == "none":
        args.refuse("cuda_graph_modules", "without --cuda-graph-impl it does nothing (contradicting)")
    return {**out, "cuda_graph": impl, "cuda_graph_scope": ",".join(scopes) or "layer"}
def _offload(args: Args) -> dict:
    """--fine-grained-activation-offloading with --offload-modules (TransformerConfig asserts the list non-empty and
    known, and refuses it beside --cpu-offloading); the modules alone do nothing."""
    modules = list(args.get("offload_modules")) if args.given("offload_modules") else []
    if not args.get("fine_grained_activation_offloading"):
        if modules:
            args.refuse("offload_modules", "without --fine-grained-activation-offloading it does nothing (contradicting)")
        return {}
    unknown = [m for m in modules if m not in OFFLOAD_MODULES]
    if not modules:
        args.refuse("fine_grained_activation_offloading", "without --offload-modules Megatron-Core refuses it "
                    "(TransformerConfig asserts a non-empty list)")
    elif unknown:
        args.refuse("offload_modules", f"{', '.join(unknown)}: Megatron-Core offloads {', '.join(OFFLOAD_MODULES)}")
    if not modules or unknown:
        return {}
    return {"offload_modules": ",".join(modules)}


def _cpu_offload(args: Args) -> dict:
    """--cpu-offloading-num-layers N (Megatron-LM turns cpu_offloading on with N > 0): Transformer Engine's
    layer-level activation offloading of N layers (TransformerConfig's own checks: the rule table's)."""
    layers = args.get("cpu_offloading_num_layers") or 0
    if layers < 0:
        args.refuse("cpu_offloading_num_layers", "must be 0 or more")
    return {"cpu_offload_layers": layers} if layers > 0 else {}


def training_flags(args: Args) -> dict:
    """The Training flags the arguments state, under mem4d's flag names."""
    impl = args.get("transformer_impl")
    if impl not in TRANSFORMER_IMPLS:
        args.refuse("transformer_impl", f"{' and '.join(TRANSFORMER_IMPLS)} layers are modelled")
    out = {"transformer_impl": impl if impl in TRANSFORMER_IMPLS else "transformer_engine", **_parallel(args),
           **_recompute(args), **_sharding(args), **_precision(args), **_fp8(args), **_graphs(args),
           **_offload(args), **_cpu_offload(args)}
    out.update(_fp32_fsdp(args, out))
    # --transformer-impl local builds Megatron-Core's local spec, whose core attention is its own unfused
    # DotProductAttention whatever --attention-backend says (megatron-core 0.16.1 models/backends.py
    # LocalSpecProvider.core_attention; Megatron-Bridge 0.3.1 training/mlm_compat/model.py: use_te decides the spec)
    out.update(grad_accum_fusion=bool(args.get("gradient_accumulation_fusion")),
               flash_attn=impl != "local" and (bool(args.get("use_flash_attn"))
                                               or FLASH.get(args.get("attention_backend"), True)))
    if not out["flash_attn"] and impl == "local" and not args.get("masked_softmax_fusion"):
        # megatron-core 0.16.1 fusions/fused_softmax.py forward_torch_softmax (Transformer Engine's softmax ignores it)
        args.refuse("masked_softmax_fusion", "unfused attention's PyTorch softmax keeps its fp32 output beside the "
                    "bf16 probabilities: not modelled")
    if args.given("moe_expert_capacity_factor"):
        out["moe_capacity"] = args.get("moe_expert_capacity_factor")
    # Megatron-LM's core_transformer_config_from_args: bias_activation_fusion = --bias-swiglu-fusion (default on) with
    # --swiglu, which MLP.forward runs as bias_swiglu_impl (megatron-core 0.16.1 transformer/mlp.py)
    out["swiglu_fusion"] = bool(args.get("swiglu") and args.get("bias_swiglu_fusion"))
    # --use-fused-weighted-squared-relu acts in TEGroupedMLP alone, before TE's activation functions take its place
    # (Megatron-LM d98e8a64 transformer/moe/experts.py bias_act_func; the hybrid stack spec builds grouped experts
    # whatever --moe-grouped-gemm says, models/hybrid/hybrid_layer_specs.py)
    grouped = impl == "transformer_engine" and (args.get("moe_grouped_gemm") or bool(args.get("hybrid_layer_pattern")
                                                                                    or args.get("hybrid_override_pattern")))
    out["srelu_fusion"] = bool(args.get("use_fused_weighted_squared_relu") and args.get("squared_relu") and grouped
                               and (args.get("num_experts") or 0) and not args.get("use_te_activation_func"))
    dispatcher = args.get("moe_token_dispatcher_type")
    if (args.get("num_experts") or 0) and dispatcher not in MOE_DISPATCHERS:
        args.refuse("moe_token_dispatcher_type", f"the {' and '.join(MOE_DISPATCHERS)} dispatchers' buffers are "
                    "modelled (flex's DeepEP/HybridEP buffers are not)")
    elif args.get("num_experts") or 0:
        out["moe_dispatcher"] = dispatcher
    out.update(stages(args, out["pp"]))
    bf16_layers(args, out)
    return out
