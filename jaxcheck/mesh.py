"""The device mesh (data, expert, pipe, tensor, context): simulated CPU devices set before jax starts, jax.distributed,
checks. The e expert-parallel ranks fold over the d data-parallel ranks: d = (d/e) x e, so dense data parallelism is
the pair of axes DATA = ("data", "expert"), and the devices lie in the order of the 4D mesh (d, p, t, c)."""

from __future__ import annotations

from symbolic.config.errors import ConfigError
from symbolic.config.training import Training

AXES = ("data", "expert", "pipe", "tensor", "context")
DATA = ("data", "expert")  # the d data-parallel ranks of dense layers: d/e x e


def mesh_shape(train: Training) -> dict[str, int]:
    """Mesh axis sizes from the training config: data=d/e, expert=e, pipe=p, tensor=t, context=c (the rule table's
    jax scope checks e | d)."""
    return {"data": train.d // train.ep, "expert": train.ep, "pipe": train.p, "tensor": train.t, "context": train.c}


def _folded(devices, train: Training):
    """A (d, p, t, c) device array as the mesh's (d/e, e, p, t, c): d split into d/e major, e minor."""
    return devices.reshape(tuple(mesh_shape(train)[a] for a in AXES))


def backend_started() -> bool:
    from jax._src import xla_bridge

    return xla_bridge.backends_are_initialized()


def request_cpu_devices(n: int, platform: str = "auto") -> None:
    """Ask for n simulated CPU devices (and, with platform='cpu', force the CPU backend); no-op once jax has started."""
    import jax

    if backend_started():
        return
    if platform == "cpu":
        jax.config.update("jax_platforms", "cpu")
    jax.config.update("jax_num_cpu_devices", max(n, 1))


def request_mock_gpu_topology(topology: str) -> None:
    """One GPU poses as "slices x hosts x devices" GPUs (jax_mock_gpu_topology, mock NCCL): compile only, never run."""
    import jax

    parts = topology.lower().split("x")
    if len(parts) != 3 or not all(p.strip().isdigit() and int(p) > 0 for p in parts):
        raise ConfigError(
            f"--mock-gpu-topology must look like 1x2x4 (slices x hosts x GPUs per host), got {topology!r}"
        )
    if not backend_started():
        jax.config.update("jax_mock_gpu_topology", topology)


def init_distributed(coordinator: str | None, num_processes: int | None, process_id: int | None) -> None:
    """jax.distributed.initialize: explicit address/count/id, or auto-detected (SLURM, Kubernetes, ...) when all are None."""
    import jax

    try:
        if coordinator is None and num_processes is None and process_id is None:
            jax.distributed.initialize()
        else:
            jax.distributed.initialize(coordinator, num_processes=num_processes, process_id=process_id)
    except (ValueError, RuntimeError) as err:
        raise ConfigError(f"jax.distributed.initialize failed: {str(err).splitlines()[0]}") from None


def make_mesh(train: Training, devices: list | None = None):
    """A jax Mesh with axes AXES in Auto mode (GSPMD with sharding constraints), over the given devices
    (jaxcheck.backend.start: simulated CPUs, a deviceless GPU topology, local GPUs) or jax's: the devices laid out
    (d, p, t, c) as a 4D mesh, d then split into (d/e, e)."""
    import jax
    import numpy as np
    from jax.sharding import AxisType

    need = train.world
    shape = (train.d, train.p, train.t, train.c)
    auto = (AxisType.Auto,) * len(AXES)
    if devices is not None and len(devices) >= need:
        return jax.sharding.Mesh(_folded(np.array(devices[:need]).reshape(shape), train), AXES, axis_types=auto)
    devices = jax.devices()
    if len(devices) < need:
        kind = devices[0].platform
        if kind == "cpu":
            hint = (
                "mem4d sets the simulated CPU device count itself; this process started jax with fewer, "
                "so run it in a fresh process (or under jax.distributed with more processes)"
            )
        else:
            hint = (
                f"run on {need} {kind.upper()} devices (several hosts: --coordinator/--num-processes/--process-id), "
                f"or compile deviceless for the card with --target (see README)"
            )
        raise ConfigError(
            f"mesh d*p*t*c = {train.d}*{train.p}*{train.t}*{train.c} needs {need} devices, "
            f"jax sees {len(devices)} {kind} device(s): {hint}"
        )
    flat = jax.make_mesh(shape, ("d", "p", "t", "c"), axis_types=(AxisType.Auto,) * 4, devices=devices[:need])
    return jax.sharding.Mesh(_folded(flat.devices, train), AXES, axis_types=auto)


def describe(mesh) -> dict:
    """The parallel sizes data (d: the mesh axes data x expert), expert (e), pipe, tensor, context, plus where the
    devices are: platform and number of jax processes."""
    import jax

    sizes = dict(zip(mesh.axis_names, (int(n) for n in mesh.devices.shape)))
    return {
        "data": sizes["data"] * sizes["expert"],
        "expert": sizes["expert"],
        "pipe": sizes["pipe"],
        "tensor": sizes["tensor"],
        "context": sizes["context"],
        "platform": mesh.devices.flat[0].platform,
        "processes": jax.process_count(),
    }
