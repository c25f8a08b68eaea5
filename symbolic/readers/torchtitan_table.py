"""torchtitan 0.2.2's job config as its TOML states it (torchtitan/config/job_config.py, JobConfig's 149 keys, copied
with mem4d's class into torchtitan_keys.tsv): each key is `model`, `train`, `harmless` (its reason) or `refused`
(unless at torchtitan's default); a file (and its --override section.key=value) flattened, checked against the
key's type, its problems collected."""

from __future__ import annotations

import ast
import csv
import re
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from ..config.errors import ConfigError

TABLE = Path(__file__).with_name("torchtitan_keys.tsv")
VERSION = "torchtitan 0.2.2"
CLASSES = ("model", "train", "harmless", "refused")


@dataclass(frozen=True)
class Key:
    """One JobConfig field: its dotted key, type annotation and default as job_config.py writes them, mem4d's class
    and reason."""

    key: str
    type: str
    default: str
    cls: str
    reason: str

    def value(self):
        """The default as a Python value (a default_factory's list included)."""
        factory = re.fullmatch(r"field\(default_factory=(?:lambda: )?(.*)\)", self.default)
        text = factory.group(1) if factory else self.default
        return [] if text == "list" else ast.literal_eval(text)

    def accepts(self, value) -> bool:
        """Whether `value` (a TOML value) fits the annotation."""
        kinds = {"int": (int,), "float": (float, int), "bool": (bool,), "str": (str,)}
        choices = re.fullmatch(r"Literal\[(.*)\]( \| None)?", self.type)
        if choices:
            return value in ast.literal_eval(f"[{choices.group(1)}]")
        for part in self.type.split(" | "):
            if part == "None":
                continue
            if part.startswith("list["):
                inner = part[5:-1]
                if isinstance(value, list) and all(
                    isinstance(x, list if inner.startswith("list") else str) for x in value
                ):
                    return True
            elif isinstance(value, kinds[part]) and not (part != "bool" and isinstance(value, bool)):
                return True
        return False


@cache
def table() -> dict[str, Key]:
    with open(TABLE, newline="") as file:
        return {
            row["key"]: Key(row["key"], row["type"], row["default"], row["class"], row["reason"])
            for row in csv.DictReader(file, delimiter="\t")
        }


@dataclass
class Job:
    """A job file's values by dotted key (its overrides applied), where each came from, and the problems found."""

    path: str
    values: dict = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    overridden: list[str] = field(default_factory=list)

    def get(self, key: str):
        return self.values[key] if key in self.values else table()[key].value()

    def refuse(self, key: str, why: str) -> None:
        self.problems.append(f"{key} = {self.get(key)!r} ({why})")


def _flat(tree: dict, prefix: str = "") -> dict:
    out = {}
    for name, value in tree.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{name}."))
        else:
            out[f"{prefix}{name}"] = value
    return out


def _override(item: str) -> tuple[str, object]:
    """'section.key=value' -> (key, the value as TOML reads it, else the text)."""
    key, sep, text = item.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--override expects section.key=value such as training.seq_len=4096, got {item!r}")
    try:
        return key.strip(), tomllib.loads(f"x = {text.strip()}")["x"]
    except tomllib.TOMLDecodeError:
        return key.strip(), text.strip()


def _read_by(key: str, job: Job) -> bool:
    """Whether torchtitan reads `key`: a quantize.* key only with its converter in model.converters."""
    converter = ".".join(key.split(".")[:3])
    return not key.startswith("quantize.") or converter in job.get("model.converters")


def load(path: str, overrides: list[str]) -> Job:
    """The job file and its overrides, every key checked: unknown, of the wrong type, refused away from its default."""
    try:
        with open(path, "rb") as file:
            tree = tomllib.load(file)
    except OSError as err:
        raise ConfigError(f"--torchtitan {path}: cannot read it ({err.strerror})") from None
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"--torchtitan {path}: malformed TOML ({err})") from None
    job = Job(path, _flat(tree))
    seen = set()
    for item in overrides:
        key, value = _override(item)
        if key in seen:
            job.problems.append(f"--override {key} (given twice)")
        seen.add(key)
        if key in job.values:
            job.overridden.append(f"{key} = {value!r} from --override (the file: {job.values[key]!r})")
        job.values[key] = value
    for key, value in list(job.values.items()):
        row = table().get(key)
        if row is None or not row.accepts(value):
            job.problems.append(
                f"{key} (not a key of {VERSION}'s job config)"
                if row is None
                else f"{key} = {value!r} (takes {row.type})"
            )
            del job.values[key]  # read as its default from here on: the problem is named
        elif row.cls == "refused" and value != row.value() and _read_by(key, job):
            job.refuse(key, row.reason)
    return job
