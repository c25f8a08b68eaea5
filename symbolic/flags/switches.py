"""The switch flags every command shares (--recompute, the trainers' kernels and buffers, --fp8, the schedule, --zero
and its aliases): what changes a formula's form or a recipe's buffers."""

from __future__ import annotations

import argparse

from ..config import precision
from ..config.offload import OFFLOAD_MODULES
from ..config.parallel import NO_ZERO, ZERO_OPTIMIZER
from ..config.training import CUDA_GRAPH_IMPLS, CUDA_GRAPH_SCOPES, TRANSFORMER_IMPLS, Training
from ..config.parallel import ZERO_STAGES
from ..config.training_checks import RECOMPUTE, RECOMPUTE_MODULES, SCHEDULES
from .values import non_negative_int, positive_int


def add_switch_args(group, defaults: Training = Training(), recipe: bool = False) -> None:
    """--recompute, --no-sp, --no-flash-attn, --zero (aliases --dist-opt / --no-dist-opt): what shapes the formulas;
    `recipe`: --zero and --recompute default to the recipe's (recipe_defaults fills them in)."""
    _recompute_args(group, defaults, recipe)
    _kernel_args(group, defaults)
    _fp8_args(group, defaults)
    _capture_args(group, defaults)
    _buffer_args(group, defaults)
    _form_args(group, defaults, recipe)


def _recompute_args(group, defaults: Training, recipe: bool) -> None:
    """--recompute, --ac-every, --no-zero-init: what the backward reruns and what a forward keeps for it."""
    group.add_argument(
        "--recompute",
        default=None if recipe else defaults.recompute,
        choices=RECOMPUTE,
        metavar="{none,selective,full}",
        help="activation recomputation" + (f" (default: {_own_defaults('recompute')})" if recipe else ""),
    )
    group.add_argument(
        "--ac-every",
        type=positive_int,
        default=defaults.ac_every,
        metavar="N",
        help="--recipe torchtitan with --recompute selective: checkpoint every N-th block whole and "
        "keep everything of the others (selective_ac_option = N; default: op-level)",
    )
    group.add_argument(
        "--no-zero-init",
        dest="zero_init",
        action="store_false",
        default=defaults.zero_init,
        help="--recipe deepspeed --zero 3: the model was built outside deepspeed.zero.Init, so "
        "F.linear keeps every gathered weight from its forward to its backward",
    )


def _kernel_args(group, defaults: Training) -> None:
    """--transformer-impl, --swiglu-fusion, --srelu-fusion, --moe-grouped-gemm, --no-grad-accum-fusion: Megatron-LM's layers and
    fused kernels."""
    group.add_argument(
        "--transformer-impl",
        default=defaults.transformer_impl,
        choices=TRANSFORMER_IMPLS,
        help="--recipe megatron: Megatron-LM's layers, Transformer Engine's or Megatron-Core's own "
        "(local: two cuBLAS workspaces, not three; with sequence parallelism every column-parallel "
        "linear all-gathers into Megatron-Core's global buffer; default: transformer_engine)",
    )
    group.add_argument(
        "--swiglu-fusion",
        action="store_true",
        default=defaults.swiglu_fusion,
        help="--recipe megatron, a SwiGLU model: Megatron-LM's --bias-swiglu-fusion (its default with "
        "--swiglu): the fused SwiGLU keeps fc1's output alone, not SiLU(gate) beside it (default: "
        "the paper's count, unfused)",
    )
    group.add_argument(
        "--srelu-fusion",
        action="store_true",
        default=defaults.srelu_fusion,
        help="--recipe megatron, squared-ReLU experts: Megatron-LM's --use-fused-weighted-squared-relu: "
        "the fused function keeps fc1's output, not relu's output and its square (default: unfused)",
    )
    group.add_argument(
        "--moe-grouped-gemm",
        action="store_true",
        default=defaults.moe_grouped_gemm,
        help="--recipe megatron, an MoE model: Megatron-LM's --moe-grouped-gemm with Transformer Engine: the "
        "experts as GroupedLinear, whose GEMMs keep 4 cuBLAS workspaces of their own (default: off)",
    )
    group.add_argument(
        "--no-grad-accum-fusion",
        dest="grad_accum_fusion",
        action="store_false",
        default=defaults.grad_accum_fusion,
        help="--recipe megatron: --no-gradient-accumulation-fusion (no persistent dummy wgrad buffers)",
    )


