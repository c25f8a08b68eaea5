"""What XLA makes of the step on a target card: the program as written, and, where it comes near the card's memory,
the program XLA:GPU compiles to fit it (its rematerialization pass recomputes values to shrink the peak)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from .spec import StepSpec
from .targets import Target

AS_WRITTEN_BYTES = 2**50  # device memory a GPU target poses with so that XLA's rematerialization changes nothing
NEAR = 0.8  # compile again with the card's own memory when the program as written needs more than NEAR x of it


@dataclass
class CardCompile:
    """The report of the program as written and, when it was compiled, of the program XLA fitted to the card."""

    target: Target
    written: object  # jaxcheck.compile.Report (device memory AS_WRITTEN_BYTES, or CPU / this machine's GPUs)
    fitted: object | None  # Report with the card's memory, when the program as written needs more than NEAR of it
    real: bool  # compiled on this machine's GPUs of the card (the step can run and be measured)

    @property
    def report(self):
        """The report of what the card runs: the fitted program when there is one."""
        return self.fitted or self.written

    def fit(self) -> dict | None:
        """GPU targets: what the program needs, what XLA reached, and whether that fits in the card's memory."""
        if not self.target.is_gpu:
            return None
        needed = self.written.xla["total_bytes"]
        reached = self.report.xla["total_bytes"]
        return {
            "memory_bytes": self.target.memory_bytes,
            "needed_bytes": needed,
            "reached_bytes": reached,
            "rematerialized": self.fitted is not None and reached < needed,
            "fits": reached <= self.target.memory_bytes,
        }

    def as_json(self, spec: StepSpec) -> dict:
        out = self.report.as_json(spec)
        out["target"] = {
            "name": self.target.name,
            "platform": "gpu" if self.target.is_gpu else "cpu",
            "description": self.target.description,
            "memory_bytes": self.target.memory_bytes,
            "devices": "local" if self.real else ("deviceless" if self.target.is_gpu else "simulated"),
        }
        out["xla_as_written"] = self.written.xla
        out["fit"] = self.fit()
        return out


def compile_for(spec: StepSpec, target: Target, measure: bool = False) -> CardCompile:
    """Compile the step for the target: as written (a GPU target posing with AS_WRITTEN_BYTES), then, if that needs
    more than NEAR of the card, with the card's memory, as XLA:GPU would on it. On this machine's GPUs of that card,
    one compile (theirs) and, with measure, one real step in a fresh process."""
    from .backend import start

    written_target = target.with_memory(AS_WRITTEN_BYTES)
    devices, real = start(written_target, spec.train.world)  # this machine's GPUs when they are the card
    from .compile import FAST_CPU, compile_report, for_devices, lower_step
    from .mesh import make_mesh

    began = time.perf_counter()
    mesh = make_mesh(spec.train, devices)
    built, lowered = lower_step(spec, mesh)
    written, _ = compile_report(spec, mesh, built, lowered, None if target.is_gpu else FAST_CPU, began)
    fitted = None
    if target.is_gpu and not real and written.xla["total_bytes"] > NEAR * target.memory_bytes:
        from .targets import devices as topology_devices

        card_devices = topology_devices(target, spec.train.world)
        card_mesh = make_mesh(spec.train, card_devices)
        began = time.perf_counter()
        again = for_devices(lowered, card_devices)  # the program lowered once, compiled again for the card
        if again is None:
            built, again = lower_step(spec, card_mesh)
        from .backend import quiet_native_stderr

        with quiet_native_stderr():  # XLA's warning that it cannot reach the card's memory: reported by fit()
            fitted, _ = compile_report(spec, card_mesh, built, again, None, began)
    result = CardCompile(target, written, fitted, real)
    if measure and real:
        from .measure import measure as run_measure

        written.measured = run_measure(spec)
    return result
