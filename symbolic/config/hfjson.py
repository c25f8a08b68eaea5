"""A config.json's JSON object read with bounds (the reader's first step, hfconfig.py): at most MAX_BYTES, MAX_DEPTH
levels, MAX_DIGITS-digit integers, finite numbers, no key twice in one object; a regular file only, never waiting on a
pipe; every failure one line (a ConfigError)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from .errors import ConfigError

MAX_BYTES = (
    4 * 2**20
)  # the largest config.json read (published ones are under 100 KB; DeciLM's per-layer blocks ~50 KB)
MAX_DEPTH = 16  # the deepest nesting read (published files nest 3 levels: a text_config's rope_scaling)
MAX_DIGITS = 20  # the longest integer read (2^64 has 20 digits; sizes are bounded by 2^40 afterwards)


class _Refused(ValueError):
    """Raised inside the JSON decoder's hooks; _load turns it into one line naming the file."""


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict:
    seen: dict = {}
    for key, value in pairs:
        if key in seen:
            raise _Refused(f"key {key!r} appears twice in one object (JSON readers differ on which one wins)")
        seen[key] = value
    return seen


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise _Refused(f"an integer of {len(text.lstrip('-'))} digits (at most {MAX_DIGITS} are read)")
    return int(text)


def _constant(text: str) -> float:
    """Infinity, -Infinity, NaN: not strict JSON, but what Python's json writes for a float attribute (a published
    Nemotron 3 file's time_step_limit); read as floats, which every size, depth and integer check refuses."""
    return float(text)


def _depth(value, limit: int) -> bool:
    """Whether value nests no deeper than limit (iteratively: a deep value cannot exhaust the stack)."""
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, (dict, list)):
            if level > limit:
                return False
            stack.extend((child, level + 1) for child in (item.values() if isinstance(item, dict) else item))
    return True


def load(path: Path) -> dict:
    """The file's JSON object, read with bounds: at most MAX_BYTES (a device or a pipe that never ends is cut
    there), MAX_DEPTH levels, MAX_DIGITS-digit integers, no key twice in one object."""
    try:
        with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as file:  # a FIFO with no writer: no wait
            mode = os.fstat(file.fileno()).st_mode
            if not stat.S_ISREG(mode):
                what = "a directory" if stat.S_ISDIR(mode) else "not a regular file (a pipe, device or socket)"
                raise ConfigError(f"{path}: {what}: give a config.json")
            data = file.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file (expected a preset name or a Hugging Face config.json)") from None
    except OSError as err:
        raise ConfigError(f"{path}: cannot read: {err.strerror or err}") from None
    if len(data) > MAX_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_BYTES // 2**20} MiB: not a config.json")
    try:
        raw = json.loads(
            data.decode("utf-8"), object_pairs_hook=_no_duplicates, parse_int=_integer, parse_constant=_constant
        )
    except UnicodeDecodeError as err:
        raise ConfigError(f"{path}: cannot read: not UTF-8 text (byte {err.start})") from None
    except json.JSONDecodeError as err:
        raise ConfigError(f"{path}: malformed JSON at line {err.lineno} column {err.colno}: {err.msg}") from None
    except _Refused as err:
        raise ConfigError(f"{path}: {err}") from None
    except RecursionError:
        raise ConfigError(f"{path}: nested deeper than {MAX_DEPTH} levels: not a config.json") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a JSON object at top level")
    if not _depth(raw, MAX_DEPTH):
        raise ConfigError(f"{path}: nested deeper than {MAX_DEPTH} levels: not a config.json")
    return raw
