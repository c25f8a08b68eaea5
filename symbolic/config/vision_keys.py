"""A vision_config's size keys read the one way every tower module reads them (vision.py, vision_gemma3.py,
vision_llama4.py): each a positive integer up to MAX_SIZE, a one-line refusal naming the key otherwise."""

from __future__ import annotations

from .bounds import MAX_SIZE
from .errors import ConfigError


def vision_fail(path, key: str, why: str) -> ConfigError:
    """The one-line refusal of key `vision_config.<key>` of the file at `path`."""
    return ConfigError(f"{path}: key 'vision_config.{key}': {why}")


def vision_sizes(vision: dict, defaults: dict, path) -> dict:
    """The size keys of `defaults` (the tower class's defaults where absent), each a positive integer up to MAX_SIZE."""
    values = {key: vision.get(key, default) for key, default in defaults.items()}
    for key, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_SIZE:
            raise vision_fail(path, key, f"must be a positive integer up to {MAX_SIZE}, got {value!r}")
    return values
