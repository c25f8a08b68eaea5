"""How a published checkpoint is stored, which is not what training holds: a config.json's quantization_config (FP8
block-wise, MXFP4, NVFP4, bitsandbytes, compressed-tensors, ...). A run trains from the weights dequantized to the
recipe's precision (transformers' quantizers with dequantize, DeepSeek-V3's inference/fp8_cast_bf16.py, Megatron-
Bridge's import), so the count is the unquantized model's and the checkpoint's packing and scale tensors are named in
one line as the checkpoint's, never counted as training memory. Each key of the object is classified with its
reason; a quant_method or a key not listed here is refused by name (transformers 5.25.0
src/transformers/utils/quantization_config.py, QuantizationMethod and each method's config class)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .errors import ConfigError


def _names(x) -> bool:
    return x is None or isinstance(x, list) and all(isinstance(name, str) for name in x)


def _flag(x) -> bool:
    return x is None or isinstance(x, bool)


def _text(x) -> bool:
    return x is None or isinstance(x, str)


def _block(x) -> bool:
    return (
        x is None
        or isinstance(x, list)
        and len(x) == 2
        and all(isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= 2**16 for n in x)
    )


def _anything(x) -> bool:
    return True


@dataclass(frozen=True)
class Key:
    """One key of a quantization_config: the values it may take and why it changes no tensor training holds."""

    allowed: Callable[[object], bool]
    why: str


UNQUANTIZED = Key(_names, "the modules stored unquantized (storage only)")
LOADING = Key(_flag, "how transformers loads the checkpoint (dequantize on load or not): load time only")
ACTIVATIONS = Key(_text, "how inference quantizes activations; training's activations follow --fp8")
KV_CACHE = Key(
    lambda x: x is None or isinstance(x, (str, dict)),
    "the inference KV cache's quantization: training keeps no KV cache",
)
METHOD = Key(_text, "names the storage method")
PRODUCER = Key(_anything, "the tool and version that wrote the checkpoint")
# compressed-tensors' (llm-compressor's) description of its packing: schemes per module group, the on-disk format
PACKING = Key(_anything, "how the checkpoint's weights and scales are packed on disk (storage only)")


@dataclass(frozen=True)
class Method:
    """One quant_method: what its checkpoint stores beside the weights (the one-line note), and its keys."""

    stores: str
    keys: dict[str, Key]


_FP8 = {
    "fmt": Key(_text, "the stored fp8 element format"),
    "scale_fmt": Key(_text, "the stored scales' format"),
    "weight_block_size": Key(_block, "the block each fp32 scale covers (null: one scale per tensor)"),
    "activation_scheme": ACTIVATIONS,
    "modules_to_not_convert": UNQUANTIZED,
    "modules_to_convert": UNQUANTIZED,
    "ignored_layers": UNQUANTIZED,
    "dequantize": LOADING,
    "expert_dtype": Key(_text, "the experts' stored dtype"),
}
_BNB = (
    {
        key: Key(_flag, "bitsandbytes' on-load packing: storage and inference only")
        for key in (
            "load_in_8bit",
            "load_in_4bit",
            "_load_in_8bit",
            "_load_in_4bit",
            "bnb_4bit_use_double_quant",
            "llm_int8_enable_fp32_cpu_offload",
            "llm_int8_has_fp16_weight",
        )
    }
    | {
        key: Key(
            _text,
            "bitsandbytes' 4-bit packing (QLoRA's frozen base; training adapters on it is not modelled: the "
            "estimate is full training of the dequantized weights)",
        )
        for key in ("bnb_4bit_quant_type", "bnb_4bit_compute_dtype", "bnb_4bit_quant_storage")
    }
    | {
        "llm_int8_threshold": Key(
            lambda x: x is None or isinstance(x, (int, float)) and not isinstance(x, bool),
            "LLM.int8()'s outlier threshold at inference",
        ),
        "llm_int8_skip_modules": UNQUANTIZED,
    }
)
_COMPRESSED = {
    key: PACKING
    for key in (
        "config_groups",
        "format",
        "quantization_status",
        "global_compression_ratio",
        "sparsity_config",
        "transform_config",
        "version",
    )
} | {
    "ignore": UNQUANTIZED,
    "kv_cache_scheme": KV_CACHE,
    "run_compressed": LOADING,
    "dequantize": LOADING,
    "use_optimized_inference": LOADING,
}

METHODS: dict[str, Method] = {
    "fp8": Method("fp8 weights with fp32 scales (weight_scale_inv, one per weight_block_size block)", _FP8),
    "fbgemm_fp8": Method(
        "fp8 weights with per-row scales",
        {
            "activation_scale_ub": Key(
                lambda x: x is None or isinstance(x, (int, float)) and not isinstance(x, bool),
                "an inference activation bound",
            ),
            "modules_to_not_convert": UNQUANTIZED,
        },
    ),
    "mxfp4": Method(
        "MXFP4 blocks of 32 4-bit values with a uint8 scale each (the experts' *_blocks, *_scales)",
        {"modules_to_not_convert": UNQUANTIZED, "dequantize": LOADING},
    ),
    "nvfp4": Method(
        "NVFP4 blocks of 16 4-bit values with an fp8 scale each and a per-tensor fp32 scale",
        {"modules_to_not_convert": UNQUANTIZED},
    ),
    "modelopt": Method(
        "NVIDIA ModelOpt's quantized weights (quant_algo: FP8 or NVFP4) with their scales",
        {
            "quant_algo": Key(_text, "the stored format (FP8, NVFP4, ...)"),
            "group_size": Key(
                lambda x: x is None or isinstance(x, int) and not isinstance(x, bool), "the scales' group"
            ),
            "kv_cache_quant_algo": KV_CACHE,
            "exclude_modules": UNQUANTIZED,
            "producer": PRODUCER,
        },
    ),
    "bitsandbytes": Method("bitsandbytes' int8 or 4-bit (nf4, fp4) packed weights with their quantization state", _BNB),
    "compressed-tensors": Method("compressed-tensors' packed weights with their scales (config_groups)", _COMPRESSED),
}


def read(config: object, path) -> str | None:
    """The one-line note naming what a quantization_config's checkpoint stores (None without one); a method or a key
    this module does not classify, or a value outside its key's, is a one-line ConfigError naming it."""
    if config is None:
        return None
    where = f"{path}: key 'quantization_config'"
    if not isinstance(config, dict):
        raise ConfigError(f"{where}: must be an object (the checkpoint's quantization)")
    method = config.get("quant_method")
    if method not in METHODS:
        raise ConfigError(
            f"{where}: quant_method {method!r} is a storage mem4d does not know; it reads {', '.join(METHODS)}"
        )
    for key, value in config.items():
        rule = METHOD if key == "quant_method" else METHODS[method].keys.get(key)
        if rule is None:
            raise ConfigError(
                f"{where}: {key!r} is not a {method} key mem4d knows (it may change what the checkpoint "
                "holds), so it is refused rather than ignored"
            )
        if not rule.allowed(value):
            raise ConfigError(f"{where}: {key!r} = {value!r} is not a value mem4d reads ({rule.why})")
    return (
        f"{path}: checkpoint storage ({method}): {METHODS[method].stores}; the checkpoint's, not training "
        "memory: training holds the dequantized weights in the recipe's precision, as counted"
    )
