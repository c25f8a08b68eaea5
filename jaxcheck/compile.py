"""Ahead-of-time compile of the train step from abstract sharded shapes (nothing allocated) and XLA's memory analysis."""

from __future__ import annotations

import time
from dataclasses import dataclass

import jax

from symbolic.config.errors import CompileFailed, ConfigError

from .backend import quiet_native_stderr
from .mesh import describe
from .spec import StepSpec
from .state import GROUPS, Built, argument_bytes, build, param_count
from .step import make_train_step


@dataclass
class Report:
    """One compiled step: mesh, sizes, compile time, XLA's memory analysis and the argument breakdown (bytes/device)."""

    mesh: dict
    devices: int
    param_count: int
    compile_seconds: float
    xla: dict
    arguments: dict
    measured: dict | None = None

    def as_json(self, spec: StepSpec) -> dict:
        """`mem4d compile --json`: model, param_count and config (spec.as_json), then XLA's and the measured bytes."""
        return {
            "model": spec.shape.name,
            "param_count": self.param_count,
            "config": spec.as_json(),
            "mesh": self.mesh,
            "devices": self.devices,
            "compile_seconds": round(self.compile_seconds, 3),
            "xla": self.xla,
            "arguments": self.arguments,
            "measured": self.measured,
        }


def jit_step(built: Built, with_grads: bool = False):
    """jax.jit of the train step with explicit in/out shardings; params and optimizer state donated (opts.donate)."""
    sh = built.shardings
    compute = sh["compute"] if built.spec.train.sharded_grads else None
    step = make_train_step(built.graphdef, built.stack_graphdefs, built.spec, sh["grads"], with_grads, compute)
    replicated = jax.sharding.NamedSharding(built.mesh, jax.sharding.PartitionSpec())
    outs = (sh["params"], sh["optimizer"], replicated) + ((sh["grads"],) if with_grads else ())
    donate = (0, 1) if built.spec.opts.donate else ()
    return jax.jit(step, in_shardings=tuple(sh[g] for g in GROUPS), out_shardings=outs, donate_argnums=donate)


def xla_memory(compiled) -> dict:
    """memory_analysis() as a dict of per-device bytes: argument (params + AdamW state + batch), output (new params +
    state + loss), alias (outputs that reuse donated argument buffers), temp (everything live inside the step:
    gradients, activations, residuals, collective buffers), generated code, host temp, and total = argument + output +
    temp - alias (inputs, outputs and temps are resident together; a donated buffer is held once)."""
    ma = compiled.memory_analysis()
    out = {
        "argument_bytes": int(ma.argument_size_in_bytes),
        "output_bytes": int(ma.output_size_in_bytes),
        "alias_bytes": int(ma.alias_size_in_bytes),
        "temp_bytes": int(ma.temp_size_in_bytes),
        "generated_code_bytes": int(ma.generated_code_size_in_bytes),
        "host_temp_bytes": int(getattr(ma, "host_temp_size_in_bytes", 0)),
    }
    out["total_bytes"] = out["argument_bytes"] + out["output_bytes"] + out["temp_bytes"] - out["alias_bytes"]
    return out


# XLA CPU codegen at -O0: same HLO passes, SPMD partitioning and buffer assignment, about half the compile time (tests)
FAST_CPU = {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True}
# FAST_CPU without XLA:CPU's fusion emitters: compiles about 3x faster (tiny steps: 0.7 s instead of 2.5 s); the same
# buffers, temp a few hundred bytes off FAST_CPU's. For numerics and structure checks (tests, --fast-compile), not for
# the memory figures verify reports.
QUICK_CPU = {**FAST_CPU, "xla_cpu_use_fusion_emitters": False}


def describe_spec(spec: StepSpec) -> str:
    """The configuration in one short line: model, mesh, s, b, gbs, remat, ZeRO stage, schedule."""
    t = spec.train
    experts = f" e{t.ep}" if t.ep != 1 else ""
    return (
        f"{spec.shape.name} d{t.d} t{t.t} p{t.p} c{t.c}{experts} s{t.s} b{t.b} gbs{t.gbs} {t.recompute} "
        f"zero{t.zero} {t.schedule}"
    )


