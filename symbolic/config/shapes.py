"""Model shape: a frozen config shared by symbolic/ and jaxcheck/, its presets, and a Hugging Face config.json loader."""
from __future__ import annotations

import json
from dataclasses import dataclass, fields
from pathlib import Path

from .errors import ConfigError

MAX_SIZE = 2**40  # the largest size, count or batch an input (a flag, a config.json key) may have


@dataclass(frozen=True)
class ModelShape:
    """A Llama-family decoder: RMSNorm, RoPE, GQA attention, SwiGLU MLP, untied LM head by default."""

    name: str
    h: int  # hidden size
    f: int  # SwiGLU intermediate size
    a: int  # attention heads
    k: int  # key/value heads
    L: int  # layers
    v: int  # vocabulary
    tied: bool = False  # LM head shares the embedding matrix
    head_dim: int | None = None  # per-head width; None means h // a

    def __post_init__(self):
        for name in ("h", "f", "a", "k", "L", "v"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ConfigError(f"model {self.name!r}: {name} must be a positive integer, got {value!r}")
        if self.head_dim is None:
            if self.h % self.a:
                raise ConfigError(f"model {self.name!r}: hidden size h={self.h} is not divisible by heads a={self.a}")
            object.__setattr__(self, "head_dim", self.h // self.a)
        elif self.head_dim <= 0:
            raise ConfigError(f"model {self.name!r}: head_dim must be positive, got {self.head_dim}")
        if self.a % self.k:
            raise ConfigError(f"model {self.name!r}: heads a={self.a} are not divisible by KV heads k={self.k}")

    @property
    def dh(self) -> int:
        """Per-head width (the paper assumes dh * a = h)."""
        return self.head_dim

    @property
    def param_count(self) -> int:
        """Every parameter: embedding, L x (2 norms, Q, K, V, O, gate, up, down), final norm, LM head unless tied."""
        h, f, a, k, L, v, dh = self.h, self.f, self.a, self.k, self.L, self.v, self.dh
        attn = h * a * dh + 2 * h * k * dh + a * dh * h
        mlp = 3 * h * f
        layer = attn + mlp + 2 * h
        return v * h + L * layer + h + (0 if self.tied else h * v)

    def as_dict(self) -> dict:
        return {fl.name: getattr(self, fl.name) for fl in fields(self)}


PRESETS: dict[str, ModelShape] = {
    shape.name: shape
    for shape in (
        # a few million parameters; a, k, L divisible by 4 and all sizes distinct, so swapped symbols show
        ModelShape("tiny", h=256, f=688, a=16, k=4, L=8, v=1024),
        ModelShape("llama2-7b", h=4096, f=11008, a=32, k=32, L=32, v=32000),
        ModelShape("llama2-13b", h=5120, f=13824, a=40, k=40, L=40, v=32000),
        ModelShape("llama2-70b", h=8192, f=28672, a=64, k=8, L=80, v=32000),
        ModelShape("llama3-8b", h=4096, f=14336, a=32, k=8, L=32, v=128256),
        ModelShape("llama3-70b", h=8192, f=28672, a=64, k=8, L=80, v=128256),
        ModelShape("llama3.1-405b", h=16384, f=53248, a=128, k=8, L=126, v=128256),
    )
}

DEFAULT_MODEL = "llama3-8b"  # what every command models when --model is not given

_HF_KEYS = {
    "h": "hidden_size",
    "f": "intermediate_size",
    "a": "num_attention_heads",
    "L": "num_hidden_layers",
    "v": "vocab_size",
}


def from_hf_config(path: str | Path) -> ModelShape:
    """Read a Hugging Face Llama ``config.json``; every failure is a one-line ConfigError naming the file and key."""
    path = Path(path)
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
    values = {}
    for letter, key in {**_HF_KEYS, "k": "num_key_value_heads", "head_dim": "head_dim"}.items():
        if key not in raw or raw[key] is None:
            if letter == "k":
                values["k"] = values["a"]
                continue
            if letter == "head_dim":
                continue
            raise ConfigError(f"{path}: missing key {key!r}")
        value = raw[key]
        if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= MAX_SIZE:
            raise ConfigError(f"{path}: key {key!r} must be a positive integer up to 2^40, got {value!r}")
        values[letter] = value
    tied = raw.get("tie_word_embeddings", False)
    if not isinstance(tied, bool):
        raise ConfigError(f"{path}: key 'tie_word_embeddings' must be true or false, got {tied!r}")
    return ModelShape(name=_name(raw, path), tied=tied, **values)


def _name(raw: dict, path: Path) -> str:
    """A config.json's model name: its _name_or_path, else the file's own name unless that is the generic
    'config', else its model_type (e.g. 'llama'), else 'config'."""
    for name in (raw.get("_name_or_path"), path.stem if path.stem != "config" else None, raw.get("model_type")):
        if isinstance(name, str) and name.strip():
            return name.strip()
    return path.stem


def resolve_model(spec: str) -> ModelShape:
    """A preset name, or a path to a config.json (or to a directory holding one)."""
    if spec in PRESETS:
        return PRESETS[spec]
    path = Path(spec)
    if path.is_dir():
        path = path / "config.json"
    if path.suffix == ".json" or path.exists():
        return from_hf_config(path)
    raise ConfigError(f"unknown model {spec!r}: choose a preset ({', '.join(PRESETS)}) or a path to a config.json")
