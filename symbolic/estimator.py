"""Fast numpy estimators lambdified from a profile's sympy expressions, and the per-configuration `estimate`."""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .codegen import compile_source, derived
from .errors import ConfigError
from .shapes import ModelShape
from .training import Training

STAGE_ORDER = ("first", "middle", "last", "only")
CHUNK = 16384  # configurations per call of the generated function: keeps its temporaries in cache


@dataclass(frozen=True)
class Estimator:
    """All components of one profile as one vectorized function of named, broadcastable arrays."""

    profile: str
    inputs: tuple[str, ...]
    components: tuple[str, ...]  # display order; the last one is "total" (bytes of the most loaded GPU)
    source: str  # generated numpy source of the main function
    stage_outputs: tuple[str, ...] = ()  # "first.weights", ..., "only.total"
    stage_source: str = ""
    _main: Callable = field(default=None, repr=False, compare=False)
    _stages: Callable = field(default=None, repr=False, compare=False)

    def _arrays(self, arrays: dict) -> tuple[list[np.ndarray], tuple[int, ...]]:
        unknown = sorted(set(arrays) - set(self.inputs))
        if unknown:
            raise ConfigError(f"estimator {self.profile!r}: unknown input(s) {', '.join(unknown)} (takes {' '.join(self.inputs)})")
        missing = [name for name in self.inputs if name not in arrays]
        if missing:
            raise ConfigError(f"estimator {self.profile!r}: missing input(s) {', '.join(missing)}")
        values = [np.asarray(arrays[name]) for name in self.inputs]
        try:
            shape = np.broadcast_shapes(*(value.shape for value in values))
        except ValueError as err:
            raise ConfigError(f"estimator {self.profile!r}: inputs do not broadcast: {err}") from None
        return values, shape

    @staticmethod
    def _evaluate(fn: Callable, names: tuple[str, ...], values: list[np.ndarray], shape: tuple[int, ...]) -> dict:
        """Run the generated function over cache-sized chunks of the flattened inputs (float64 throughout)."""
        size = int(np.prod(shape))
        flat = [np.float64(value.reshape(-1)[0]) if value.size == 1 else np.broadcast_to(value, shape).reshape(-1)
                for value in values]
        outs = [np.empty(size, dtype=np.float64) for _ in names]
        for start in range(0, max(size, 1), CHUNK):
            stop = start + CHUNK
            chunk = [x if x.ndim == 0 else np.asarray(x[start:stop], dtype=np.float64) for x in flat]
            for out, result in zip(outs, fn(*chunk)):
                out[start:stop] = result  # constants broadcast here
        return {name: out.reshape(shape) for name, out in zip(names, outs)}

    def __call__(self, **arrays) -> dict[str, np.ndarray]:
        """Bytes per GPU of every component and "total", as float64 arrays of the inputs' broadcast shape."""
        values, shape = self._arrays(arrays)
        return self._evaluate(self._main, self.components, values, shape)

    def stages(self, **arrays) -> dict[str, np.ndarray]:
        """Exact per-stage breakdown: "<stage>.<component>" for stage in first, middle, last, only (p = 1)."""
        values, shape = self._arrays(arrays)
        return self._evaluate(self._stages, self.stage_outputs, values, shape)

    def stage_totals(self, **arrays) -> dict[str, np.ndarray]:
        """Each stage's total as `estimate` reports it: the sum of its components rounded to whole bytes."""
        out = self.stages(**arrays)
        totals = {}
        for stage in STAGE_ORDER:
            names = [name for name in self.stage_outputs if name.split(".", 1)[0] == stage and name != f"{stage}.total"]
            totals[stage] = np.rint(out[names[0]])
            for name in names[1:]:
                totals[stage] += np.rint(out[name], out=out[name])  # in place: no stacked temporaries
        return totals


@functools.lru_cache(maxsize=None)
def estimator(profile: str = "paper", *, recompute: str = "none", flash_attn: bool = True, sp: bool = True,
              dist_opt: bool = True, overheads: bool = True, tied: bool = False) -> Estimator:
    """Derive the profile's expressions for these switches and lambdify them once (cse=True; cached on disk)."""
    from .profiles import PROFILES
    from .training import RECOMPUTE

    if profile not in PROFILES:
        raise ConfigError(f"unknown profile {profile!r} (choose from {', '.join(PROFILES)})")
    if recompute not in RECOMPUTE:
        raise ConfigError(f"recompute must be one of {', '.join(RECOMPUTE)}, got {recompute!r}")
    switches = {"recompute": recompute, "flash_attn": bool(flash_attn), "sp": bool(sp), "dist_opt": bool(dist_opt),
                "overheads": bool(overheads), "tied": bool(tied)}
    code = derived(profile, switches)
    return Estimator(
        profile=profile, inputs=tuple(code["inputs"]), components=tuple(code["components"]),
        source=code["main_source"], stage_outputs=tuple(code["stage_outputs"]), stage_source=code["stage_source"],
        _main=compile_source(code["main_source"], "_main"), _stages=compile_source(code["stage_source"], "_stages"),
    )


