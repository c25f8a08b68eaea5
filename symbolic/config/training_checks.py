"""A Training's fields checked, each bad value one line (Training.__post_init__), the byte widths its precision
makes set on it, and the choices the checks hold its fields to (RECOMPUTE, RECOMPUTE_MODULES, SCHEDULES,
MAX_CAPACITY); FLAGS and flag name a field as the command line and JSON do."""

from __future__ import annotations

from . import layout, precision, rules
from .choices import one_of
from .errors import ConfigError
from .offload import offload_modules
from .parallel import ZERO_STAGES
from .recipe_options import CUDA_GRAPH_IMPLS, CUDA_GRAPH_SCOPES, MOE_DISPATCHERS, TRANSFORMER_IMPLS
from .shapes import MAX_SIZE
from .training_rules import TRAINING_RULES
from ..time.cards import CARDS

RECOMPUTE = ("none", "selective", "full")
RECOMPUTE_METHODS = (
    "uniform",
    "block",
)  # Megatron-Core --recompute-method (transformer_block.py _checkpointed_forward)
# what selective recompute reruns in backward (Megatron-Core --recompute-modules, transformer_config.py): the
# attention core (its default), MLA's up-projections and RoPE, the two RMSNorms of a layer, the routed experts'
# activation function
RECOMPUTE_MODULES = ("core_attn", "mla_up_proj", "layernorm", "moe_act", "mlp")
# 1f1b: one forward, one backward (PipeDream-flush; Megatron-LM's forward_backward_pipelining_without_interleaving):
# rank r holds min(m, p - r) micro batches; gpipe: every forward, then every backward (all m held)
SCHEDULES = ("1f1b", "gpipe")
MAX_CAPACITY = 2.0**20  # the largest --moe-capacity: far beyond any capacity factor (E / k_e is the most that matters)
# Training field -> CLI flag (and JSON key) where they differ: the one vocabulary of --json configs and sweep grids
FLAGS = {"d": "dp", "t": "tp", "p": "pp", "c": "cp", "s": "seq", "b": "mbs"}


def flag(field_name: str) -> str:
    """The CLI flag name (without dashes; JSON key) of a Training field."""
    return FLAGS.get(field_name, field_name)


def canonical_modules(value) -> str:
    """--recompute-modules as a canonical string: known names, each once, in RECOMPUTE_MODULES' order."""
    names = value.split(",") if isinstance(value, str) else list(value) if isinstance(value, (list, tuple)) else None
    if not names or any(name not in RECOMPUTE_MODULES for name in names) or len(set(names)) != len(names):
        raise ConfigError(
            f"--recompute-modules must be distinct names from {', '.join(RECOMPUTE_MODULES)} "
            f"(comma-separated), got {value!r}"
        )
    return ",".join(name for name in RECOMPUTE_MODULES if name in names)


def check_fields(training) -> None:
    """Raise a one-line ConfigError for the first field of `training` out of its range or choices (checked in the order
    below); set its byte widths and its canonical strings."""
    _check_sizes(training)
    _check_precision(training)
    _check_counts(training)
    _check_choices(training)
    _check_layers(training)


def _check_sizes(training) -> None:
    """The parallel sizes, the sequence, the micro batch and ep: positive integers."""
    for name in ("d", "t", "p", "c", "vpp", "s", "b", "ep"):
        value = getattr(training, name)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ConfigError(f"--{flag(name)} must be a positive integer, got {value!r}")


def _check_precision(training) -> None:
    """The precision choices (precision.check), FP8 and its options, then the byte widths they make, set on
    `training`."""
    problem = precision.check({name: getattr(training, name) for name in precision.FIELDS})
    if problem:
        raise ConfigError(problem)
    one_of("--fp8", training.fp8, precision.FP8_RECIPES)
    for name in (
        "fp8_param_gather",
        "compile",
        "fp8_all_gather",
        "freeze_vision",
        "tp_comm_overlap",
        "ep_overlap",
        "native_ce",
        "account_embedding",
        "account_loss",
        "fp8_transpose",
    ):
        if not isinstance(getattr(training, name), bool):
            raise ConfigError(f"{name} must be true or false, got {getattr(training, name)!r}")
    if training.fp8_param_gather and (
        training.fp8 not in precision.PARAM_GATHER_RECIPES or training.weight_dtype not in ("bf16", "fp8")
    ):
        raise ConfigError(
            "--fp8-param-gather keeps the quantized weights as the model's: it needs --fp8 delayed, "
            "tensorwise, mxfp8 or nvfp4 (blockwise weights are not modelled) and bf16 or fp8 "
            "weights, got "
            f"--fp8 {training.fp8}, --weight-dtype {training.weight_dtype}"
        )
    if training.fp8_all_gather and training.fp8 != "tensorwise":
        raise ConfigError(
            f"--fp8-all-gather gathers per-tensor-scaled FP8 weights (torchao's "
            f"enable_fsdp_float8_all_gather supports tensorwise only): got --fp8 {training.fp8}"
        )
    # TE quantizes its linears' inputs from the activation dtype, bf16 (--bf16) or fp32 (neither --bf16 nor
    # --fp16: TE 2.20.2 module/linear.py casts to activation_dtype, then quantizes; the rest stays fp32)
    if training.fp8 != "none" and training.act_dtype not in ("bf16", "fp32"):
        raise ConfigError(
            f"--fp8 {training.fp8} quantizes bf16 or fp32 activations (Megatron-LM's FP8 with --bf16, "
            f"or with neither --bf16 nor --fp16): --act-dtype {training.act_dtype} is not modelled with it"
        )
    weight = (
        precision.param_gather_bytes(training.fp8)
        if training.fp8_param_gather
        else precision.DTYPES[training.weight_dtype]
    )
    widths = {
        "weight_bytes": weight,
        "grad_bytes": precision.DTYPES[training.grad_dtype],
        "opt_bytes": precision.opt_bytes(training.optimizer, training.moment_dtype, training.master_weights),
        "act_bytes": precision.DTYPES[training.act_dtype],
        "logit_bytes": precision.LOGITS[training.logits],
    }
    for name, value in widths.items():
        object.__setattr__(training, name, value)


