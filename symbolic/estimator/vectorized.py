"""The vectorized estimator: lambdified numpy functions of named, broadcastable arrays per profile and switches (the
most loaded GPU's components, each stage kind's, the in-flight micro batches of a pipeline rank)."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..config.errors import ConfigError
from ..config.glossary import STAGE_NAMES
from ..config.kinds import BF16, KINDS
from ..config.switches import Switches
from ..config.stages import STAGES, stage_rank
from .codegen import compile_source as _compile_source
from .codegen import derived
from ..recipes.registry import DEFAULT_PROFILE

NO_BF16 = dict.fromkeys(BF16, 0)  # a stage's BF16 layers where the caller places none (plan, the even split)

CHUNK = 16384  # configurations per call of the generated function: keeps its temporaries in cache
# each generated source compiled once a process: a plan's estimators share most of theirs (stage kinds, in-flight
# counts) and the functions hold no state (codegen.compile_source executes the source in a namespace of its own)
compile_source = functools.lru_cache(maxsize=None)(_compile_source)


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
    _stage_totals: dict = field(default=None, repr=False, compare=False)
    _in_flight: Callable = field(default=None, repr=False, compare=False)

    def _arrays(self, arrays: dict, names: tuple[str, ...]) -> tuple[list[np.ndarray], tuple[int, ...]]:
        unknown = sorted(set(arrays) - set(names))
        if unknown:
            raise ConfigError(
                f"estimator {self.profile!r}: unknown input(s) {', '.join(unknown)} (takes {' '.join(names)})"
            )
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
    def _blocks(values: list[np.ndarray], shape: tuple[int, ...]):
        """(start, stop, inputs) for cache-sized blocks of rows of the broadcast inputs (float64): each input sliced
        along the first axis where it varies along it and passed whole where it does not (a view, never a
        materialised broadcast), so a [rows, p] evaluation costs what its outputs do."""
        aligned = [
            np.float64(v.reshape(-1)[0]) if v.size == 1 else v.reshape((1,) * (len(shape) - v.ndim) + v.shape)
            for v in values
        ]
        step = max(1, CHUNK // max(1, int(np.prod(shape[1:]))))
        for start in range(0, shape[0], step):
            stop = start + step
            yield (
                start,
                stop,
                [
                    x if x.ndim == 0 else (x if x.shape[0] == 1 else x[start:stop]).astype(np.float64, copy=False)
                    for x in aligned
                ],
            )

    @classmethod
    def _evaluate(cls, fn: Callable, names: tuple[str, ...], values: list[np.ndarray], shape: tuple[int, ...]) -> dict:
        """Run the generated function over blocks of rows (_blocks), float64 throughout."""
        if not shape:
            return {
                name: np.asarray(result, dtype=np.float64)
                for name, result in zip(names, fn(*(np.float64(v.reshape(-1)[0]) for v in values)))
            }
        outs = [np.empty(shape, dtype=np.float64) for _ in names]
        for start, stop, chunk in cls._blocks(values, shape):
            for out, result in zip(outs, fn(*chunk)):
                out[start:stop] = result  # constants and [1, ...] results broadcast here
        return dict(zip(names, outs))

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
        values, shape = self._arrays({**NO_BF16, **arrays}, self.inputs + STAGE_NAMES)
        return self._evaluate(self._stages[kind], self.stage_outputs[kind], values, shape)

    def stage_total(self, kind: str, **arrays) -> np.ndarray:
        """A stage's total as `estimate` reports it: the sum of its components rounded to whole bytes (summed block
        by block: no array per component)."""
        values, shape = self._arrays({**NO_BF16, **arrays}, self.inputs + STAGE_NAMES)
        if not shape:
            return np.asarray(sum(np.rint(x) for x in self._stages[kind](*(v.reshape(-1)[0] for v in values))[:-1]))
        total = np.empty(shape, dtype=np.float64)
        for start, stop, chunk in self._blocks(values, shape):
            parts = self._stages[kind](*chunk)[:-1]
            block = np.zeros(np.broadcast_shapes(*(np.shape(x) for x in parts)))
            for x in parts:
                block += np.rint(x)
            total[start:stop] = block
        return total

    def stage_peak_total(self, kind: str, **arrays) -> np.ndarray:
        """A stage's "total" output as the generated function computes it (the unrounded sum), for the coefficients
        that choose a split (plan.splits); verdicts use stage_total."""
        values, shape = self._arrays({**NO_BF16, **arrays}, self.inputs + STAGE_NAMES)
        return self._evaluate(self._stage_totals[kind], ("total",), values, shape)["total"]

    def even(self, kind: str, **arrays) -> dict:
        """The inputs of stage `kind` of an even split: L_r = L/p layers (L on the only stage, which exists at p = 1),
        Le_r = L_e/p MoE layers and each hybrid kind's share alike, Lg_r = L_g/p and so on (config.kinds; exact where
        the layers are of one kind; a model of several kinds has each rank's own, Training.kind_layers), m_r of its
        representative rank (first 0, middle 1, last p - 1, only 0), added to `arrays`."""
        L, p = np.asarray(arrays["L"]), np.asarray(arrays["p"])
        share = {
            name: np.asarray(arrays[total]) if kind == "only" else np.asarray(arrays[total]) / p
            for name, total in KINDS.items()
        }
        return {
            **arrays,
            "L_r": L if kind == "only" else L / p,
            **share,
            "m_r": self.in_flight(**arrays, r=stage_rank(kind, p)),
        }

    def stages(self, **arrays) -> dict[str, np.ndarray]:
        """The even split's breakdown: "<stage>.<component>" for stage in first, middle, last, only (p = 1)."""
        return {
            f"{kind}.{name}": x for kind in STAGES for name, x in self.stage(kind, **self.even(kind, **arrays)).items()
        }

    def stage_totals(self, **arrays) -> dict[str, np.ndarray]:
        """Each stage's total of the even split, as `estimate` reports it."""
        return {kind: self.stage_total(kind, **self.even(kind, **arrays)) for kind in STAGES}


@functools.lru_cache(maxsize=None)
def estimator(profile: str = DEFAULT_PROFILE, switches: Switches = Switches()) -> Estimator:
    """Derive the profile's expressions for these switches and lambdify them once (cse=True; cached on disk)."""
    from ..recipes import get

    get(profile)  # an unknown name: one line
    code = derived(profile, switches)
    stages = code["stages"]
    return Estimator(
        profile=profile,
        inputs=tuple(code["inputs"]),
        components=tuple(code["components"]),
        source=code["main_source"],
        stage_outputs={kind: tuple(x["outputs"]) for kind, x in stages.items()},
        stage_sources={kind: x["source"] for kind, x in stages.items()},
        in_flight_source=code["in_flight_source"],
        _main=compile_source(code["main_source"], "_main"),
        _stages={kind: compile_source(x["source"], f"_{kind}") for kind, x in stages.items()},
        _stage_totals={kind: compile_source(x["total_source"], f"_{kind}_total") for kind, x in stages.items()},
        _in_flight=compile_source(code["in_flight_source"], "_in_flight"),
    )