def _first_line(err: BaseException) -> str:
    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
    return lines[0] if lines else type(err).__name__


def compile_lowered(lowered, what: str, compiler_options: dict | None = None):
    """lowered.compile() in a worker thread that the main thread waits on in short joins, so that Ctrl-C is handled
    within a tenth of a second (a signal reaches Python only between bytecodes, and XLA's compile is one long call;
    the abandoned compile ends with the process); XLA's own error becomes CompileFailed, one line naming `what`."""
    import threading

    box: dict = {}

    def work():
        try:
            box["compiled"] = lowered.compile(compiler_options=compiler_options)
        except BaseException as err:  # noqa: BLE001 - handed to the waiting thread
            box["error"] = err

    if threading.current_thread() is not threading.main_thread():
        work()
    else:
        worker = threading.Thread(target=work, name="xla-compile", daemon=True)
        worker.start()
        while worker.is_alive():
            worker.join(0.05)
    err = box.get("error")
    if err is not None:
        if isinstance(err, jax.errors.JaxRuntimeError):
            raise CompileFailed(f"XLA could not compile {what}: {_first_line(err)}") from None
        raise err
    return box["compiled"]


def lower_step(spec: StepSpec, mesh: jax.sharding.Mesh, with_grads: bool = False) -> tuple[Built, object]:
    """Build abstract state and lower the step for the mesh: the Built and jax's Lowered (nothing compiled yet)."""
    programs = spec.check().stages()
    if len(programs) > 1:
        raise ConfigError(
            f"{spec.shape.name}'s stages hold different layers at pp={spec.train.p}, one program per "
            "stage kind: compile each of StepSpec.stages() (mem4d compile, verify and sweep do)"
        )
    built = build(programs[0][1], mesh)  # an even split spelled out by --stage-layers: the even one
    with jax.set_mesh(mesh), quiet_native_stderr():
        return built, jit_step(built, with_grads).lower(*built.args)


def for_devices(lowered, devices: list):
    """The same lowered program bound to other devices of as many (a GPU target's topology posing with other memory),
    so that it compiles again without a second trace and lowering; None where jax's private Lowering is not laid out
    as in jax 0.10 (the caller lowers again)."""
    import copy

    try:
        from jax._src.interpreters import pxla

        lowering = copy.copy(lowered._lowering)
        lowering._device_list = pxla._create_device_list(tuple(devices))
        lowering._executable = None
        lowering.compile_args = {**lowering.compile_args, "backend": devices[0].client}
        again = copy.copy(lowered)
        again._lowering = lowering
    except (AttributeError, ImportError, TypeError):
        return None
    return again


def compile_report(spec: StepSpec, mesh, built: Built, lowered, compiler_options: dict | None, start: float):
    """Compile a lowered step on its mesh: the Report (compile time counted from `start`) and the executable."""
    with jax.set_mesh(mesh), quiet_native_stderr():  # XLA:GPU's compiler looks for a GPU driver again
        compiled = compile_lowered(lowered, describe_spec(spec), compiler_options)
    report = Report(
        mesh=describe(mesh),
        devices=int(mesh.devices.size),
        param_count=param_count(built),
        compile_seconds=time.perf_counter() - start,
        xla=xla_memory(compiled),
        arguments=argument_bytes(built),
    )
    return report, compiled


def compile_step(
    spec: StepSpec, mesh: jax.sharding.Mesh, with_grads: bool = False, compiler_options: dict | None = None
) -> tuple[Report, object, Built]:
    """Build abstract state, lower and compile the step; returns the report, the compiled executable and the Built."""
    start = time.perf_counter()
    built, lowered = lower_step(spec, mesh, with_grads)
    report, compiled = compile_report(spec, mesh, built, lowered, compiler_options, start)
    return report, compiled, built
