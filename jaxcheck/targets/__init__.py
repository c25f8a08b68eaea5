"""Compile targets: `cpu` (simulated CPU devices) and GPU cards, compiled by XLA:GPU deviceless (no GPU needed).

A GPU target is a GpuTargetConfigProto text file (this folder: one per card, with the sources of its figures, or
any file given by path). Its devices come from jax's deviceless topology (slices x hosts x GPUs per host).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

from symbolic.config.errors import ConfigError

HERE = Path(__file__).resolve().parent
GPUS_PER_HOST = 8
DEFAULT = "h100-80gb"  # the card compile, verify and sweep compile for unless told otherwise
PLUGIN_HINT = "GPU targets need jax's CUDA plugin, without a GPU: pip install \"jax[cuda12-local]\" (Linux only)"


@dataclass(frozen=True)
class Target:
    """Where a step is compiled for: its platform, the card's memory, and (GPU) the XLA target config text."""

    name: str
    platform: str  # "cpu" or "cuda"
    memory_bytes: int | None = None  # device memory XLA plans against (None: host memory, CPU)
    config: str | None = None  # GpuTargetConfigProto text
    description: str = "simulated CPU devices"

    @property
    def is_gpu(self) -> bool:
        return self.platform == "cuda"

    def with_memory(self, nbytes: int) -> "Target":
        """The same card posing with `nbytes` of memory (large enough: XLA's rematerialization never triggers)."""
        if not self.is_gpu:
            return self
        text = re.sub(r"device_memory_size:\s*\d+", f"device_memory_size: {int(nbytes)}", self.config)
        return replace(self, memory_bytes=int(nbytes), config=text)


def names() -> list[str]:
    """The shipped targets: cpu and one per target-config file here."""
    return ["cpu"] + sorted(p.stem for p in HERE.glob("*.txtpb"))


def _parse(name: str, text: str, where: str) -> Target:
    memory = re.search(r"device_memory_size:\s*(\d+)", text)
    desc = re.search(r'device_description_str:\s*"([^"]*)"', text)
    if not memory or "gpu_device_info" not in text:
        raise ConfigError(
            f"{where}: not a GPU target config (GpuTargetConfigProto text with gpu_device_info and device_memory_size)"
        )
    return Target(name, "cuda", int(memory.group(1)), text, desc.group(1) if desc else name)


def load(spec: str) -> Target:
    """A shipped target by name, or a GpuTargetConfigProto text file by path; one-line ConfigError otherwise."""
    if spec == "cpu":
        return Target("cpu", "cpu")
    path = HERE / f"{spec}.txtpb"
    if not path.exists():
        path = Path(spec)
        if not path.is_file():
            raise ConfigError(f"unknown target {spec!r}: choose from {', '.join(names())} or pass --target-config FILE")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"cannot read target config {path}: {getattr(err, 'strerror', None) or err}") from None
    return _parse(path.stem, text, str(path))


def check_plugin(target: Target) -> None:
    """A GPU target needs the CUDA PJRT plugin importable; a one-line ConfigError says what to install."""
    if not target.is_gpu:
        return
    import importlib.util

    if not any(importlib.util.find_spec(m) for m in ("jax_plugins.xla_cuda12", "jax_plugins.xla_cuda13")):
        raise ConfigError(PLUGIN_HINT)


def topology(n: int) -> str:
    """slices x hosts x GPUs per host for n devices: full hosts of GPUS_PER_HOST where n allows, else fewer per host."""
    import math

    per_host = math.gcd(n, GPUS_PER_HOST)
    return f"1x{n // per_host}x{per_host}"


def devices(target: Target, n: int) -> list:
    """n devices of the target: the deviceless topology's GPUs (compile only), or jax's CPU devices."""
    import jax

    if not target.is_gpu:
        return jax.devices()[:n]
    from jax.experimental import topologies

    try:
        topo = topologies.get_topology_desc(platform="cuda", target_config=target.config, topology=topology(n))
    except Exception as err:  # noqa: BLE001  (XLA's status errors carry no stable type)
        line = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        hint = (
            "; jax's CUDA plugin did not load in this process (JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 must be set before "
            "jax starts)"
            if "not implemented" in line
            else ""
        )
        raise ConfigError(
            f"target {target.name}: XLA could not build a deviceless GPU topology: {line}{hint}"
        ) from None
    return list(topo.devices)


def prepare_environment(target: Target) -> None:
    """Before jax starts: GPU targets compile deviceless, so skip the CUDA version checks (no NVIDIA libraries)."""
    if target.is_gpu:
        os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")
