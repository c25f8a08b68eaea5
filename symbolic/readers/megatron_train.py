"""Megatron-LM's training arguments -> mem4d's Training flags (the names of `mem4d estimate`'s flags: tp, pp, dp...),
as megatron/training/arguments.py @ d98e8a64 and Megatron-Core 0.16.1's configs read them (DistributedDataParallelConfig,
OptimizerConfig, TransformerConfig's recompute and fp8 fields)."""

from __future__ import annotations

from ..config.training import MOE_DISPATCHERS, TRANSFORMER_IMPLS
from ..config.training_checks import RECOMPUTE_MODULES
from .megatron_buffers import cpu_offload_flags, graph_flags, offload_flags
from .megatron_fp8 import fp32_fsdp_flags, fp8_flags
from .megatron_stages import bf16_layers, stages
from .megatron_table import Args

# Megatron-LM's adam is AdamW (decoupled weight decay: TE/apex FusedAdam); muon is Megatron-Core's Muon (optimizer/muon.py)
OPTIMIZERS = {"adam": "adamw", "sgd": "sgd", "muon": "muon"}
FSDP_ZERO = {"no_shard": 0, "optim": 1, "optim_grads": 2, "optim_grads_params": 3}  # --data-parallel-sharding-strategy
FLASH = {"flash": True, "fused": True, "auto": True, "unfused": False, "local": False}  # --attention-backend


SIZES = (
    "tensor_model_parallel_size",
    "pipeline_model_parallel_size",
    "context_parallel_size",
    "expert_model_parallel_size",
    "expert_tensor_parallel_size",
    "seq_length",
    "micro_batch_size",
    "global_batch_size",
)
NEEDED = ("seq_length", "micro_batch_size")  # Megatron-LM's GPT training asserts them; the rest have defaults


def flex_backend(args: Args) -> str:
    """--moe-token-dispatcher-type, the flex dispatcher named by its backend: megatron-core 0.16.1
    TransformerConfig.__post_init__ makes --moe-enable-deepep (deprecated) the deepep backend, the default of
    --moe-flex-dispatcher-backend (deepep or hybridep)."""
    dispatcher = args.get("moe_token_dispatcher_type")
    if dispatcher != "flex":
        return dispatcher
    return "deepep" if args.get("moe_enable_deepep") else args.get("moe_flex_dispatcher_backend") or "deepep"


def _parallel(args: Args) -> dict:
    for dest in SIZES:
        if args.get(dest) is None and dest in NEEDED:
            args.refuse(dest, "not given: Megatron-LM's training needs it")
        elif args.get(dest) is not None and args.get(dest) < 1:
            args.refuse(dest, "must be a positive integer")
    out = {
        "tp": args.get("tensor_model_parallel_size"),
        "pp": args.get("pipeline_model_parallel_size"),
        "cp": args.get("context_parallel_size"),
        "ep": args.get("expert_model_parallel_size"),
        "etp": args.get("expert_tensor_parallel_size"),
        "seq": args.get("seq_length"),
        "mbs": args.get("micro_batch_size"),
        "gbs": args.get("global_batch_size"),
        "sp": bool(args.get("sequence_parallel")),
    }
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
        return {
            "recompute": "selective",
            "recompute_modules": ",".join(m for m in modules if m in RECOMPUTE_MODULES) or "core_attn",
        }
    if granularity == "full":
        method, layers = args.get("recompute_method"), args.get("recompute_num_layers")
        if method not in ("uniform", "block") or not isinstance(layers, int) or layers < 1:
            args.refuse("recompute_method", "full recompute wants --recompute-method uniform|block and N >= 1 layers")
        if (
            method not in ("uniform", "block")
            or not isinstance(layers, int)
            or layers < 1
            or (method == "uniform" and layers == 1)
        ):
            return {"recompute": "full"}
        return {"recompute": "full", "recompute_method": method, "recompute_num_layers": layers}
    for dest in ("recompute_method", "recompute_num_layers", "recompute_modules"):
        if args.given(dest):
            args.refuse(dest, "without --recompute-granularity it does nothing (contradicting)")
    return {"recompute": "none"}


