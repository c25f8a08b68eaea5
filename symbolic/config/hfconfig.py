"""Where a --model value comes from: a preset, or a Hugging Face config.json read as a ModelShape, safely: every key is read into the shape, known not to change what
training allocates, or refused with one line naming it and what mem4d models (a ConfigError: exit 2). Nothing is
ignored, so a model mem4d does not describe is never counted as if it were a dense Llama."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .errors import ConfigError
from .shapes import MAX_SIZE, PRESETS, ModelShape

# keys that never change what a training step allocates: names, token ids, initialisation, the constants of RoPE and
# RMSNorm, inference caches and generation settings, the aux-loss coefficient and the top-k renormalisation (scalars
# on tensors that exist either way), and the sliding window (flash attention keeps no s x s tensor, and unfused
# attention materialises all s keys whatever the mask)
HARMLESS = frozenset({
    "_name_or_path", "architectures", "model_type", "transformers_version", "torch_dtype", "dtype", "auto_map",
    "bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id", "decoder_start_token_id", "initializer_range",
    "rms_norm_eps", "rope_theta", "rope_scaling", "rope_parameters",
    "max_position_embeddings", "use_cache", "pretraining_tp", "use_sliding_window", "sliding_window",
    "max_window_layers", "layer_types", "output_router_logits", "router_aux_loss_coef", "norm_topk_prob",
    "_attn_implementation", "_attn_implementation_autoset", "attn_implementation", "return_dict",
    "output_hidden_states", "output_attentions", "torchscript", "use_bfloat16", "tf_legacy_loss",
    "chunk_size_feed_forward", "is_decoder", "cross_attention_hidden_size", "tie_encoder_decoder", "max_length",
    "min_length", "do_sample", "early_stopping", "num_beams", "num_beam_groups", "diversity_penalty", "temperature",
    "top_k", "top_p", "typical_p", "repetition_penalty", "length_penalty", "no_repeat_ngram_size",
    "encoder_no_repeat_ngram_size", "bad_words_ids", "num_return_sequences", "output_scores",
    "return_dict_in_generate", "forced_bos_token_id", "forced_eos_token_id", "remove_invalid_values",
    "exponential_decay_length_penalty", "suppress_tokens", "begin_suppress_tokens", "finetuning_task", "id2label",
    "label2id", "tokenizer_class", "prefix", "task_specific_params", "problem_type",
})


@dataclass(frozen=True)
class Only:
    """A key allowed at the values `allowed` accepts (what mem4d models), refused at any other."""

    allowed: Callable[[object], bool]
    supports: str  # what mem4d models, for the one-line refusal


def _zero(x) -> bool:
    return x in (0, 0.0, None) and not isinstance(x, bool)


def _false(x) -> bool:
    return x is False or x is None


ONLY = {
    "hidden_act": Only(lambda x: x in ("silu", "swish"), "SwiGLU with SiLU ('silu')"),
    "attention_dropout": Only(_zero, "no dropout (0.0): dropout masks are not modelled"),
    "router_jitter_noise": Only(_zero, "no router jitter (0.0): its noise tensor is not modelled"),
    "clip_qkv": Only(lambda x: x is None, "no clipping of Q, K, V (null): its masks are not modelled"),
    "is_encoder_decoder": Only(_false, "decoder-only models"),
    "add_cross_attention": Only(_false, "decoder-only models without cross-attention"),
    "pruned_heads": Only(lambda x: x in ({}, None), "unpruned heads ({})"),
    "quantization_config": Only(lambda x: False, "unquantized weights (quantized training is not modelled)"),
}


def _fp8_checkpoint(x) -> bool:
    """DeepSeek-V3's and Kimi K2's published storage: fp8 e4m3 weights in 128 x 128 blocks with fp32 scales, which
    training dequantizes to bf16 first (DeepSeek-V3's inference/fp8_cast_bf16.py); quantized training is not modelled."""
    return isinstance(x, dict) and x.get("quant_method") == "fp8" and x.get("fmt", "e4m3") == "e4m3" \
        and x.get("weight_block_size") == [128, 128] and set(x) <= {"quant_method", "fmt", "weight_block_size",
                                                                    "activation_scheme"}

# multi-head latent attention (DeepSeek-V2/V3, Kimi K2): read by the MLA families only, refused in any other
MLA = ("q_lora_rank", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")

BASE = ("hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads", "num_hidden_layers",
        "vocab_size", "head_dim", "tie_word_embeddings")
QWEN_MOE = ("num_experts", "num_experts_per_tok", "moe_intermediate_size", "decoder_sparse_step", "mlp_only_layers")


@dataclass(frozen=True)
class Family:
    """One model_type: the structural keys it reads (beyond HARMLESS and ONLY) and how they become shape fields."""

    keys: tuple[str, ...]
    build: Callable[[dict, "Reader"], dict]  # (config, reader) -> ModelShape fields beyond the base letters
    about: str  # what the family is, for messages
    letters: Callable[["Reader"], dict] | None = None  # the base letters under other keys (default: BASE's)
    values: dict | None = None  # the values its keys may take where they differ from VALUES'


class Reader:
    """Checked access to one config.json's values: each failure a one-line ConfigError naming the file and key."""

    def __init__(self, raw: dict, path: Path):
        self.raw, self.path = raw, path

    def fail(self, key: str, why: str) -> ConfigError:
        value = json.dumps(self.raw.get(key))
        if len(value) > 40:  # a nested object or a long list: its kind, not its text
            value = {"{": "{...}", "[": "[...]"}.get(value[0], value[:37] + "...")
        return ConfigError(f"{self.path}: key {key!r} = {value}: {why}")

    def count(self, key: str, default: int | None = None, zero: bool = False) -> int:
        """A positive (or, with zero, non-negative) integer up to 2^40; `default` when absent or null."""
        value = self.raw.get(key)
        if value is None:
            if default is None:
                raise ConfigError(f"{self.path}: missing key {key!r}")
            return default
        if not isinstance(value, int) or isinstance(value, bool) or not (0 if zero else 1) <= value <= MAX_SIZE:
            raise self.fail(key, f"must be a {'non-negative' if zero else 'positive'} integer up to 2^40")
        return value

    def flag(self, key: str, default: bool = False) -> bool:
        value = self.raw.get(key, default)
        return default if value is None else value

    def layers(self, key: str, L: int) -> tuple[int, ...]:
        """A list of distinct layer indices below L (null or absent: none)."""
        value = self.raw.get(key) or []
        if not isinstance(value, list) or any(not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < L
                                              for i in value):
            raise self.fail(key, f"must be a list of layer indices from 0 to L - 1 = {L - 1}")
        return tuple(sorted(set(value)))


def _llama(raw: dict, r: Reader) -> dict:
    """Llama: optional biases on Q, K, V and O (attention_bias) and on the MLP (mlp_bias)."""
    bias = r.flag("attention_bias")
    return {"qkv_bias": bias, "o_bias": bias, "mlp_bias": r.flag("mlp_bias")}


def _qwen2(raw: dict, r: Reader) -> dict:
    """Qwen2: biases on Q, K and V (always: transformers' Qwen2Attention has no key for them), none on O."""
    return {"qkv_bias": True}


def _qwen3(raw: dict, r: Reader) -> dict:
    """Qwen3: RMSNorm over each head's dh on Q and K (q_norm, k_norm), optional Q, K, V, O biases."""
    bias = r.flag("attention_bias")
    return {"qk_norm": "head", "qkv_bias": bias, "o_bias": bias}


def _mixtral(raw: dict, r: Reader) -> dict:
    """Mixtral: every layer's MLP is num_local_experts experts of intermediate_size, num_experts_per_tok per token."""
    return {"E": r.count("num_local_experts"), "k_e": r.count("num_experts_per_tok"),
            "f_e": r.count("intermediate_size")}


def _qwen_moe(raw: dict, r: Reader, shared: bool) -> dict:
    """Qwen2-MoE / Qwen3-MoE: layer i routes over num_experts experts of moe_intermediate_size unless it is in
    mlp_only_layers or (i + 1) % decoder_sparse_step != 0 (then a dense MLP of intermediate_size); Qwen2-MoE adds a
    shared expert of shared_expert_intermediate_size scaled by a sigmoid gate [h, 1] (transformers' Qwen2MoeSparseMoeBlock,
    Qwen3MoeDecoderLayer)."""
    E = r.count("num_experts", 0, zero=True)
    L = r.count("num_hidden_layers")
    if E == 0:
        return {}
    step = r.count("decoder_sparse_step", 1)
    only = set(r.layers("mlp_only_layers", L))
    dense = tuple(i for i in range(L) if i in only or (i + 1) % step)
    out = {"E": E, "k_e": r.count("num_experts_per_tok"), "f_e": r.count("moe_intermediate_size"),
           "dense_layers": dense}
    if shared:
        f_s = r.count("shared_expert_intermediate_size", 0, zero=True)
        out.update(f_s=f_s, shared_gate=f_s > 0)
    return out


def _olmoe(raw: dict, r: Reader) -> dict:
    """OLMoE: every layer's MLP is num_experts experts of intermediate_size; RMSNorm over the whole Q (a dh) and K
    (k dh) projections (q_norm, k_norm); optional biases (attention_bias)."""
    bias = r.flag("attention_bias")
    return {"E": r.count("num_experts"), "k_e": r.count("num_experts_per_tok"), "f_e": r.count("intermediate_size"),
            "qk_norm": "full", "qkv_bias": bias, "o_bias": bias}


def _deepseek(raw: dict, r: Reader) -> dict:
    """DeepSeekMoE (model_type deepseek, multi-head attention): layer i routes over n_routed_experts experts of
    moe_intermediate_size when i >= first_k_dense_replace and i % moe_layer_freq == 0 (else a dense MLP of
    intermediate_size), with n_shared_experts shared experts of moe_intermediate_size."""
    E = r.count("n_routed_experts", 0, zero=True)
    L = r.count("num_hidden_layers")
    if E == 0:
        return {}
    first, freq = r.count("first_k_dense_replace", 0, zero=True), r.count("moe_layer_freq", 1)
    f_e = r.count("moe_intermediate_size")
    bias = r.flag("attention_bias")
    return {"E": E, "k_e": r.count("num_experts_per_tok"), "f_e": f_e,
            "f_s": r.count("n_shared_experts", 0, zero=True) * f_e, "qkv_bias": bias, "o_bias": bias,
            "dense_layers": tuple(i for i in range(L) if not (i >= first and i % freq == 0))}


DEEPSEEK_MOE = ("n_routed_experts", "n_shared_experts", "moe_intermediate_size", "num_experts_per_tok",
                "first_k_dense_replace", "moe_layer_freq", "scoring_func", "aux_loss_alpha", "seq_aux")
# DeepSeek-V2/V3's routing: its method (greedy, group_limited_greedy, noaux_tc: a score-correction bias), groups,
# the scale of the routed output (a scalar), the inference-only expert-parallel size of its modeling code
ROUTING = ("topk_method", "n_group", "topk_group", "routed_scaling_factor", "ep_size")


def _mla(raw: dict, r: Reader) -> dict:
    """DeepSeek-V2/V3 and Kimi K2 (transformers' DeepseekV3Attention, Megatron-Core MLASelfAttention): multi-head
    latent attention of a heads (q_lora_rank, null or 0 for a plain query projection; kv_lora_rank; a query/key
    head of qk_nope_head_dim + qk_rope_head_dim; a value head of v_head_dim), DeepSeekMoE layers, the
    score-correction bias [E] of noaux_tc routing (e_score_correction_bias) and num_nextn_predict_layers
    multi-token-prediction modules."""
    out = _deepseek(raw, r)
    if out.get("dense_layers") is not None and len(out["dense_layers"]) == r.count("num_hidden_layers"):
        raise r.fail("first_k_dense_replace", "every layer is dense, so the routed experts are never used")
    out.pop("qkv_bias", None), out.pop("o_bias", None)
    if r.flag("attention_bias"):
        raise r.fail("attention_bias", "not modelled; mem4d models multi-head latent attention without biases")
    if out.get("E"):
        out["expert_bias"] = raw.get("topk_method") == "noaux_tc"
        out["sigmoid"] = raw.get("scoring_func", "softmax") == "sigmoid"
    return {**out, "q_lora": r.count("q_lora_rank", 0, zero=True), "kv_lora": r.count("kv_lora_rank"),
            "rope_dim": r.count("qk_rope_head_dim"), "v_dim": r.count("v_head_dim"),
            "mtp": r.count("num_nextn_predict_layers", 0, zero=True)}


def _mla_letters(r: Reader) -> dict:
    """The base letters of an MLA config: head_dim is qk_nope_head_dim (the key/value heads are a: every head is
    decompressed from the latent)."""
    a = r.count("num_attention_heads")
    if r.raw.get("num_key_value_heads") not in (None, a):
        raise r.fail("num_key_value_heads", f"multi-head latent attention decompresses a key and a value for each of "
                     f"the a={a} heads; mem4d models num_key_value_heads = num_attention_heads")
    if r.raw.get("head_dim") not in (None, r.raw.get("qk_nope_head_dim")) and \
            r.raw.get("head_dim") != r.raw.get("qk_rope_head_dim"):
        raise r.fail("head_dim", "an MLA head is qk_nope_head_dim + qk_rope_head_dim wide (values v_head_dim); "
                     "another head_dim is not modelled")
    return {"h": r.count("hidden_size"), "f": r.count("intermediate_size"), "a": a, "k": a,
            "L": r.count("num_hidden_layers"), "v": r.count("vocab_size"), "tied": r.flag("tie_word_embeddings"),
            "head_dim": r.count("qk_nope_head_dim")}


# DeepSeek-V3's sigmoid scores keep an fp32 [T, E] for backward as the softmax does (symbolic.components.moe)
MLA_VALUES = {"scoring_func": Only(lambda x: x in ("softmax", "sigmoid"), "softmax or sigmoid routing scores")}
MLA_KEYS = BASE + ("attention_bias",) + DEEPSEEK_MOE + ROUTING + MLA + ("num_nextn_predict_layers",
                                                                         "quantization_config")

GPT2 = ("n_embd", "n_layer", "n_head", "n_positions", "n_ctx", "n_inner", "vocab_size", "activation_function",
        "attn_pdrop", "embd_pdrop", "resid_pdrop", "tie_word_embeddings", "layer_norm_epsilon", "scale_attn_weights",
        "scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn", "summary_type", "summary_use_proj",
        "summary_activation", "summary_proj_to_labels", "summary_first_dropout")  # summary_*: the double-heads model's


def _gpt2_letters(r: Reader) -> dict:
    """GPT-2: n_embd, n_head (multi-head: k = a), n_layer, vocab_size, n_inner (null: 4 n_embd), tied unless
    tie_word_embeddings is false (transformers' GPT2LMHeadModel)."""
    h = r.count("n_embd")
    return {"h": h, "f": r.count("n_inner", 4 * h), "a": r.count("n_head"), "k": r.count("n_head"),
            "L": r.count("n_layer"), "v": r.count("vocab_size"), "tied": r.flag("tie_word_embeddings", True),
            "head_dim": None}


def _gpt2(raw: dict, r: Reader) -> dict:
    """GPT-2: LayerNorm, a GeLU MLP, biases on every linear (Conv1D), n_positions learned positions, dropout where
    any of attn_pdrop, embd_pdrop, resid_pdrop is above 0 (transformers' GPT2Block)."""
    dropout = any(isinstance(raw.get(key), (int, float)) and raw[key] > 0
                  for key in ("attn_pdrop", "embd_pdrop", "resid_pdrop"))
    return {"mlp": "gelu", "norm": "layer", "positions": r.count("n_positions"), "qkv_bias": True, "o_bias": True,
            "mlp_bias": True, "dropout": dropout}


FAMILIES: dict[str, Family] = {
    "llama": Family(BASE + ("attention_bias", "mlp_bias"), _llama, "Llama"),
    "mistral": Family(BASE, lambda raw, r: {}, "Mistral"),
    "qwen2": Family(BASE, _qwen2, "Qwen2 (Q, K, V biases)"),
    "qwen3": Family(BASE + ("attention_bias",), _qwen3, "Qwen3 (per-head q/k norms)"),
    "mixtral": Family(BASE + ("num_local_experts", "num_experts_per_tok"), _mixtral, "Mixtral (experts)"),
    "qwen2_moe": Family(BASE + QWEN_MOE + ("shared_expert_intermediate_size",),
                        lambda raw, r: {**_qwen2(raw, r), **_qwen_moe(raw, r, True)}, "Qwen2-MoE (shared expert)"),
    "qwen3_moe": Family(BASE + QWEN_MOE + ("attention_bias",),
                        lambda raw, r: {**_qwen3(raw, r), **_qwen_moe(raw, r, False)}, "Qwen3-MoE"),
    "olmoe": Family(BASE + ("attention_bias", "num_experts", "num_experts_per_tok"), _olmoe, "OLMoE"),
    "deepseek": Family(BASE + ("attention_bias",) + DEEPSEEK_MOE, _deepseek, "DeepSeekMoE (multi-head attention)"),
    "deepseek_v2": Family(MLA_KEYS, _mla, "DeepSeek-V2 (multi-head latent attention)", _mla_letters, MLA_VALUES),
    "deepseek_v3": Family(MLA_KEYS, _mla, "DeepSeek-V3 (multi-head latent attention, multi-token prediction)",
                          _mla_letters, MLA_VALUES),
    "kimi_k2": Family(MLA_KEYS, _mla, "Kimi K2 (DeepSeek-V3's architecture)", _mla_letters, MLA_VALUES),
    "gpt2": Family(GPT2, _gpt2, "GPT-2 (LayerNorm, GeLU, learned positions)", _gpt2_letters),
}
# the values a family's non-integer structural keys may take (its build reads the integers)
VALUES = {
    "tie_word_embeddings": Only(lambda x: isinstance(x, bool), "true or false"),
    "attention_bias": Only(lambda x: isinstance(x, bool), "true or false"),
    "mlp_bias": Only(lambda x: isinstance(x, bool), "true or false"),
    "scoring_func": Only(lambda x: x == "softmax", "softmax routing"),
    "topk_method": Only(lambda x: x in ("greedy", "group_limited_greedy", "noaux_tc"),
                        "greedy, group_limited_greedy or noaux_tc expert selection"),
    "n_group": Only(lambda x: x is None or isinstance(x, int) and not isinstance(x, bool) and x >= 1,
                    "a positive number of expert groups"),
    "topk_group": Only(lambda x: x is None or isinstance(x, int) and not isinstance(x, bool) and x >= 1,
                       "a positive number of groups per token"),
    "routed_scaling_factor": Only(lambda x: isinstance(x, (int, float)) and not isinstance(x, bool),
                                  "a number (it scales the routed output)"),
    "ep_size": Only(lambda x: x in (1, None), "1 (the modeling code's inference expert parallelism; mem4d takes "
                    "--ep)"),
    "quantization_config": Only(_fp8_checkpoint, "unquantized weights, or the published fp8 e4m3 128 x 128 block "
                                "checkpoint read as the bf16 weights it is trained from (quantized training is not "
                                "modelled)"),
    "q_lora_rank": Only(lambda x: x is None or isinstance(x, int) and not isinstance(x, bool) and x >= 0,
                        "a non-negative rank, or null for a plain query projection"),
    "aux_loss_alpha": Only(lambda x: isinstance(x, (int, float)), "a number"),
    "seq_aux": Only(lambda x: isinstance(x, bool), "true or false"),
    "activation_function": Only(lambda x: x in ("gelu_new", "gelu", "gelu_pytorch_tanh", "gelu_fast"),
                                "a GeLU MLP (gelu_new, gelu, gelu_pytorch_tanh, gelu_fast)"),
    "reorder_and_upcast_attn": Only(_false, "attention in the compute dtype (an fp32 upcast of the scores is not "
                                            "modelled)"),
    **{key: Only(lambda x: isinstance(x, (int, float)) and not isinstance(x, bool) and 0 <= x < 1,
                 "a dropout probability from 0 to 1") for key in ("attn_pdrop", "embd_pdrop", "resid_pdrop")},
}
SUPPORTED = ", ".join(FAMILIES)
MLA_FAMILIES = ("deepseek_v2", "deepseek_v3", "kimi_k2")


def _load(path: Path) -> dict:
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file (expected a preset name or a Hugging Face config.json)") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: cannot read: {err}") from None
    except json.JSONDecodeError as err:
        raise ConfigError(f"{path}: malformed JSON at line {err.lineno} column {err.colno}: {err.msg}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a JSON object at top level")
    return raw


def _family(raw: dict, r: Reader) -> Family:
    """The config's family by model_type (a config without one is read as a Llama), after the refusals that name
    what a config is better than its model_type: a nested text model, multi-head latent attention."""
    if "text_config" in raw:
        raise r.fail("text_config", "a nested language-model config (a multimodal checkpoint such as Llama 4) is not "
                     f"modelled; mem4d reads a text model's config.json (model_type {SUPPORTED})")
    kind = raw.get("model_type", "llama")
    for key in MLA if kind not in MLA_FAMILIES else ():
        if raw.get(key) is not None:
            raise r.fail(key, f"multi-head latent attention in a model_type {kind!r} config is not modelled; mem4d "
                         f"reads it for model_type {', '.join(MLA_FAMILIES)} (DeepSeek-V2/V3, Kimi K2)")
    if kind not in FAMILIES:
        raise r.fail("model_type", f"this architecture is not modelled; mem4d models model_type {SUPPORTED}")
    return FAMILIES[kind]


def read(path: str | Path) -> ModelShape:
    """The ModelShape of a config.json; a key mem4d neither models nor knows to be harmless is a one-line ConfigError."""
    path = Path(path)
    raw = _load(path)
    r = Reader(raw, path)
    family = _family(raw, r)
    for key, value in raw.items():
        rule = ((family.values or {}).get(key) or VALUES.get(key) if key in family.keys else None) or ONLY.get(key)
        if rule is not None:
            if not rule.allowed(value):
                raise r.fail(key, f"not modelled; mem4d models {rule.supports}")
        elif key not in family.keys and key not in HARMLESS:
            raise r.fail(key, f"not a key mem4d knows for model_type {raw.get('model_type', 'llama')!r} "
                         f"({family.about}): it may change what is allocated, so it is refused rather than ignored")
    if family.letters is not None:
        values = family.letters(r)
    else:
        values = {"h": r.count("hidden_size"), "f": r.count("intermediate_size"), "a": r.count("num_attention_heads")}
        values.update(k=r.count("num_key_value_heads", values["a"]), L=r.count("num_hidden_layers"),
                      v=r.count("vocab_size"), tied=r.flag("tie_word_embeddings"),
                      head_dim=r.count("head_dim", 0) or None)
    return ModelShape(name=_name(raw, path), **values, **family.build(raw, r))


def _name(raw: dict, path: Path) -> str:
    """A config.json's model name: its _name_or_path, else the file's own name unless that is the generic
    'config', else its model_type (e.g. 'llama'), else 'config'."""
    for name in (raw.get("_name_or_path"), path.stem if path.stem != "config" else None, raw.get("model_type")):
        if isinstance(name, str) and name.strip():
            return name.strip()
    return path.stem


def from_hf_config(path: str | Path) -> ModelShape:
    """The ModelShape of a Hugging Face config.json (every key modelled or refused in one line)."""
    return read(path)


def resolve_model(spec: str) -> ModelShape:
    """A preset name, or a path to a config.json (or to a directory holding one)."""
    if spec in PRESETS:
        return PRESETS[spec]
    path = Path(spec)
    if path.is_dir():
        path = path / "config.json"
    if path.suffix == ".json" or path.exists():
        return read(path)
    raise ConfigError(f"unknown model {spec!r}: choose a preset ({', '.join(PRESETS)}) or a path to a config.json")
