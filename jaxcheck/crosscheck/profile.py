"""The symbolic side of the cross-check: the `jax` profile's bytes for one step spec, and the relative error."""

from __future__ import annotations

from symbolic.config.shapes import ModelShape
from symbolic.config.training import Training

from ..spec import JaxOptions, jax_training
from symbolic.recipes.registry import JAX_PROFILE


def symbolic_bytes(
    shape: ModelShape, training: Training, opts: JaxOptions = JaxOptions(), backend: str = "gpu"
) -> dict[str, int]:
    """The `jax` profile's components (and "total") in bytes per device for this configuration, as the backend's
    compiler (gpu: XLA:GPU, cpu: XLA:CPU) holds them."""
    from symbolic.estimator.estimate import estimate

    return dict(estimate(shape, jax_training(training, opts), JAX_PROFILE, overheads=False, backend=backend).bytes)


def rel(sym: float, ref: float | None) -> float | None:
    """(symbolic - reference) / reference; None without a reference, 0 when both are 0."""
    if ref is None:
        return None
    if ref == 0:
        return 0.0 if sym == 0 else float("inf")
    return (sym - ref) / ref


def symbolic_temp(sym: dict[str, int]) -> int:
    """The `jax` profile's bytes in XLA's temp group (every component group_of calls temp)."""
    from symbolic.recipes.jax.profile import group_of

    return sum(n for name, n in sym.items() if name != "total" and group_of(name) == "temp")