def _sharding(args: Args) -> dict:
    if args.get("use_torch_fsdp2"):  # mem4d's --zero 3 under Megatron-LM is Megatron-FSDP's (components/zero.py)
        args.refuse(
            "use_torch_fsdp2",
            "torch FSDP2's fully_shard prefetches one layer (megatron-core 0.16.1 "
            "distributed/torch_fully_sharded_data_parallel.py), not Megatron-FSDP's window: not modelled",
        )
        return {"zero": 3}
    if args.get("use_megatron_fsdp"):
        return {"zero": FSDP_ZERO[args.get("data_parallel_sharding_strategy")]}
    if args.get("use_distributed_optimizer") and args.get("optimizer") == "muon":
        # Megatron-Core's layer-wise distributed optimizer (0.16.1 optimizer/layer_wise_optimizer.py: whole parameters
        # dealt to the data-parallel ranks by size; components.layerwise), as --zero 1; the layer-wise parameter
        # layout of the DDP buffers that later versions default to is not in 0.16.1, so it is not read
        if args.get("use_layer_wise_param_layout"):
            args.refuse(
                "use_distributed_optimizer",
                "with --optimizer muon and the layer-wise parameter layout "
                "(give --no-use-layer-wise-param-layout): the layout of a Megatron-Core later than 0.16.1 "
                "is not modelled",
            )
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
        grads = (
            "bf16"
            if args.get("grad_reduce_in_bf16")
            else "fp32"
            if args.get("bf16") or args.get("accumulate_allreduce_grads_in_fp32")
            else "fp16"
        )
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
    native = bool(args.get("cross_entropy_loss_fusion")) and not te_loss  # compiled: ends.native_ce_temporary
    return {**out, "optimizer": optimizer or "adamw", "moment_dtype": "fp32", "logits": logits, "native_ce": native}


def training_flags(args: Args) -> dict:
    """The Training flags the arguments state, under mem4d's flag names."""
    impl = args.get("transformer_impl")
    if impl not in TRANSFORMER_IMPLS:
        args.refuse("transformer_impl", f"{' and '.join(TRANSFORMER_IMPLS)} layers are modelled")
    out = {
        "transformer_impl": impl if impl in TRANSFORMER_IMPLS else "transformer_engine",
        **_parallel(args),
        **_recompute(args),
        **_sharding(args),
        **_precision(args),
        **fp8_flags(args),
        **graph_flags(args),
        **offload_flags(args),
        **cpu_offload_flags(args),
    }
    out.update(fp32_fsdp_flags(args, out))
    # --transformer-impl local builds Megatron-Core's local spec, whose core attention is its own unfused
    # DotProductAttention whatever --attention-backend says (megatron-core 0.16.1 models/backends.py
    # LocalSpecProvider.core_attention; Megatron-Bridge 0.3.1 training/mlm_compat/model.py: use_te decides the spec)
    out.update(
        grad_accum_fusion=bool(args.get("gradient_accumulation_fusion")),
        flash_attn=impl != "local"
        and (bool(args.get("use_flash_attn")) or FLASH.get(args.get("attention_backend"), True)),
    )
    if not out["flash_attn"] and impl == "local" and not args.get("masked_softmax_fusion"):
        # megatron-core 0.16.1 fusions/fused_softmax.py forward_torch_softmax (Transformer Engine's softmax ignores it)
        args.refuse(
            "masked_softmax_fusion",
            "unfused attention's PyTorch softmax keeps its fp32 output beside the bf16 probabilities: not modelled",
        )
    if args.given("moe_expert_capacity_factor"):
        out["moe_capacity"] = args.get("moe_expert_capacity_factor")
    # Megatron-LM's core_transformer_config_from_args: bias_activation_fusion = --bias-swiglu-fusion (default on) with
    # --swiglu, which MLP.forward runs as bias_swiglu_impl (megatron-core 0.16.1 transformer/mlp.py)
    out["swiglu_fusion"] = bool(args.get("swiglu") and args.get("bias_swiglu_fusion"))
    # --use-fused-weighted-squared-relu acts in TEGroupedMLP alone, before TE's activation functions take its place
    # (Megatron-LM d98e8a64 transformer/moe/experts.py bias_act_func; the hybrid stack spec builds grouped experts
    # whatever --moe-grouped-gemm says, models/hybrid/hybrid_layer_specs.py)
    grouped = impl == "transformer_engine" and (
        args.get("moe_grouped_gemm") or bool(args.get("hybrid_layer_pattern") or args.get("hybrid_override_pattern"))
    )
    out["srelu_fusion"] = bool(
        args.get("use_fused_weighted_squared_relu")
        and args.get("squared_relu")
        and grouped
        and (args.get("num_experts") or 0)
        and not args.get("use_te_activation_func")
    )
    # TEGroupedMLP's GroupedLinear (transformer-engine 2.9.0 pytorch/module/grouped_linear.py:176) runs on
    # get_multi_stream_cublas_workspace() (module/base.py:95), one workspace per compute stream
    out["moe_grouped_gemm"] = bool(grouped and (args.get("num_experts") or 0))
    dispatcher = flex_backend(args)
    if (args.get("num_experts") or 0) and dispatcher not in MOE_DISPATCHERS:
        args.refuse(
            "moe_token_dispatcher_type",
            f"the {', '.join(MOE_DISPATCHERS)} dispatchers are modelled; flex with HybridEP "
            "(megatron-core 0.16.1 fused_a2a.py HybridEPDispatch, token_dispatcher.py _HybridEPManager) is not",
        )
    elif args.get("num_experts") or 0:
        out["moe_dispatcher"] = dispatcher
    out["ep_overlap"] = bool(args.get("overlap_moe_expert_parallel_comm"))  # the combined 1F1B (layout.held_combined)
    out.update(stages(args, out["pp"]))
    bf16_layers(args, out)
    return out
