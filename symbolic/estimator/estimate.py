"""One configuration's bytes per component and per pipeline stage (`estimate`), and the peak the fit verdict judges."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..config.errors import ConfigError
from ..config.glossary import inputs_for
from ..config.shapes import ModelShape
from ..config.switches import Switches
from ..config.training import STAGES, Training, stage_exists, stage_rank
from .vectorized import estimator


def check_head_dim(shape: ModelShape) -> None:
    """The profiles use the paper's letters, where a head is h/a wide (Q, O: h x h; K, V: h x h*k/a): a config.json
    whose head_dim differs is a one-line ConfigError rather than a silently wrong count."""
    if shape.dh * shape.a != shape.h:
        raise ConfigError(
            f"model {shape.name!r}: head_dim={shape.dh} but h/a = {shape.h}/{shape.a}; the symbolic formulas assume "
            f"dh = h/a (Q, K, V, O widths a*dh, k*dh are not modelled), so they cannot count this model")


def stages_of(p: int) -> tuple[tuple[str, int], ...]:
    """(stage, representative rank) pairs that exist for p pipeline stages."""
    return tuple((stage, stage_rank(stage, p)) for stage in STAGES if stage_exists(stage, p))


PEAK_FROM = ("total", *STAGES)  # the figures a peak is the largest of; "total" is the profile's formula


def peak_of(total: np.ndarray, stage_totals: dict[str, np.ndarray], p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vectorized peak = max(profile total, total of every stage that exists for p), and the index in PEAK_FROM of
    the figure that is the peak (ties go to the profile total, then to the earlier stage)."""
    figures = [np.asarray(total, dtype=np.float64)]
    figures += [np.where(stage_exists(stage, p), stage_totals[stage], -np.inf) for stage in STAGES]
    stacked = np.stack(np.broadcast_arrays(*figures))
    which = np.argmax(stacked, axis=0)
    return np.take_along_axis(stacked, which[None], axis=0)[0], which


@dataclass(frozen=True)
class Estimate:
    """One configuration's bytes: `bytes` (the profile's most-loaded-GPU breakdown + total), `stages`, and the
    `peak` of the two that the fit verdict judges."""

    profile: str
    shape: ModelShape
    training: Training
    bytes: dict[str, int]
    stages: list[dict]
    overheads: bool = True
    backend: str = "gpu"  # whose compiled program the jax profile models (gpu or cpu); the paper profile ignores it

    @property
    def most_loaded_stage(self) -> dict:
        return max(self.stages, key=lambda stage: stage["bytes"]["total"])

    @property
    def peak(self) -> int:
        """Bytes the verdict is based on: the profile's total or, when larger, the total of an exact stage (the
        paper's closed form omits the LM head at p = 1, so there the exact "only" stage is larger)."""
        return max(self.bytes["total"], self.most_loaded_stage["bytes"]["total"])

    @property
    def peak_from(self) -> str:
        """Which figure is the peak: "total" (the profile's formula) or the name of an exact stage."""
        return "total" if self.peak == self.bytes["total"] else self.most_loaded_stage["stage"]

    def fits(self, gpu_mem_bytes: int, threshold: float = 0.8) -> bool:
        """The 80 % rule on the peak: peak < threshold x GPU memory."""
        return bool(self.peak < threshold * gpu_mem_bytes)

    def as_json(self, gpu_mem_bytes: int, threshold: float = 0.8) -> dict:
        """The `mem4d estimate --json` schema; "fits" judges "peak_bytes", never "total" alone."""
        return {
            "model": self.shape.name, "param_count": self.shape.param_count,
            "config": self.training.as_json(self.shape), "profile": self.profile, "shape": self.shape.as_dict(),
            "overheads": self.overheads, **({"backend": self.backend} if self.profile == "jax" else {}),
            "bytes": dict(self.bytes),
            "stages": [dict(stage, bytes=dict(stage["bytes"])) for stage in self.stages],
            "most_loaded_stage": self.most_loaded_stage["stage"], "gpu_mem_bytes": int(gpu_mem_bytes),
            "peak_bytes": self.peak, "peak_from": self.peak_from,
            "threshold": threshold, "fits": self.fits(gpu_mem_bytes, threshold),
        }


def _override(parts: dict[str, int], overrides: dict[str, int]) -> dict[str, int]:
    out = {name: overrides.get(name, value) for name, value in parts.items() if name != "total"}
    out["total"] = sum(out.values())
    return out


def estimate(shape: ModelShape, training: Training, profile: str = "paper", overheads: bool = True,
             overrides: dict[str, int] | None = None, backend: str = "gpu") -> Estimate:
    """Bytes of one configuration; `overrides` replaces named components (e.g. {"cuda_context": 2**29}) before totalling."""
    training.check(shape)
    check_head_dim(shape)
    est = estimator(profile, Switches.of(training, overheads, shape.tied, backend))
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - set(est.components[:-1]))
    if unknown:
        names = ", ".join(est.components[:-1])
        raise ConfigError(f"cannot override {', '.join(unknown)}: components of profile {profile!r} here are {names}")
    values = inputs_for(shape, training)
    main = {name: int(round(float(x))) for name, x in est(**values).items()}
    per_stage = est.stages(**values)
    stages = []
    for stage, rank in stages_of(training.p):
        parts = {name.split(".", 1)[1]: int(round(float(x))) for name, x in per_stage.items() if name.startswith(stage + ".")}
        stages.append({"stage": stage, "rank": rank, "bytes": _override(parts, overrides)})
    return Estimate(profile, shape, training, _override(main, overrides), stages, overheads, backend)
