"""Where a --model value comes from: a preset, or a Hugging Face config.json read as a ModelShape, safely: every key is read into the shape, known not to change what
training allocates, or refused with one line naming it and what mem4d models (a ConfigError: exit 2). Nothing is
ignored, so a model mem4d does not describe is never counted as if it were a dense Llama."""
from __future__ import annotations

import json
from pathlib import Path

from .errors import ConfigError
from .hfdeepseek import DEEPSEEK_MOE, DEEPSEEK_VALUES, MLA, MLA_FAMILIES, MLA_KEYS, MLA_VALUES, _deepseek, _mla, \
    _mla_letters
from .hfkeys import BASE, HARMLESS, ONLY, Family, Only, Reader, _false
from .shapes import PRESETS, ModelShape

QWEN_MOE = ("num_experts", "num_experts_per_tok", "moe_intermediate_size", "decoder_sparse_step", "mlp_only_layers")


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
    "deepseek": Family(BASE + ("attention_bias",) + DEEPSEEK_MOE, _deepseek, "DeepSeekMoE (multi-head attention)",
                       values=DEEPSEEK_VALUES),
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
    "activation_function": Only(lambda x: x in ("gelu_new", "gelu", "gelu_pytorch_tanh", "gelu_fast"),
                                "a GeLU MLP (gelu_new, gelu, gelu_pytorch_tanh, gelu_fast)"),
    "reorder_and_upcast_attn": Only(_false, "attention in the compute dtype (an fp32 upcast of the scores is not "
                                            "modelled)"),
    **{key: Only(lambda x: isinstance(x, (int, float)) and not isinstance(x, bool) and 0 <= x < 1,
                 "a dropout probability from 0 to 1") for key in ("attn_pdrop", "embd_pdrop", "resid_pdrop")},
}
SUPPORTED = ", ".join(FAMILIES)


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