def _fp8_args(group, defaults: Training) -> None:
    """--fp8, --fp8-param-gather, --no-fp8-transpose, --fp8-all-gather: FP8 (or NVFP4) GEMMs and their weights."""
    group.add_argument(
        "--fp8",
        default=defaults.fp8,
        choices=tuple(precision.FP8_RECIPES),
        help="--recipe megatron: Transformer Engine FP8 (Megatron-LM --fp8-format hybrid --fp8-recipe "
        "delayed|tensorwise|blockwise|mxfp8) or NVFP4 (--fp4-format e2m1 --fp4-recipe nvfp4): GEMM "
        "inputs saved quantized and quantized weight copies cached; --recipe torchtitan: torchao Float8 (tensorwise|rowwise) on the blocks' linears "
        "(default: none)",
    )
    group.add_argument(
        "--fp8-param-gather",
        action="store_true",
        default=defaults.fp8_param_gather,
        help="--recipe megatron with --fp8 delayed, tensorwise, mxfp8 or nvfp4: the weights kept "
        "quantized (Megatron-LM --fp8-param-gather, --fp4-param-gather)",
    )
    group.add_argument(
        "--no-fp8-transpose",
        dest="fp8_transpose",
        action="store_false",
        default=defaults.fp8_transpose,
        help="--recipe megatron on a Blackwell card (B200, GB200, B300, GB300): FP8 GEMMs take either "
        "layout, so --fp8 delayed or tensorwise weights keep one FP8 copy, no transpose (Transformer "
        "Engine's is_non_tn_fp8_gemm_supported)",
    )
    group.add_argument(
        "--fp8-all-gather",
        action="store_true",
        default=defaults.fp8_all_gather,
        help="--recipe torchtitan with --fp8 tensorwise: FSDP2 all-gathers the blocks' linear weights "
        "in FP8 (torchao's enable_fsdp_float8_all_gather)",
    )
    for end, default in (("start", defaults.num_layers_at_start_in_bf16), ("end", defaults.num_layers_at_end_in_bf16)):
        group.add_argument(
            f"--num-layers-at-{end}-in-bf16",
            type=non_negative_int,
            default=default,
            metavar="N",
            help=f"--recipe megatron with --fp8: Megatron-LM's --first-last-layers-bf16, the N decoder layers at "
            f"the model's {end} run outside the FP8 context: BF16 saved GEMM inputs, no FP8 weight copies "
            "(Megatron-LM's default with the flag: 1; default here: 0, none)",
        )


def _capture_args(group, defaults: Training) -> None:
    """--compile, --recompute-modules, --cuda-graph, --cuda-graph-scope: what is compiled, rerun or captured."""
    group.add_argument(
        "--compile",
        action="store_true",
        default=defaults.compile,
        help="--recipe torchtitan: each TransformerBlock under torch.compile (--compile.enable): "
        "what AOTAutograd's partitioner saves instead of eager autograd's",
    )
    group.add_argument(
        "--recompute-modules",
        default=defaults.recompute_modules,
        metavar="M,M,...",
        help="--recipe megatron with --recompute selective: what it reruns in backward, comma-separated "
        f"from {', '.join(RECOMPUTE_MODULES)} (Megatron-Core --recompute-modules; default: "
        "core_attn)",
    )
    group.add_argument(
        "--cuda-graph",
        default=defaults.cuda_graph,
        choices=CUDA_GRAPH_IMPLS,
        help="--recipe megatron: Megatron-LM --cuda-graph-impl transformer_engine, each layer's forward "
        "and backward captured per micro batch: their static inputs (default: none)",
    )
    group.add_argument(
        "--cuda-graph-scope",
        default=defaults.cuda_graph_scope,
        metavar="S,S,...",
        help="--recipe megatron with --cuda-graph: what is captured (Megatron-LM --cuda-graph-modules), "
        f"comma-separated from {', '.join(CUDA_GRAPH_SCOPES)} (default: layer, every layer whole)",
    )


