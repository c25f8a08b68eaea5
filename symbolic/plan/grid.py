"""The two array helpers a plan's grid is built with: divisors of a size, and the cartesian product of rows with axes."""

from __future__ import annotations

import numpy as np


def divisors(n: int) -> np.ndarray:
    """Every positive divisor of n, ascending (int64)."""
    small = np.arange(1, int(np.sqrt(n)) + 1, dtype=np.int64)
    small = small[n % small == 0]
    return np.unique(np.concatenate([small, n // small]))


def cross(outer: dict[str, np.ndarray], **inner: np.ndarray) -> dict[str, np.ndarray]:
    """The cartesian product of the rows of `outer` (arrays of one length) with each `inner` axis, outer first."""
    sizes = [len(outer[next(iter(outer))])] + [len(x) for x in inner.values()]
    index = np.indices(sizes).reshape(len(sizes), -1)
    out = {name: values[index[0]] for name, values in outer.items()}
    out.update({name: values[index[i + 1]] for i, (name, values) in enumerate(inner.items())})
    return out
