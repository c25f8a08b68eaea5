"""Where a --model value comes from: a preset, or a Hugging Face config.json read as a ModelShape, safely: every key is read into the shape, known not to change what
training allocates, or refused with one line naming it and what mem4d models (a ConfigError: exit 2). Nothing is
ignored, so a model mem4d does not describe is never counted as if it were a dense Llama."""
from __future__ import annotations

import json
from pathlib import Path

from .errors import ConfigError
from .families import FAMILIES, SUPPORTED
from .families.deepseek import MLA, MLA_FAMILIES
from .hfkeys import HARMLESS, ONLY, VALUES, Family, Reader
from .shapes import PRESETS, ModelShape


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
