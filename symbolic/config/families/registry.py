"""The registry of config.json families: each family module registers its model_types with @family."""

from __future__ import annotations

from typing import Callable

from ..hfkeys import Family
from .defaults import DEFAULTS

FAMILIES: dict[str, Family] = {}  # model_type -> how its config.json is read, in the order the modules register


def family(
    model_type: str, keys: tuple[str, ...], about: str, letters: Callable | None = None, values: dict | None = None
) -> Callable:
    """Register the decorated build function (config, Reader) -> ModelShape fields as model_type's reader: the
    structural keys it reads, what it is (for messages), the base letters under other keys, the values its keys may
    take where they differ from hfkeys.VALUES; its library defaults are defaults.DEFAULTS[model_type]."""

    def register(build: Callable) -> Callable:
        if model_type in FAMILIES:
            raise ValueError(f"model_type {model_type!r} registered twice")
        FAMILIES[model_type] = Family(keys, build, about, letters, values, DEFAULTS.get(model_type))
        return build

    return register
