"""The pieces every config.json family is read with: the keys known to be harmless, the keys allowed at some values
only (Only), a family's description (Family), and checked access to one file's values (Reader)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .errors import ConfigError
from .shapes import MAX_SIZE

# keys that only matter at inference, each with why (read at checked values: HARMLESS_VALUES)
INFERENCE = {
    "initial_context_length": "gpt-oss: the context its YaRN rope_scaling extends at inference (rope_scaling's "
    "original_max_position_embeddings); RoPE holds no parameter or buffer in training",
    "kv_cache_dtype": "the inference KV cache's dtype: training keeps no KV cache",
    "mamba_ssm_dtype": "Qwen3.5's dtype of the Gated DeltaNet's recurrent-state cache in inference engines (vLLM); "
    "transformers' Qwen3_5 classes have no such attribute, and training keeps no state cache",
    "transformers.js_config": "transformers.js's options for its ONNX exports (their dtype, KV cache, external "
    "data): another library's inference files",
}

# keys that never change what a training step allocates, each group with why
_HARMLESS_GROUPS = {
    "names and bookkeeping: no tensor": (
        "_name_or_path",
        "architectures",
        "model_type",
        "transformers_version",
        "torch_dtype",
        "dtype",
        "auto_map",
        "finetuning_task",
        "id2label",
        "label2id",
        "tokenizer_class",
        "prefix",
        "task_specific_params",
        "problem_type",
        "is_llama_config",
    ),  # is_llama_config: SmolLM2's conversion marker
    "token ids: no tensor": ("bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id", "decoder_start_token_id"),
    "initialisation: the same tensors": ("initializer_range",),
    "RoPE's and RMSNorm's constants, RoPE's layout and positions (multimodal RoPE's ids): no parameter, no buffer "
    "training keeps": (
        "rms_norm_eps",
        "rope_theta",
        "rope_scaling",
        "rope_parameters",
        "max_position_embeddings",
        "use_mrope",
        "rope_interleaved",
    ),
    "Llama's pretraining TP slicing: the same parameters": ("pretraining_tp",),
    "the sliding window: flash attention keeps no s x s tensor, and unfused attention materialises all s keys "
    "whatever the mask": ("use_sliding_window", "sliding_window", "max_window_layers", "layer_types"),
    "router scalars on tensors that exist either way (the aux-loss coefficient, top-k renormalisation)": (
        "output_router_logits",
        "router_aux_loss_coef",
        "norm_topk_prob",
    ),
    "inference caches and generation settings": (
        "use_cache",
        "cache_implementation",
        "max_length",
        "min_length",
        "do_sample",
        "early_stopping",
        "num_beams",
        "num_beam_groups",
        "diversity_penalty",
        "temperature",
        "top_k",
        "top_p",
        "typical_p",
        "repetition_penalty",
        "length_penalty",
        "no_repeat_ngram_size",
        "encoder_no_repeat_ngram_size",
        "bad_words_ids",
        "num_return_sequences",
        "output_scores",
        "return_dict_in_generate",
        "forced_bos_token_id",
        "forced_eos_token_id",
        "remove_invalid_values",
        "exponential_decay_length_penalty",
        "suppress_tokens",
        "begin_suppress_tokens",
    ),
    "the attention kernel's choice and what forward returns: the same tensors": (
        "_attn_implementation",
        "_attn_implementation_autoset",
        "attn_implementation",
        "return_dict",
        "output_hidden_states",
        "output_attentions",
        "torchscript",
        "use_bfloat16",
        "tf_legacy_loss",
        "chunk_size_feed_forward",
        "is_decoder",
        "cross_attention_hidden_size",
        "tie_encoder_decoder",
    ),
}
WHY_HARMLESS = {key: why for why, keys in _HARMLESS_GROUPS.items() for key in keys} | INFERENCE  # key -> its reason
HARMLESS = frozenset(WHY_HARMLESS)


@dataclass(frozen=True)
class Only:
    """A key allowed at the values `allowed` accepts (what mem4d models), refused at any other."""

    allowed: Callable[[object], bool]
    supports: str  # what mem4d models, for the one-line refusal


def zero_or_null(x) -> bool:
    return x in (0, 0.0, None) and not isinstance(x, bool)


def false_or_null(x) -> bool:
    return x is False or x is None


TRUE_OR_FALSE = Only(lambda x: isinstance(x, bool), "true or false")  # a flag key
ONLY = {
    "hidden_act": Only(lambda x: x in ("silu", "swish"), "SwiGLU with SiLU ('silu')"),
    "attention_dropout": Only(zero_or_null, "no dropout (0.0): dropout masks are not modelled"),
    "router_jitter_noise": Only(zero_or_null, "no router jitter (0.0): its noise tensor is not modelled"),
    "clip_qkv": Only(lambda x: x is None, "no clipping of Q, K, V (null): its masks are not modelled"),
    "is_encoder_decoder": Only(false_or_null, "decoder-only models"),
    "add_cross_attention": Only(false_or_null, "decoder-only models without cross-attention"),
    "pruned_heads": Only(lambda x: x in ({}, None), "unpruned heads ({})"),
    "qkv_bias": Only(false_or_null, "no Q, K, V biases but attention_bias's (Qwen2-MoE reads qkv_bias)"),
}


def real(x) -> bool:
    """A value of a float attribute of the family's configuration class: Infinity, -Infinity and NaN included, as
    Python's json writes float('inf') and float('nan') (Nemotron 3's time_step_limit [0.0, Infinity])."""
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def real_or_null(x) -> bool:
    return x is None or real(x)


def number(x) -> bool:
    """A finite number (Infinity and NaN are a float attribute's values only: see real)."""
    return real(x) and math.isfinite(x)


def number_or_null(x) -> bool:
    return x is None or number(x)


def count_or_null(x, least: int = 1) -> bool:
    return x is None or isinstance(x, int) and not isinstance(x, bool) and least <= x <= MAX_SIZE


ATTENTION_KINDS = ("full_attention", "sliding_attention")  # layer_types mem4d reads as one attention layer each
# the values HARMLESS keys may take: a harmless key is harmless at these values only (layer_types listing a linear
# attention or Mamba layer describes another allocation; a string where a number belongs is not a config)
HARMLESS_VALUES = {
    "layer_types": Only(
        lambda x: x is None or isinstance(x, list) and all(kind in ATTENTION_KINDS for kind in x),
        "full or sliding-window attention in every layer (" + ", ".join(ATTENTION_KINDS) + ")",
    ),
    "use_sliding_window": Only(lambda x: x is None or isinstance(x, bool), "true or false"),
    "sliding_window": Only(count_or_null, "a positive window, or null"),
    "max_window_layers": Only(lambda x: count_or_null(x, 0), "a number of layers, or null"),
    "max_position_embeddings": Only(count_or_null, "a positive length"),
    "pretraining_tp": Only(count_or_null, "a positive integer"),
    "rope_theta": Only(real, "a number"),
    "rms_norm_eps": Only(real, "a number"),
    "router_aux_loss_coef": Only(real_or_null, "a number"),
    "initializer_range": Only(real_or_null, "a number"),
    "rope_scaling": Only(lambda x: x is None or isinstance(x, dict), "an object or null"),
    "rope_parameters": Only(lambda x: x is None or isinstance(x, dict), "an object or null"),
    "initial_context_length": Only(count_or_null, "a positive length"),
    "kv_cache_dtype": Only(lambda x: x is None or isinstance(x, str), "a dtype name"),
    "mamba_ssm_dtype": Only(lambda x: x is None or isinstance(x, str), "a dtype name"),
    "transformers.js_config": Only(lambda x: x is None or isinstance(x, dict), "an object"),
    **{
        key: Only(lambda x: x is None or isinstance(x, bool), "true or false")
        for key in (
            "use_cache",
            "output_router_logits",
            "norm_topk_prob",
            "use_mrope",
            "is_llama_config",
            "rope_interleaved",
        )
    },
}


# the values the shared non-integer structural keys may take (a family's `values` add its own; builds read integers)
VALUES = {"tie_word_embeddings": TRUE_OR_FALSE, "attention_bias": TRUE_OR_FALSE, "mlp_bias": TRUE_OR_FALSE}


BASE = (
    "hidden_size",
    "intermediate_size",
    "num_attention_heads",
    "num_key_value_heads",
    "num_hidden_layers",
    "vocab_size",
    "head_dim",
    "tie_word_embeddings",
)


@dataclass(frozen=True)
class Family:
    """One model_type: the structural keys it reads (beyond HARMLESS and ONLY) and how they become shape fields."""

    keys: tuple[str, ...]
    build: Callable[[dict, "Reader"], dict]  # (config, reader) -> ModelShape fields beyond the base letters
    about: str  # what the family is, for messages
    letters: Callable[["Reader"], dict] | None = None  # the base letters under other keys (default: BASE's)
    values: dict | None = None  # the values its keys may take where they differ from VALUES'
    defaults: dict | None = None  # its library defaults for keys a file leaves out (families.defaults)


class Reader:
    """Checked access to one config.json's values: each failure a one-line ConfigError naming the file and key."""

    def __init__(self, raw: dict, path: Path, defaults: dict | None = None):
        self.raw, self.path, self.defaults = raw, path, defaults or {}

    def get(self, key: str, fallback=None):
        """key's value: the file's; left out, the family's library default (families.defaults); null either way,
        `fallback` (what the library makes of None)."""
        value = self.raw[key] if key in self.raw else self.defaults.get(key)
        return fallback if value is None else value

    def fail(self, key: str, why: str) -> ConfigError:
        value = json.dumps(self.raw.get(key))
        if len(value) > 40:  # a nested object or a long list: its kind, not its text
            value = {"{": "{...}", "[": "[...]"}.get(value[0], value[:37] + "...")
        return ConfigError(f"{self.path}: key {key!r} = {value}: {why}")

    def count(self, key: str, default: int | None = None, zero: bool = False) -> int:
        """A positive (or, with zero, non-negative) integer up to 2^40: the file's, else the library default, else
        (null, or left out with no library default) `default`, else a one-line refusal."""
        value = self.get(key)
        if value is None:
            if default is None:
                raise ConfigError(f"{self.path}: missing key {key!r} (and no library default for this family)")
            return default
        if not isinstance(value, int) or isinstance(value, bool) or not (0 if zero else 1) <= value <= MAX_SIZE:
            raise self.fail(key, f"must be a {'non-negative' if zero else 'positive'} integer up to 2^40")
        return value

    def flag(self, key: str, default: bool = False) -> bool:
        value = self.get(key, default)
        if not isinstance(value, bool):
            raise self.fail(key, "must be true or false")
        return value

    def layers(self, key: str, L: int) -> tuple[int, ...]:
        """A list of distinct layer indices below L (null or absent: none)."""
        value = self.get(key) or []
        if not isinstance(value, list) or any(
            not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < L for i in value
        ):
            raise self.fail(key, f"must be a list of layer indices from 0 to L - 1 = {L - 1}")
        return tuple(sorted(set(value)))