def _check_counts(training) -> None:
    """--cpu-offload-layers, the optional positive sizes, the recipes' on/off options, --image-tokens and
    --moe-capacity (made a float)."""
    for name in (
        "cpu_offload_layers",
        "recompute_num_layers",
        "num_layers_at_start_in_bf16",
        "num_layers_at_end_in_bf16",
    ):
        value = getattr(training, name)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SIZE:
            raise ConfigError(f"--{name.replace('_', '-')} must be an integer from 0 to {MAX_SIZE}, got {value!r}")
    if training.recompute_method not in RECOMPUTE_METHODS:
        raise ConfigError(
            f"--recompute-method must be one of {', '.join(RECOMPUTE_METHODS)}, got {training.recompute_method!r}"
        )
    if (training.recompute_num_layers or training.recompute_method != "uniform") and training.recompute != "full":
        raise ConfigError(
            "--recompute-num-layers and --recompute-method go with --recompute full (Megatron-Core's "
            f"TransformerConfig refuses them otherwise), got --recompute {training.recompute}"
        )
    for name in ("gbs", "etp", "ac_every"):
        value = getattr(training, name)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value <= 0):
            raise ConfigError(f"--{flag(name).replace('_', '-')} must be a positive integer, got {value!r}")
    for name in ("zero_init", "grad_accum_fusion", "swiglu_fusion", "srelu_fusion", "moe_grouped_gemm"):
        if not isinstance(getattr(training, name), bool):
            raise ConfigError(f"{name} must be true or false, got {getattr(training, name)!r}")
    if (
        isinstance(training.image_tokens, bool)
        or not isinstance(training.image_tokens, int)
        or not 0 <= training.image_tokens <= MAX_SIZE
    ):
        raise ConfigError(f"--image-tokens must be an integer from 0 to {MAX_SIZE}, got {training.image_tokens!r}")
    capacity = training.moe_capacity
    if isinstance(capacity, bool) or not isinstance(capacity, (int, float)) or not 0 < capacity <= MAX_CAPACITY:
        raise ConfigError(f"--moe-capacity must be a number above 0 and at most {MAX_CAPACITY}, got {capacity!r}")
    object.__setattr__(training, "moe_capacity", float(capacity))


def _check_choices(training) -> None:
    """The named choices (one_of), --cuda-graph-scope and the module lists made canonical strings."""
    one_of("--transformer-impl", training.transformer_impl, TRANSFORMER_IMPLS)
    one_of("--moe-dispatcher", training.moe_dispatcher, MOE_DISPATCHERS)
    one_of("--gpu", training.gpu, tuple(CARDS))
    one_of("--schedule", training.schedule, SCHEDULES)
    one_of("--cuda-graph", training.cuda_graph, CUDA_GRAPH_IMPLS)
    scopes = str(training.cuda_graph_scope).replace(",", "+").split("+")
    if not all(scope in CUDA_GRAPH_SCOPES for scope in scopes) or len(set(scopes)) != len(scopes):
        raise ConfigError(
            f"--cuda-graph-scope must be distinct names from {', '.join(CUDA_GRAPH_SCOPES)}, got "
            f"{training.cuda_graph_scope!r}"
        )
    object.__setattr__(training, "cuda_graph_scope", "+".join(x for x in CUDA_GRAPH_SCOPES if x in scopes))
    object.__setattr__(training, "recompute_modules", canonical_modules(training.recompute_modules))
    object.__setattr__(training, "offload_modules", offload_modules(training.offload_modules))
    one_of("--recompute", training.recompute, RECOMPUTE)
    one_of("--zero", training.zero, ZERO_STAGES)


def _check_layers(training) -> None:
    """--stage-layers made a tuple, the layout's own check, then the rows of the training config alone."""
    if training.stage_layers is not None:
        layers = training.stage_layers
        if (
            isinstance(layers, (str, bytes))
            or not hasattr(layers, "__iter__")
            or not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in layers)
            or not layers
        ):
            raise ConfigError(f"--stage-layers must be positive integers, one per pipeline stage, got {layers!r}")
        object.__setattr__(training, "stage_layers", tuple(layers))  # a JSON list or argparse's tuple alike
    layout.check(training)
    rules.check(rules.letters(training), TRAINING_RULES)
