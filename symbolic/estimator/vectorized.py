"""The vectorized estimator: lambdified numpy functions of named, broadcastable arrays per profile and switches (the
most loaded GPU's components, each stage kind's, the in-flight micro batches of a pipeline rank)."""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..config.errors import ConfigError
from ..config.glossary import STAGE_NAMES
from ..config.switches import Switches
from ..config.training import STAGES, stage_rank
from .codegen import compile_source, derived

CHUNK = 16384  # configurations per call of the generated function: keeps its temporaries in cache


@dataclass(frozen=True)
class Estimator:
    """All components of one profile as vectorized functions of named, broadcastable arrays."""

    profile: str
    inputs: tuple[str, ...]
    components: tuple[str, ...]  # display order; the last one is "total" (bytes of the most loaded GPU)
    source: str  # generated numpy source of the main function
    stage_outputs: dict = field(default_factory=dict)  # stage kind -> its component names, "total" last
    stage_sources: dict = field(default_factory=dict)  # stage kind -> generated source (inputs + L_r, m_r)
    in_flight_source: str = ""  # generated source of the in-flight micro batches of rank r (inputs + r)
    _main: Callable = field(default=None, repr=False, compare=False)
    _stages: dict = field(default=None, repr=False, compare=False)
    _in_flight: Callable = field(default=None, repr=False, compare=False)

    def _arrays(self, arrays: dict, names: tuple[str, ...]) -> tuple[list[np.ndarray], tuple[int, ...]]:
        unknown = sorted(set(arrays) - set(names))
        if unknown:
            raise ConfigError(f"estimator {self.profile!r}: unknown input(s) {', '.join(unknown)} (takes {' '.join(names)})")
        missing = [name for name in names if name not in arrays]
        if missing:
            raise ConfigError(f"estimator {self.profile!r}: missing input(s) {', '.join(missing)}")
        values = [np.asarray(arrays[name]) for name in names]
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
        values, shape = self._arrays(arrays, self.inputs)
        return self._evaluate(self._main, self.components, values, shape)

    def in_flight(self, **arrays) -> np.ndarray:
        """Micro batches of a whole stage in flight on pipeline rank r at its peak (the inputs and r)."""
        values, shape = self._arrays(arrays, self.inputs + ("r",))
        return self._evaluate(self._in_flight, ("m_r",), values, shape)["m_r"]

    def stage(self, kind: str, **arrays) -> dict[str, np.ndarray]:
        """One stage kind's components and "total" (the inputs, L_r layers and m_r in-flight micro batches)."""
        values, shape = self._arrays(arrays, self.inputs + STAGE_NAMES)
        return self._evaluate(self._stages[kind], self.stage_outputs[kind], values, shape)

    def stage_total(self, kind: str, **arrays) -> np.ndarray:
        """A stage's total as `estimate` reports it: the sum of its components rounded to whole bytes."""
        out = self.stage(kind, **arrays)
        names = self.stage_outputs[kind][:-1]
        total = np.rint(out[names[0]])
        for name in names[1:]:
            total += np.rint(out[name], out=out[name])  # in place: no stacked temporaries
        return total

    def even(self, kind: str, **arrays) -> dict:
        """The inputs of stage `kind` of an even split: L_r = L/p layers (L on the only stage, which exists at p = 1),
        Le_r = L_e/p MoE layers (exact where the layers are of one kind; a model of dense and MoE layers has each
        rank's own, symbolic.config.training.Training.moe_layers), m_r of its representative rank (first 0, middle
        1, last p - 1, only 0), added to `arrays`."""
        L, p, L_e = np.asarray(arrays["L"]), np.asarray(arrays["p"]), np.asarray(arrays["L_e"])
        return {**arrays, "L_r": L if kind == "only" else L / p, "Le_r": L_e if kind == "only" else L_e / p,
                "m_r": self.in_flight(**arrays, r=stage_rank(kind, p))}

    def stages(self, **arrays) -> dict[str, np.ndarray]:
        """The even split's breakdown: "<stage>.<component>" for stage in first, middle, last, only (p = 1)."""
        return {f"{kind}.{name}": x for kind in STAGES
                for name, x in self.stage(kind, **self.even(kind, **arrays)).items()}

    def stage_totals(self, **arrays) -> dict[str, np.ndarray]:
        """Each stage's total of the even split, as `estimate` reports it."""
        return {kind: self.stage_total(kind, **self.even(kind, **arrays)) for kind in STAGES}


@functools.lru_cache(maxsize=None)
def estimator(profile: str = "paper", switches: Switches = Switches()) -> Estimator:
    """Derive the profile's expressions for these switches and lambdify them once (cse=True; cached on disk)."""
    from ..profiles import PROFILES

    if profile not in PROFILES:
        raise ConfigError(f"unknown profile {profile!r} (choose from {', '.join(PROFILES)})")
    code = derived(profile, switches)
    stages = code["stages"]
    return Estimator(
        profile=profile, inputs=tuple(code["inputs"]), components=tuple(code["components"]),
        source=code["main_source"], stage_outputs={kind: tuple(x["outputs"]) for kind, x in stages.items()},
        stage_sources={kind: x["source"] for kind, x in stages.items()}, in_flight_source=code["in_flight_source"],
        _main=compile_source(code["main_source"], "_main"),
        _stages={kind: compile_source(x["source"], f"_{kind}") for kind, x in stages.items()},
        _in_flight=compile_source(code["in_flight_source"], "_in_flight"),
    )
