"""argparse types of the values every command takes: memory sizes, positive integers, layer lists, bounded numbers."""

from __future__ import annotations

import argparse
import re

from ..config.errors import ConfigError
from ..config.shapes import MAX_SIZE
from ..config.training_checks import MAX_CAPACITY

_UNITS = {
    "": 1,
    "b": 1,
    "k": 10**3,
    "kb": 10**3,
    "m": 10**6,
    "mb": 10**6,
    "g": 10**9,
    "gb": 10**9,
    "t": 10**12,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
UNITS_HELP = "GiB = 2^30 bytes (KiB, MiB, TiB alike), GB or G = 10^9 bytes (KB, MB, TB alike), no unit = bytes"
MAX_BYTES = 2**63 - 1  # what a memory size may be: 1 byte to 8 EiB


def parse_bytes(text: str, where: str | None = None) -> int:
    """'80GiB', '141GB', '8e10', '96 GiB' -> bytes; anything else (no number, an unknown unit, not finite, under one
    byte, over 8 EiB) is a one-line ConfigError naming the text, what is allowed and, given, `where` (flag=value)."""
    prefix = f"{where}: " if where else ""
    match = re.fullmatch(r"\s*(-?[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*", str(text))
    if not match or match.group(2).lower() not in _UNITS:
        raise ConfigError(
            f"{prefix}cannot parse memory size {text!r}: use a number with an optional unit such as "
            f"80GiB, 141GB or 8e10 ({UNITS_HELP})"
        )
    value = float(match.group(1)) * _UNITS[match.group(2).lower()]
    if not 1 <= value <= MAX_BYTES:  # inf and nan fail too
        raise ConfigError(f"{prefix}memory size {text!r} must be from 1 byte to 8 EiB, got {value:g} bytes")
    return int(value)


def memory_size(text: str) -> int:
    """argparse type of a memory size: parse_bytes, its message kept (argparse prefixes the flag)."""
    try:
        return parse_bytes(text)
    except ConfigError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def describe_bytes(n: int) -> str:
    """A parsed memory size with its units, e.g. '80,000,000,000 bytes = 74.51 GiB = 80.00 GB'."""
    return f"{n:,} bytes = {n / 2**30:,.2f} GiB = {n / 10**9:,.2f} GB"


def _bounded_int(low: int, what: str, upto: str, doc: str):
    """An argparse type: an integer from `low` to 2^40, refused as 'expected {what}[ {upto} 2^40], got ...'."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if not low <= value <= MAX_SIZE:
            raise argparse.ArgumentTypeError(f"expected {what} {upto} 2^40, got {text!r}")
        return value

    parse.__doc__ = doc
    return parse


positive_int = _bounded_int(1, "a positive integer", "up to", "argparse type: an integer from 1 to 2^40.")
non_negative_int = _bounded_int(0, "an integer from 0", "to", "argparse type: an integer from 0 to 2^40.")
positive_int.__name__, non_negative_int.__name__ = "positive_int", "non_negative_int"


def stage_layers(text: str) -> tuple[int, ...]:
    """argparse type of --stage-layers: '7,8,8,7' -> (7, 8, 8, 7), positive integers."""
    try:
        layers = tuple(int(x) for x in text.split(","))
    except ValueError:
        layers = ()
    if not layers or min(layers) <= 0:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated positive layer counts such as 7,8,8,7, got {text!r}"
        )
    return layers


def _above_zero(text: str, high: float, bad: str, range_: str) -> float:
    """A number in (0, high] (nan and inf fail too); else argparse's error: `bad` for no number, `range_` outside."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {bad}, got {text!r}") from None
    if not 0 < value <= high:
        raise argparse.ArgumentTypeError(f"expected {range_}, got {text!r}")
    return value


def capacity(text: str) -> float:
    """argparse type of --moe-capacity: a number above 0 and at most MAX_CAPACITY."""
    return _above_zero(text, MAX_CAPACITY, "a number above 0", f"a number above 0 and at most {MAX_CAPACITY:g}")


def fraction(text: str) -> float:
    """argparse type of --threshold: a number in (0, 1]."""
    return _above_zero(text, 1, "a number in (0, 1]", "a number in (0, 1]")
