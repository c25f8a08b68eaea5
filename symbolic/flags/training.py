"""The model, training, expert, switch, precision and recipe flags shared by every command (symbolic's and
jaxcheck's), and the Training they build: the layer below both command lines."""
from __future__ import annotations

import argparse
import sys

from ..config import precision
from ..config.offload import OFFLOAD_MODULES
from ..config.errors import ConfigError
from ..config.hfconfig import resolve_model
from ..config.shapes import DEFAULT_MODEL, ModelShape
from ..config.parallel import NO_ZERO, ZERO_OPTIMIZER
from ..config.training import (
    CUDA_GRAPH_IMPLS, CUDA_GRAPH_SCOPES, MOE_DISPATCHERS, RECOMPUTE, TRANSFORMER_IMPLS, RECOMPUTE_MODULES, SCHEDULES, ZERO_STAGES, Training, training_from_json,
)
from .values import capacity, non_negative_int, positive_int, stage_layers


def add_model_args(parser: argparse.ArgumentParser, default: str = DEFAULT_MODEL) -> None:
    parser.add_argument("--model", default=default, metavar="M",
                        help=f"preset name or path to a Hugging Face config.json (default: {default})")
    add_text_only_arg(parser)


def add_text_only_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--text-only", action="store_true",
                        help="a multimodal config.json (Llama 4, Qwen3-VL, Qwen3.5, Kimi-K2.5, Mistral Small 3, "
                             "Gemma 3): count its language model alone; without it all but Kimi-K2.5 are counted with "
                             "their vision tower, Kimi-K2.5 refused (its tower is not modelled)")


def add_training_args(parser: argparse.ArgumentParser, defaults: Training = Training()) -> None:
    """--dp --tp --pp --cp --vpp --seq --mbs --gbs --recompute and the on/off switches (help shows `defaults`)."""
    g = parser.add_argument_group("parallelism and batch")
    g.add_argument("--dp", type=positive_int, default=defaults.d, help="data parallel size d")
    g.add_argument("--tp", type=positive_int, default=defaults.t, help="tensor (+sequence) parallel size t")
    g.add_argument("--pp", type=positive_int, default=defaults.p, help="pipeline parallel size p")
    g.add_argument("--cp", type=positive_int, default=defaults.c, help="context parallel size c")
    g.add_argument("--vpp", type=positive_int, default=defaults.vpp, help="virtual pipeline stages per rank")
    g.add_argument("--seq", type=positive_int, default=defaults.s, help="sequence length s")
    g.add_argument("--mbs", type=positive_int, default=defaults.b, help="micro batch size b")
    g.add_argument("--gbs", type=positive_int, default=defaults.gbs, help="global batch in sequences" + (
        " (default: mbs*dp*pp, one micro batch per pipeline stage)" if defaults.gbs is None else ""))
    g.add_argument("--stage-layers", type=stage_layers, default=defaults.stage_layers, metavar="N,N,...",
                   help="layers of each pipeline stage, pp entries summing to L (with --vpp, each a multiple of vpp: "
                        "the stage's chunks); default L/pp each")
    g.add_argument("--pipeline-layout", default=defaults.pipeline_layout, metavar="LAYOUT",
                   help="Megatron-Core's --pipeline-model-parallel-layout: pp x vpp virtual stages of E (embedding), "
                        "t (layer), m (MTP), L (loss) split at '|', e.g. 'Et*3|(tt|)*29,m|L'")
    g.add_argument("--account-for-embedding", dest="account_embedding", action="store_true",
                   help="Megatron-Core's --account-for-embedding-in-pipeline-split: the embedding is one of L + 1 "
                        "units split evenly over pp x vpp virtual stages")
    g.add_argument("--account-for-loss", dest="account_loss", action="store_true",
                   help="Megatron-Core's --account-for-loss-in-pipeline-split: the loss is one unit of the split")
    add_expert_args(g, defaults)
    add_vision_args(g, defaults)
    add_switch_args(g, defaults, recipe=defaults == Training())
    add_precision_args(parser)


