"""A vision_config's size keys read the one way every tower module reads them (vision.py, vision_gemma3.py,
vision_llama4.py, vision_pixtral.py): each a positive integer up to MAX_SIZE, a one-line refusal naming the key
otherwise; the sizes every tower has, and a ViT block's parameters."""

from __future__ import annotations

from dataclasses import asdict, dataclass

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


@dataclass(frozen=True)
class TowerSizes:
    """The sizes every vision tower has: depth blocks of width w and MLP width f over patches of c_in pixel values
    (each kind's dataclass adds its own after them)."""

    depth: int
    w: int
    f: int
    c_in: int

    def as_dict(self) -> dict:
        return asdict(self)


def vit_block(w: int, f: int) -> int:
    """A ViT block's parameters: two LayerNorms [w] with biases, q, k, v and the output projection [w, w] with biases
    (Qwen3-VL's fused qkv [w, 3w] alike), fc1 [w, f] and fc2 [f, w] with biases."""
    return 2 * 2 * w + 4 * (w * w + w) + (w * f + f) + (f * w + w)
