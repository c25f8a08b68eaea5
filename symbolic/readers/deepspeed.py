"""`--deepspeed DS_CONFIG.json` (with `--model config.json`): a run's DeepSpeed 0.19.8 config read into mem4d's Training
flags under --recipe deepspeed. deepspeed_keys.tsv lists the keys it reads: zero_optimization's, bf16's and fp16's
fields as runtime/zero/config.py and runtime/precision_config.py declare them (aliases too), the batch, optimizer and
data-type keys of runtime/constants.py, and the logging, schedule and checkpoint sections; each modelled, harmless
(its reason) or refused unless at DeepSpeed's default. Any other key is refused by name, all in one line."""

from __future__ import annotations

import ast
import csv
import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from ..config.errors import ConfigError
from .problems import refuse

TABLE = Path(__file__).with_name("deepspeed_keys.tsv")
VERSION = "DeepSpeed 0.19.8"
CLASSES = ("train", "harmless", "refused")
SECTIONS = ("zero_optimization", "bf16", "fp16", "activation_checkpointing", "data_types")  # read key by key
OPTIMIZERS = {"adam": "adamw", "adamw": "adamw"}  # DeepSpeed lowercases optimizer.type; Adam and AdamW: two moments
GRADS = {None: "bf16", "bf16": "bf16", "fp32": "fp32"}  # data_types.grad_accum_dtype (None: the bf16 parameters')


@cache
def table() -> dict[str, tuple[object, str, str]]:
    """key -> (DeepSpeed's default, class, reason)."""
    with open(TABLE, newline="") as file:
        return {
            row["key"]: (_literal(row["default"]), row["class"], row["reason"])
            for row in csv.DictReader(file, delimiter="\t")
        }


def _literal(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None  # a section's default: absent


@dataclass
class Config:
    """A config's values by key (sections one level deep), and the problems found."""

    path: str
    values: dict = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def get(self, key: str):
        return self.values[key] if key in self.values else table()[key][0]

    def refuse(self, key: str, why: str) -> None:
        self.problems.append(f"{key} = {json.dumps(self.get(key))} ({why})")


def _unique(pairs: list) -> dict:
    keys = [key for key, _ in pairs]
    twice = sorted({key for key in keys if keys.count(key) > 1})
    if twice:
        raise ValueError(f"{', '.join(twice)} given twice")
    return dict(pairs)


def _load(path: str) -> Config:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"--deepspeed {path}: cannot read it ({getattr(err, 'strerror', None) or err})") from None
    try:
        tree = json.loads(text, object_pairs_hook=_unique)
    except ValueError as err:
        raise ConfigError(f"--deepspeed {path}: malformed JSON ({err})") from None
    if not isinstance(tree, dict):
        raise ConfigError(f"--deepspeed {path}: a DeepSpeed config is a JSON object")
    config = Config(path)
    for key, value in tree.items():
        if key in SECTIONS and isinstance(value, dict):
            config.values.update({f"{key}.{sub}": v for sub, v in value.items()})
        elif key == "optimizer" and isinstance(value, dict):
            config.values.update({f"optimizer.{sub}": v for sub, v in value.items()})
        else:
            config.values[key] = value
    return config


def _inert(value) -> bool:
    """A refused section that does nothing: absent, or off (enabled false, an offload to device none)."""
    off = isinstance(value, dict) and (value.get("enabled") is False or value.get("device") == "none")
    return value is None or off


def _check(config: Config) -> None:
    for key, value in config.values.items():
        row = table().get(key)
        if row is None:
            config.problems.append(f"{key} (not a key of {VERSION}'s config that mem4d reads)")
        elif value == "auto":
            config.problems.append(f"{key} = \"auto\" (the Hugging Face Trainer fills it in: give the number)")
        elif row[1] == "refused" and value != row[0] and not (row[0] is None and _inert(value)):
            config.refuse(key, row[2])


def _training(config: Config) -> dict:
    out = {"recipe": "deepspeed", "zero": config.get("zero_optimization.stage")}
    if config.get("fp16.enabled"):
        config.refuse("fp16.enabled", "the deepspeed recipe models bf16 mixed precision")
    elif not config.get("bf16.enabled"):
        config.problems.append("bf16.enabled absent or false (fp32 training: the deepspeed recipe models bf16)")
    grads = GRADS.get(config.get("data_types.grad_accum_dtype"))
    if grads is None:
        config.refuse("data_types.grad_accum_dtype", "bf16 or fp32 is modelled")
    out["grad_dtype"] = grads or "bf16"
    kind = config.get("optimizer.type")
    if kind is not None:
        if not isinstance(kind, str) or kind.lower() not in OPTIMIZERS:
            config.refuse("optimizer.type", "Adam and AdamW are modelled")
        else:
            out["optimizer"] = OPTIMIZERS[kind.lower()]
    for key, flag in (
        ("train_micro_batch_size_per_gpu", "mbs"),
        ("train_batch_size", "gbs"),
        ("gradient_accumulation_steps", "accumulation"),
    ):
        value = config.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            config.refuse(key, "must be a positive integer")
        elif value is not None:
            out[flag] = value
    if "mbs" not in out:
        config.problems.append("train_micro_batch_size_per_gpu absent (give it: mem4d needs the micro batch)")
    return out


def read(path: str) -> dict:
    """The Training flags a DeepSpeed config states (`accumulation` for gradient_accumulation_steps), or a ConfigError
    in one line naming every key mem4d does not model."""
    config = _load(path)
    _check(config)
    out = _training(config)
    refuse(path, config.problems, "key", VERSION)
    return out