def add_precision_args(parser) -> None:
    """--weight-dtype --grad-dtype --master-weights/--no-master-weights --optimizer --moment-dtype --logits: each
    defaults to the recipe's (profile's) choice."""
    g = parser.add_argument_group("precision and optimizer (default: the recipe's)")
    g.add_argument("--weight-dtype", choices=precision.DTYPES, default=None,
                   help=f"the weights the step computes with ({_recipes_of('weight_dtype')})")
    g.add_argument("--grad-dtype", choices=precision.GRAD_DTYPES, default=None,
                   help=f"gradients ({_recipes_of('grad_dtype')})")
    g.add_argument("--master-weights", dest="master_weights", action="store_true", default=None,
                   help=f"an fp32 master copy of the weights in the optimizer ({_recipes_of('master_weights', True)})")
    g.add_argument("--no-master-weights", dest="master_weights", action="store_false",
                   help=f"no separate master copy ({_recipes_of('master_weights', False)}: its fp32 shards are the master)")
    g.add_argument("--optimizer", choices=precision.OPTIMIZERS, default=None,
                   help="adamw (two moments), sgd (one momentum), adamw8bit (bitsandbytes: two 1-byte moments), "
                        "muon (Megatron-Core's: one momentum on the 2-D layer weights, AdamW on the rest; --zero 0, or 1: "
                        "its layer-wise distributed optimizer)")
    g.add_argument("--moment-dtype", choices=precision.MOMENT_DTYPES, default=None,
                   help="the optimizer moments' dtype (default fp32; Megatron-Core --exp-avg-dtype)")
    g.add_argument("--logits", choices=precision.LOGITS, default=None,
                   help="what the loss keeps of the logits: fp32 (upcast), bf16 (fused cross entropy), none (chunked)")


def _recipes_of(field: str, value=None) -> str:
    """Each trainer recipe's default of a precision field, grouped: 'megatron, deepspeed: bf16; torchtitan: fp32'
    (given `value`, only the recipes whose default it is)."""
    from ..recipes import REGISTRY

    groups: dict = {}
    for recipe in REGISTRY:
        if recipe.flag and (value is None or recipe.precision[field] == value):
            groups.setdefault(recipe.precision[field], []).append(recipe.flag)
    return "; ".join(", ".join(flags) + ("" if value is not None else f": {key}") for key, flags in groups.items())


def add_recipe_arg(parser) -> None:
    """--recipe NAME and --profile: whose accounting (megatron, torchtitan, deepspeed) or jaxcheck's step (jax)."""
    from ..recipes import PROFILES, RECIPES

    parser.add_argument("--recipe", choices=RECIPES, default=None,
                        help="the trainer whose allocations to count (default megatron: the paper's accounting)")
    parser.add_argument("--profile", default=None, choices=PROFILES,
                        help="memory profile (paper = --recipe megatron; jax: jaxcheck's compiled step)")


def profile_from_args(args: argparse.Namespace) -> str:
    """The profile --recipe and --profile name (default paper); both, naming different ones: a one-line error."""
    from ..recipes import DEFAULT_PROFILE, RECIPES

    recipe = RECIPES.get(args.recipe) if getattr(args, "recipe", None) else None
    if recipe and args.profile and args.profile != recipe:
        raise ConfigError(f"--recipe {args.recipe} and --profile {args.profile} conflict: give one")
    return recipe or args.profile or DEFAULT_PROFILE


def recipe_defaults(args: argparse.Namespace, profile: str | None) -> dict:
    """--zero and --recompute as given, or (left unset) the recipe's defaults, else Training's."""
    from ..recipes import PROFILES

    own = {"zero": Training().zero, "recompute": Training().recompute,
           **(PROFILES[profile].defaults if profile in PROFILES else {})}
    return {key: own[key] if getattr(args, key, None) is None else getattr(args, key) for key in own}


def precision_from_args(args: argparse.Namespace, profile: str | None) -> dict:
    """The precision choices: the profile's defaults (Training's without a profile), the flags given over them."""
    from ..recipes import widths

    given = {name: getattr(args, name) for name in precision.FIELDS if getattr(args, name, None) is not None}
    return {**(widths(profile) if profile else {}), **given}


