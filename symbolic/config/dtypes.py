"""The one table of byte widths: every dtype mem4d names, by its short name (fp32) and by jax's (float32); no sympy."""

from __future__ import annotations

# bytes per element; uint8 and bool: a byte (a dropout mask, 8-bit optimizer states, a routing mask)
DTYPES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int32": 4, "int64": 8, "uint8": 1, "bool": 1}
JAX_NAMES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "int32": "int32", "int64": "int64"}
FLOATS = ("float32", "bfloat16", "float16")  # what jaxcheck's parameter and compute dtypes may be


def nbytes(name: str) -> int:
    """Bytes per element of a dtype named either way ('bf16' or 'bfloat16')."""
    return DTYPES[JAX_NAMES.get(name, name)]