def _buffer_args(group, defaults: Training) -> None:
    """--tp-comm-overlap, --offload-modules, --cpu-offload-layers: buffers beside the step and offloading."""
    group.add_argument(
        "--tp-comm-overlap",
        action="store_true",
        default=defaults.tp_comm_overlap,
        help="--recipe megatron: Megatron-LM --tp-comm-overlap, Transformer Engine's 12 userbuffers "
        "of [s b / c, h] (outside PyTorch's pool) and its tripled cuBLAS workspace; --recipe "
        "torchtitan (with --compile): its async TP, a symmetric-memory workspace of 2 [b s/(c t), "
        "h] in bf16 (parallelism.enable_async_tensor_parallel)",
    )
    group.add_argument(
        "--ep-overlap",
        action="store_true",
        default=defaults.ep_overlap,
        help="--recipe megatron, MoE at pp > 1 with --vpp: Megatron-LM --overlap-moe-expert-parallel-comm, "
        "the combined 1F1B schedule (one more warm-up forward; each steady step's forward beside "
        "another micro batch's backward, layer by layer)",
    )
    group.add_argument(
        "--native-ce",
        action="store_true",
        default=defaults.native_ce,
        help="--recipe megatron: Megatron-LM --cross-entropy-loss-fusion with --cross-entropy-fusion-impl "
        "native, the loss torch.compile runs: its backward holds an fp32 copy of the logits' size "
        "beside the saved softmax (needs fp32 logits)",
    )
    group.add_argument(
        "--offload-modules",
        default=defaults.offload_modules,
        metavar="M,M,...",
        help="--recipe megatron: Megatron-Core's fine-grained activation offloading "
        "(--fine-grained-activation-offloading --offload-modules): the tensors these modules save "
        "for backward, of at least 2^20 elements, go to host memory, two layers' worth staying "
        f"on the GPU; comma-separated from {', '.join(OFFLOAD_MODULES)} (default: none)",
    )
    group.add_argument(
        "--cpu-offload-layers",
        type=non_negative_int,
        default=defaults.cpu_offload_layers,
        metavar="N",
        help="--recipe megatron, a dense model at p = 1: Megatron-Core's "
        "--cpu-offloading-num-layers, Transformer Engine's layer-level activation offloading (the "
        "first N layers' saved tensors go to the host, L - N layers' worth on the GPU; default: 0)",
    )
    group.add_argument(
        "--recompute-num-layers",
        type=non_negative_int,
        default=defaults.recompute_num_layers,
        metavar="N",
        help="--recipe megatron with --recompute full, a dense model without virtual stages: Megatron-Core's "
        "--recompute-num-layers (uniform: chunks of N layers, each keeping its input; block: the first N "
        "layers of a stage checkpointed, the rest keeping everything; default: 0, every layer alone)",
    )
    group.add_argument(
        "--recompute-method",
        choices=("uniform", "block"),
        default=defaults.recompute_method,
        help="--recompute-num-layers' method (Megatron-Core --recompute-method; default: uniform)",
    )


def _form_args(group, defaults: Training, recipe: bool) -> None:
    """--schedule, --no-sp, --no-flash-attn, --zero and its aliases: what shapes the formulas."""
    group.add_argument(
        "--schedule",
        default=defaults.schedule,
        choices=SCHEDULES,
        help="pipeline schedule: 1f1b (rank r holds min(m, p - r) micro batches; the formulas' and "
        "jaxcheck's default) or gpipe (jaxcheck only: every forward, then every backward)",
    )
    group.add_argument(
        "--no-sp", dest="sp", action="store_false", default=defaults.sp, help="disable sequence parallelism"
    )
    group.add_argument(
        "--no-flash-attn",
        dest="flash_attn",
        action="store_false",
        default=defaults.flash_attn,
        help="keep s x s attention scores and softmax for backward",
    )
    group.add_argument(
        "--zero",
        type=int,
        choices=ZERO_STAGES,
        default=None if recipe else defaults.zero,
        help="ZeRO stage, what is sharded over d*c: 0 nothing, 1 optimizer states, 2 also gradients, "
        "3 also weights (FSDP) (default: " + (f"{_own_defaults('zero')})" if recipe else "%(default)s)"),
    )
    add_zero_aliases(group)


def add_zero_aliases(
    group, on: str = "--dist-opt", off: str = "--no-dist-opt", what: str = "Megatron's distributed optimizer"
) -> None:
    """The one declaration of --zero's aliases: `on` is --zero 1 (`what` it is), `off` --zero 0."""
    group.add_argument(
        on,
        dest="zero",
        action="store_const",
        const=ZERO_OPTIMIZER,
        default=argparse.SUPPRESS,
        help=f"alias of --zero {ZERO_OPTIMIZER} ({what})",
    )
    group.add_argument(
        off,
        dest="zero",
        action="store_const",
        const=NO_ZERO,
        default=argparse.SUPPRESS,
        help=f"alias of --zero {NO_ZERO}",
    )


def _own_defaults(key: str) -> str:
    """Training's default of --zero or --recompute, then each recipe's own: 'none; torchtitan: selective'."""
    from ..recipes import REGISTRY

    own = [f"{recipe.flag}: {recipe.defaults[key]}" for recipe in REGISTRY if recipe.flag and key in recipe.defaults]
    return "; ".join([str(getattr(Training(), key)), *own])