def add_expert_args(group, defaults: Training = Training()) -> None:
    """--ep, --etp, --moe-capacity: how a model's routed experts are laid out (Megatron-Core) and how many tokens
    an expert takes."""
    group.add_argument("--ep", type=positive_int, default=defaults.ep,
                       help="expert parallel size e: the routed experts of a layer split over e ranks (folded, with "
                            "etp, over the dp x tp x cp ranks of a stage)")
    group.add_argument("--etp", type=positive_int, default=defaults.etp,
                       help="expert tensor parallel size t_e: each expert's SwiGLU split over t_e ranks "
                            "(default: tp, as Megatron-Core)")
    group.add_argument("--moe-capacity", type=capacity, default=defaults.moe_capacity, metavar="C_f",
                       help="tokens an expert receives over an even share: the capacity factor, or for a dropless "
                            "run the routing imbalance to allow for (1: the even load the load-balancing loss aims at)")
    group.add_argument("--moe-dispatcher", default=defaults.moe_dispatcher, choices=MOE_DISPATCHERS,
                       help="--recipe megatron: Megatron-Core's token dispatcher (--moe-token-dispatcher-type): "
                            "alltoall, or allgather (Megatron-LM's default: tokens all-gathered over etp x ep into a "
                            "persistent buffer; default: alltoall)")


def add_vision_args(group, defaults: Training = Training()) -> None:
    """--image-tokens, --freeze-vision: a multimodal model's vision tower (Qwen3-VL, Qwen3.5)."""
    group.add_argument("--image-tokens", type=non_negative_int, default=defaults.image_tokens, metavar="N",
                       help="a multimodal model: image tokens per sample through its vision tower, whose saved "
                            "tensors it adds (default: 0, the activations of text alone)")
    group.add_argument("--freeze-vision", action="store_true", default=defaults.freeze_vision,
                       help="a multimodal model: its vision tower frozen (its weights alone: no gradients, optimizer "
                            "states or saved tensors)")