def check_head_dim(shape: ModelShape) -> None:
    """The profiles use the paper's letters, where a head is h/a wide (Q, O: h x h; K, V: h x h*k/a): a config.json
    whose head_dim differs is a one-line ConfigError rather than a silently wrong count."""
    if shape.dh * shape.a != shape.h:
        raise ConfigError(
            f"model {shape.name!r}: head_dim={shape.dh} but h/a = {shape.h}/{shape.a}; the symbolic formulas assume "
            f"dh = h/a (Q, K, V, O widths a*dh, k*dh are not modelled), so they cannot count this model")


def inputs_for(shape: ModelShape, training: Training) -> dict[str, float]:
    """The named input values of one configuration (shape letters, d t p c, m, vpp, byte widths)."""
    return {
        "s": training.s, "b": training.b, "h": shape.h, "f": shape.f, "a": shape.a, "k": shape.k, "L": shape.L,
        "v": shape.v, "d": training.d, "t": training.t, "p": training.p, "c": training.c, "m": training.m,
        "vpp": training.vpp, "B_w": training.weight_bytes, "B_g": training.grad_bytes, "B_o": training.opt_bytes,
        "B_a": training.act_bytes,
    }


def stage_exists(stage: str, p):
    """Whether a GPU of this stage exists with p pipeline stages (p an int or an array): only at p = 1, first and
    last from p = 2, middle from p = 3."""
    return {"only": p == 1, "first": p >= 2, "last": p >= 2, "middle": p >= 3}[stage]


def stages_of(p: int) -> tuple[tuple[str, int], ...]:
    """(stage, representative rank) pairs that exist for p pipeline stages."""
    ranks = {"first": 0, "middle": 1, "last": p - 1, "only": 0}
    return tuple((stage, ranks[stage]) for stage in STAGE_ORDER if stage_exists(stage, p))


PEAK_FROM = ("total", *STAGE_ORDER)  # the figures a peak is the largest of; "total" is the profile's formula


def peak_of(total: np.ndarray, stage_totals: dict[str, np.ndarray], p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vectorized peak = max(profile total, total of every stage that exists for p), and the index in PEAK_FROM of
    the figure that is the peak (ties go to the profile total, then to the earlier stage)."""
    figures = [np.asarray(total, dtype=np.float64)]
    figures += [np.where(stage_exists(stage, p), stage_totals[stage], -np.inf) for stage in STAGE_ORDER]
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

    def fits(self, gpu_memory_bytes: int, threshold: float = 0.8) -> bool:
        """The 80 % rule on the peak: peak < threshold x GPU memory."""
        return bool(self.peak < threshold * gpu_memory_bytes)

    def as_json(self, gpu_memory_bytes: int, threshold: float = 0.8) -> dict:
        """The `mem4d estimate --json` schema; "fits" judges "peak_bytes", never "total" alone."""
        return {
            "profile": self.profile, "model": self.shape.name, "shape": self.shape.as_dict(),
            "config": self.training.as_dict(), "overheads": self.overheads, "bytes": dict(self.bytes),
            "stages": [dict(stage, bytes=dict(stage["bytes"])) for stage in self.stages],
            "most_loaded_stage": self.most_loaded_stage["stage"], "gpu_memory_bytes": int(gpu_memory_bytes),
            "peak_bytes": self.peak, "peak_from": self.peak_from,
            "threshold": threshold, "fits": self.fits(gpu_memory_bytes, threshold),
        }


def _override(parts: dict[str, int], overrides: dict[str, int]) -> dict[str, int]:
    out = {name: overrides.get(name, value) for name, value in parts.items() if name != "total"}
    out["total"] = sum(out.values())
    return out


def estimate(shape: ModelShape, training: Training, profile: str = "paper", overheads: bool = True,
             overrides: dict[str, int] | None = None) -> Estimate:
    """Bytes of one configuration; `overrides` replaces named components (e.g. {"cuda_context": 2**29}) before totalling."""
    training.check(shape)
    check_head_dim(shape)
    est = estimator(profile, recompute=training.recompute, flash_attn=training.flash_attn, sp=training.sp,
                    dist_opt=training.dist_opt, overheads=overheads, tied=shape.tied)
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
    return Estimate(profile, shape, training, _override(main, overrides), stages, overheads)
