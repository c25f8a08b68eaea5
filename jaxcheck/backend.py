"""Start jax for a compile target: simulated CPU devices, a deviceless GPU topology, or the GPUs of this machine."""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile

from symbolic.config.errors import ConfigError

from .targets import Target, check_plugin, prepare_environment
from .targets import devices as topology_devices

# native stderr lines held back: the CUDA plugin looking for a GPU on a machine without one (absl INFO lines), and
# XLA:GPU saying its rematerialization cannot reach the card (mem4d reports that itself)
_NOISE = re.compile(
    r"^(WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR"
    r"|I\d{4} [\d:.]+ +\d+ cudart_stub\.cc:\d+\] Could not find cuda drivers.*"
    # XLA:GPU's rematerialization falling short of the card: mem4d compile reports it as `fit`
    r"|W\d{4} [\d:.]+ +\d+ hlo_rematerialization\.cc:\d+\] Can't reduce memory use below.*)$"
)


_HELD: list[
    tuple[int, int]
] = []  # (fd, a copy of the real file) while quiet_native_stderr holds fd back, outermost first


@contextlib.contextmanager
def quiet_native_stderr():
    """Hold back what native code writes to stderr; afterwards replay every line except the CUDA plugin's notices
    that no GPU driver is installed (a CPU-only machine), so that errors still show and the CLI's one-line
    messages stay one line. Interrupted (KeyboardInterrupt), it restores stderr and replays nothing: the CLI's
    "interrupted" line is the only one (and the CLI calls restore_stderr() again in case the signal landed here)."""
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        yield
        return
    sys.stderr.flush()
    level = len(_HELD)
    with tempfile.TemporaryFile() as held:
        _HELD.append((fd, os.dup(fd)))
        os.dup2(held.fileno(), fd)
        replay = True
        try:
            yield
        except KeyboardInterrupt:
            restore_stderr(level)
            replay = False
            raise
        finally:
            sys.stderr.flush()
            restore_stderr(level)
            if replay:
                held.seek(0)
                kept = [
                    line
                    for line in held.read().decode(errors="replace").splitlines()
                    if line.strip() and not _NOISE.match(line)
                ]
                if kept:
                    sys.stderr.write("\n".join(kept) + "\n")


def restore_stderr(level: int = 0) -> None:
    """Point stderr back at what it was before the quiet_native_stderr contexts from `level` on (0: the real
    stderr); safe to call again, and when nothing is held."""
    while len(_HELD) > level:
        fd, saved = _HELD[-1]
        os.dup2(saved, fd)
        _HELD.pop()
        os.close(saved)


@contextlib.contextmanager
def held_signals():
    """SIGINT and SIGTERM wait until native code has loaded, then act as they would have: a KeyboardInterrupt raised
    while jaxlib's or a PJRT plugin's extension module initialises crashes the process (SIGSEGV or SIGABRT, measured
    with jax 0.10.2) or is swallowed by jax's plugin loader. Main thread only (signal handlers live there)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = {
        signum: signal.signal(signum, lambda signum, frame: held.append(signum))
        for signum in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if held:
            handler = previous[held[0]]
            if callable(handler):
                handler(held[0], None)  # Python's or the CLI's handler: raises KeyboardInterrupt
            elif handler == signal.SIG_DFL:
                signal.raise_signal(held[0])


def import_jax():
    """jax, imported quietly: the CUDA plugin's notices of a missing driver held back, its version check skipped (GPU
    targets compile without NVIDIA libraries; on a GPU machine the check only compares versions). Call it before
    anything else imports jax."""
    os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")
    with quiet_native_stderr(), held_signals():
        import jax
    return jax


def backend_started() -> bool:
    from jax._src import xla_bridge

    return xla_bridge.backends_are_initialized()


def local_gpus(target: Target) -> list:
    """This machine's GPUs when they are the target's card (jax's default backend is cuda and the device kind names
    the card), else []: then the target compiles deviceless and nothing runs."""
    import jax

    try:
        devices = jax.devices()
    except RuntimeError:
        return []
    if not devices or devices[0].platform != "gpu" and devices[0].platform != "cuda":
        return []
    card = target.description.replace("NVIDIA", "").split()[0].lower() if target.description else ""
    return devices if card and card in devices[0].device_kind.lower() else []


def start(target: Target, n: int, use_local: bool = True) -> tuple[list, bool]:
    """n devices for the target and whether they are real (can run the step). cpu: n simulated CPU devices (set
    before jax starts); GPU: this machine's GPUs of that card when there are n of them, else the deviceless
    topology. Quiet about a missing GPU driver; one-line ConfigError when the CUDA plugin is missing."""
    check_plugin(target)
    prepare_environment(target)
    jax = import_jax()
    with quiet_native_stderr(), held_signals():  # the backends load their plugins' extension modules here
        if not backend_started():
            if not target.is_gpu or not use_local:
                jax.config.update("jax_platforms", "cpu")
            jax.config.update("jax_num_cpu_devices", max(n, 1))
        if not target.is_gpu:
            devices = jax.devices("cpu")
            if len(devices) < n:
                raise ConfigError(
                    f"the mesh needs {n} devices, jax started with {len(devices)} simulated CPU "
                    "devices: run it in a fresh process"
                )
            return devices[:n], False
        local = local_gpus(target) if use_local else []
        if len(local) >= n:
            return local[:n], True
        return topology_devices(target, n), False