def add_switch_args(group, defaults: Training = Training(), recipe: bool = False) -> None:
    """--recompute, --no-sp, --no-flash-attn, --zero (aliases --dist-opt / --no-dist-opt): what shapes the formulas;
    `recipe`: --zero and --recompute default to the recipe's (recipe_defaults fills them in)."""
    group.add_argument("--recompute", default=None if recipe else defaults.recompute, choices=RECOMPUTE,
                       metavar="{none,selective,full}",
                       help="activation recomputation" + (f" (default: {_own_defaults('recompute')})" if recipe else ""))
    group.add_argument("--ac-every", type=positive_int, default=defaults.ac_every, metavar="N",
                       help="--recipe torchtitan with --recompute selective: checkpoint every N-th block whole and "
                            "keep everything of the others (selective_ac_option = N; default: op-level)")
    group.add_argument("--no-zero-init", dest="zero_init", action="store_false", default=defaults.zero_init,
                       help="--recipe deepspeed --zero 3: the model was built outside deepspeed.zero.Init, so "
                            "F.linear keeps every gathered weight from its forward to its backward")
    group.add_argument("--transformer-impl", default=defaults.transformer_impl, choices=TRANSFORMER_IMPLS,
                       help="--recipe megatron: Megatron-LM's layers, Transformer Engine's or Megatron-Core's own "
                            "(local: two cuBLAS workspaces, not three; with sequence parallelism every column-parallel "
                            "linear all-gathers into Megatron-Core's global buffer; default: transformer_engine)")
    group.add_argument("--swiglu-fusion", action="store_true", default=defaults.swiglu_fusion,
                       help="--recipe megatron, a SwiGLU model: Megatron-LM's --bias-swiglu-fusion (its default with "
                            "--swiglu): the fused SwiGLU keeps fc1's output alone, not SiLU(gate) beside it (default: "
                            "the paper's count, unfused)")
    group.add_argument("--srelu-fusion", action="store_true", default=defaults.srelu_fusion,
                       help="--recipe megatron, squared-ReLU experts: Megatron-LM's --use-fused-weighted-squared-relu: "
                            "the fused function keeps fc1's output, not relu's output and its square (default: unfused)")
    group.add_argument("--no-grad-accum-fusion", dest="grad_accum_fusion", action="store_false",
                       default=defaults.grad_accum_fusion,
                       help="--recipe megatron: --no-gradient-accumulation-fusion (no persistent dummy wgrad buffers)")
    group.add_argument("--fp8", default=defaults.fp8, choices=tuple(precision.FP8_RECIPES),
                       help="--recipe megatron: Transformer Engine FP8 (Megatron-LM --fp8-format hybrid --fp8-recipe "
                            "delayed|tensorwise|blockwise|mxfp8) or NVFP4 (--fp4-format e2m1 --fp4-recipe nvfp4): GEMM "
                            "inputs saved quantized and quantized weight copies cached; --recipe torchtitan: torchao Float8 (tensorwise|rowwise) on the blocks' linears "
                            "(default: none)")
    group.add_argument("--fp8-param-gather", action="store_true", default=defaults.fp8_param_gather,
                       help="--recipe megatron with --fp8 delayed, tensorwise, mxfp8 or nvfp4: the weights kept "
                            "quantized (Megatron-LM --fp8-param-gather, --fp4-param-gather)")
    group.add_argument("--no-fp8-transpose", dest="fp8_transpose", action="store_false",
                       default=defaults.fp8_transpose,
                       help="--recipe megatron on a Blackwell card (B200, GB200, B300, GB300): FP8 GEMMs take either "
                            "layout, so --fp8 delayed or tensorwise weights keep one FP8 copy, no transpose (Transformer "
                            "Engine's is_non_tn_fp8_gemm_supported)")
    group.add_argument("--fp8-all-gather", action="store_true", default=defaults.fp8_all_gather,
                       help="--recipe torchtitan with --fp8 tensorwise: FSDP2 all-gathers the blocks' linear weights "
                            "in FP8 (torchao's enable_fsdp_float8_all_gather)")
    group.add_argument("--compile", action="store_true", default=defaults.compile,
                       help="--recipe torchtitan: each TransformerBlock under torch.compile (--compile.enable): "
                            "what AOTAutograd's partitioner saves instead of eager autograd's")
    group.add_argument("--recompute-modules", default=defaults.recompute_modules, metavar="M,M,...",
                       help="--recipe megatron with --recompute selective: what it reruns in backward, comma-separated "
                            f"from {', '.join(RECOMPUTE_MODULES)} (Megatron-Core --recompute-modules; default: "
                            "core_attn)")
    group.add_argument("--cuda-graph", default=defaults.cuda_graph, choices=CUDA_GRAPH_IMPLS,
                       help="--recipe megatron: Megatron-LM --cuda-graph-impl transformer_engine, each layer's forward "
                            "and backward captured per micro batch: their static inputs (default: none)")
    group.add_argument("--cuda-graph-scope", default=defaults.cuda_graph_scope, metavar="S,S,...",
                       help="--recipe megatron with --cuda-graph: what is captured (Megatron-LM --cuda-graph-modules), "
                            f"comma-separated from {', '.join(CUDA_GRAPH_SCOPES)} (default: layer, every layer whole)")
    group.add_argument("--tp-comm-overlap", action="store_true", default=defaults.tp_comm_overlap,
                       help="--recipe megatron: Megatron-LM --tp-comm-overlap, Transformer Engine's 12 userbuffers "
                            "of [s b / c, h] (outside PyTorch's pool) and its tripled cuBLAS workspace; --recipe "
                            "torchtitan (with --compile): its async TP, a symmetric-memory workspace of 2 [b s/(c t), "
                            "h] in bf16 (parallelism.enable_async_tensor_parallel)")
    group.add_argument("--ep-overlap", action="store_true", default=defaults.ep_overlap,
                       help="--recipe megatron, MoE at pp > 1 with --vpp: Megatron-LM --overlap-moe-expert-parallel-comm, "
                            "the combined 1F1B schedule (one more warm-up forward; each steady step's forward beside "
                            "another micro batch's backward, layer by layer)")
    group.add_argument("--native-ce", action="store_true", default=defaults.native_ce,
                       help="--recipe megatron: Megatron-LM --cross-entropy-loss-fusion with --cross-entropy-fusion-impl "
                            "native, the loss torch.compile runs: its backward holds an fp32 copy of the logits' size "
                            "beside the saved softmax (needs fp32 logits)")
    group.add_argument("--offload-modules", default=defaults.offload_modules, metavar="M,M,...",
                       help="--recipe megatron: Megatron-Core's fine-grained activation offloading "
                            "(--fine-grained-activation-offloading --offload-modules): the tensors these modules save "
                            "for backward, of at least 2^20 elements, go to host memory, two layers' worth staying "
                            f"on the GPU; comma-separated from {', '.join(OFFLOAD_MODULES)} (default: none)")
    group.add_argument("--cpu-offload-layers", type=non_negative_int, default=defaults.cpu_offload_layers,
                       metavar="N", help="--recipe megatron, a dense model at p = 1: Megatron-Core's "
                       "--cpu-offloading-num-layers, Transformer Engine's layer-level activation offloading (the "
                       "first N layers' saved tensors go to the host, L - N layers' worth on the GPU; default: 0)")
    group.add_argument("--schedule", default=defaults.schedule, choices=SCHEDULES,
                       help="pipeline schedule: 1f1b (rank r holds min(m, p - r) micro batches; the formulas' and "
                            "jaxcheck's default) or gpipe (jaxcheck only: every forward, then every backward)")
    group.add_argument("--no-sp", dest="sp", action="store_false", default=defaults.sp,
                       help="disable sequence parallelism")
    group.add_argument("--no-flash-attn", dest="flash_attn", action="store_false", default=defaults.flash_attn,
                       help="keep s x s attention scores and softmax for backward")
    group.add_argument("--zero", type=int, choices=ZERO_STAGES, default=None if recipe else defaults.zero,
                       help="ZeRO stage, what is sharded over d*c: 0 nothing, 1 optimizer states, 2 also gradients, "
                            "3 also weights (FSDP) (default: " + (f"{_own_defaults('zero')})" if recipe else
                                                                  "%(default)s)"))
    add_zero_aliases(group)


