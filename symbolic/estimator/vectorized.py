"""The vectorized estimator: one lambdified numpy function of named, broadcastable arrays per profile and switches."""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..config.errors import ConfigError
from ..config.switches import Switches
from ..config.training import STAGES
from .codegen import compile_source, derived

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
        for stage in STAGES:
            names = [name for name in self.stage_outputs if name.split(".", 1)[0] == stage and name != f"{stage}.total"]
            totals[stage] = np.rint(out[names[0]])
            for name in names[1:]:
                totals[stage] += np.rint(out[name], out=out[name])  # in place: no stacked temporaries
        return totals


@functools.lru_cache(maxsize=None)
def estimator(profile: str = "paper", switches: Switches = Switches()) -> Estimator:
    """Derive the profile's expressions for these switches and lambdify them once (cse=True; cached on disk)."""
    from ..profiles import PROFILES

    if profile not in PROFILES:
        raise ConfigError(f"unknown profile {profile!r} (choose from {', '.join(PROFILES)})")
    code = derived(profile, switches)
    return Estimator(
        profile=profile, inputs=tuple(code["inputs"]), components=tuple(code["components"]),
        source=code["main_source"], stage_outputs=tuple(code["stage_outputs"]), stage_source=code["stage_source"],
        _main=compile_source(code["main_source"], "_main"), _stages=compile_source(code["stage_source"], "_stages"),
    )
