"""The bounds every size, count or batch an input gives must keep, and the one-line check of a shape's sizes."""

from __future__ import annotations

from .errors import ConfigError

MAX_SIZE = 2**40  # the largest size, count or batch an input (a flag, a config.json key) may have


def positive(name: str, field: str, value, zero: bool = False) -> None:
    """A model's size `field` must be a positive (zero: non-negative) integer up to MAX_SIZE, else one line."""
    if not isinstance(value, int) or isinstance(value, bool) or value < (0 if zero else 1) or value > MAX_SIZE:
        raise ConfigError(
            f"model {name!r}: {field} must be a {'non-negative' if zero else 'positive'} integer up to "
            f"2^40, got {value!r}"
        )