def add_zero_aliases(group, on: str = "--dist-opt", off: str = "--no-dist-opt",
                     what: str = "Megatron's distributed optimizer") -> None:
    """The one declaration of --zero's aliases: `on` is --zero 1 (`what` it is), `off` --zero 0."""
    group.add_argument(on, dest="zero", action="store_const", const=ZERO_OPTIMIZER, default=argparse.SUPPRESS,
                       help=f"alias of --zero {ZERO_OPTIMIZER} ({what})")
    group.add_argument(off, dest="zero", action="store_const", const=NO_ZERO, default=argparse.SUPPRESS,
                       help=f"alias of --zero {NO_ZERO}")


def _own_defaults(key: str) -> str:
    """Training's default of --zero or --recompute, then each recipe's own: 'none; torchtitan: selective'."""
    from ..recipes import REGISTRY

    own = [f"{recipe.flag}: {recipe.defaults[key]}" for recipe in REGISTRY if recipe.flag and key in recipe.defaults]
    return "; ".join([str(getattr(Training(), key)), *own])


def model_from_args(args: argparse.Namespace) -> ModelShape:
    if not args.model.strip():
        raise ConfigError(f"--model {args.model!r}: an empty name; give a preset or a config.json (or its folder)")
    return resolve_model(args.model, getattr(args, "text_only", False))


def training_from_args(args: argparse.Namespace, shape: ModelShape | None = None, profile: str | None = None) -> Training:
    """Build and (given the model) check the training config, with the precision `profile` models by default
    (without one, the Training defaults: Megatron's bf16 mixed precision) and the precision flags over it; errors are
    one-line ConfigErrors."""
    fields = {key: value for key, value in vars(args).items() if key not in precision.FIELDS}
    training = training_from_json({**fields, **recipe_defaults(args, profile), **precision_from_args(args, profile)})
    if shape is not None and shape.vision and not training.image_tokens and not training.freeze_vision:
        print(f"note: {shape.name}'s vision tower is counted, its activations are text-only's (give --image-tokens N "
              "per sample)", file=sys.stderr)
    return training.check(shape, profile or "all") if shape is not None else training
