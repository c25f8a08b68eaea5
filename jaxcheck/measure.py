"""Measured device memory: run the compiled step once in a fresh process (jax cannot reset the allocator's peak) and
read the peak bytes in use; None where jax reports no memory_stats() (CPU), never 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict, fields

from symbolic.config.shapes import ModelShape
from symbolic.config.training import Training

from .spec import JaxOptions, StepSpec


def spec_to_json(spec: StepSpec) -> str:
    return json.dumps({"shape": spec.shape.as_dict(), "train": asdict(spec.train), "opts": asdict(spec.opts)})


def spec_from_json(text: str) -> StepSpec:
    raw = json.loads(text)
    train = {f.name: raw["train"][f.name] for f in fields(Training) if f.init}  # the byte widths follow from these
    return StepSpec(ModelShape(**raw["shape"]), Training(**train), JaxOptions(**raw["opts"]))


def measure(spec: StepSpec, timeout: float = 900.0) -> dict | None:
    """{"peak_bytes", "limit_bytes"} of the busiest local device after one real step, or None where not measurable."""
    env = {k: v for k, v in os.environ.items() if k != "XLA_PYTHON_CLIENT_PREALLOCATE"}
    proc = subprocess.run(
        [sys.executable, "-m", "jaxcheck.measure", spec_to_json(spec)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"measurement subprocess failed (exit {proc.returncode}): {tail}"}
    return json.loads(lines[-1]).get("measured")


def _run_once(spec: StepSpec) -> dict | None:
    """In this fresh process: compile, initialise real params, run one step, read memory_stats() of local devices."""
    import jax

    from .compile import compile_step
    from .mesh import make_mesh
    from .state import init_state, synthetic_batch

    if jax.local_devices()[0].memory_stats() is None:
        return None
    mesh = make_mesh(spec.train)
    report, step, built = compile_step(spec, mesh)
    params, opt_state = init_state(built)
    batch = synthetic_batch(built)
    params, opt_state, loss = step(params, opt_state, batch)
    jax.block_until_ready(loss)
    stats = [d.memory_stats() for d in jax.local_devices() if d in set(mesh.devices.flat)]
    peak = max(stats, key=lambda st: st.get("peak_bytes_in_use", 0))
    return {
        "peak_bytes": int(peak.get("peak_bytes_in_use", 0)),
        "limit_bytes": int(peak.get("bytes_limit", 0)),
        "device": jax.local_devices()[0].device_kind,
        "xla": report.xla,
    }


if __name__ == "__main__":
    print(json.dumps({"measured": _run_once(spec_from_json(sys.argv[1]))}))
