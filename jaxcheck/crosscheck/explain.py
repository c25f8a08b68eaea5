"""`mem4d verify --explain`: take XLA's temp apart per phase (from a dump), with compiled variants, and list the
residuals saved per layer."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from ..spec import StepSpec, jax_training
from ..stages import doubled
from .profile import rel, symbolic_bytes, symbolic_temp
from symbolic.recipes.registry import DEFAULT_PROFILE

TRACE_BATCH = 2


def trace_batch(mesh) -> int:
    """The batch the residuals are traced at: TRACE_BATCH, or the least multiple of it the data x expert axes divide
    (an MoE layer's dispatch is a shard_map that splits the batch over them: d4 e4 cannot split 2)."""
    import math

    return math.lcm(TRACE_BATCH, int(mesh.shape["data"]) * int(mesh.shape["expert"]))


def _temps(spec: StepSpec, mesh) -> tuple[int, int]:
    """(XLA temp, symbolic temp) of the train step of this spec."""
    from ..compile import FAST_CPU, compile_step

    cpu = mesh.devices.flat[0].platform == "cpu"
    report, _, _ = compile_step(spec, mesh, compiler_options=FAST_CPU if cpu else None)
    return report.xla["temp_bytes"], symbolic_temp(
        symbolic_bytes(spec.shape, spec.train, spec.opts, "cpu" if cpu else "gpu")
    )


def forward_temp(spec: StepSpec, mesh) -> int:
    """XLA's temp bytes of the loss alone (forward pass, no gradients or optimizer)."""
    from ..compile import FAST_CPU, compile_lowered, describe_spec
    from ..state import build
    from ..step import loss_fn

    built = build(spec, mesh)
    compute = built.shardings["compute"] if spec.train.sharded_grads else None
    fn = lambda params, batch: loss_fn(params, batch, built.graphdef, built.stack_graphdefs, spec, compute)
    cpu = mesh.devices.flat[0].platform == "cpu"
    with jax.set_mesh(mesh):
        jitted = jax.jit(fn, in_shardings=(built.shardings["params"], built.shardings["batch"]))
        compiled = compile_lowered(
            jitted.lower(built.abstract["params"], built.abstract["batch"]),
            f"the forward of {describe_spec(spec)}",
            FAST_CPU if cpu else None,
        )
    return int(compiled.memory_analysis().temp_size_in_bytes)


def _variant(name: str, what: str, xla: float, sym: float) -> dict:
    return {"name": name, "what": what, "xla": int(xla), "symbolic": int(sym), "rel_error": rel(sym, xla)}


def variants(spec: StepSpec, mesh, base_xla_temp: int) -> list[dict]:
    """Variants of the same configuration, each compiled like the step and evaluated by the profile the same way:
    2L layers (temp bytes per added layer of a stage), 2m micro batches (per added micro batch), the other remat
    policy (what the policy changes), forward only (the loss's temp; no symbolic figure)."""
    shape, tr = spec.shape, spec.train
    x0, s0 = base_xla_temp, _temps(spec, mesh)[1]
    out = []
    x2, s2 = _temps(dataclasses.replace(spec, shape=doubled(shape, tr.p)), mesh)
    per = shape.L // tr.p
    out.append(_variant("per layer", f"(temp(2L) - temp(L)) / (L/p), L/p = {per}", (x2 - x0) / per, (s2 - s0) / per))
    xm, sm = _temps(dataclasses.replace(spec, train=dataclasses.replace(tr, gbs=2 * tr.global_batch)), mesh)
    out.append(_variant("per micro batch", f"(temp(2m) - temp(m)) / m, m = {tr.m}", (xm - x0) / tr.m, (sm - s0) / tr.m))
    if tr.schedule == "1f1b" and tr.p > 1:
        out.append(in_flight_variant(spec, mesh))
    other = {"none": "full", "selective": "none", "full": "none"}[tr.recompute]
    xo, so = _temps(dataclasses.replace(spec, train=dataclasses.replace(tr, recompute=other)), mesh)
    out.append(_variant(f"remat {other} - {tr.recompute}", "what the remat policy changes", xo - x0, so - s0))
    out.append(
        {
            "name": "forward only",
            "what": "temp of the loss alone (no symbolic figure)",
            "xla": forward_temp(spec, mesh),
            "symbolic": None,
            "rel_error": None,
        }
    )
    return out


def in_flight_variant(spec: StepSpec, mesh) -> dict:
    """One micro batch in flight, 1F1B: temp(m = p) - temp(m = p - 1), the rings' slots going from p - 1 to p, beside
    the profile's same difference and the paper profile's activations of one micro batch on a stage (its in-flight
    term per micro batch: L/p layers' tensors, Megatron-LM's set), and the in-flight counts of both at rank 0."""
    from symbolic.estimator.estimate import estimate

    tr = spec.train
    at = lambda m: _temps(dataclasses.replace(spec, train=dataclasses.replace(tr, gbs=m * tr.b * tr.d)), mesh)  # noqa: E731
    (x1, s1), (x0, s0) = at(tr.p), at(tr.p - 1)
    first = estimate(spec.shape, jax_training(tr, spec.opts), DEFAULT_PROFILE, overheads=False).stages[0]
    return {
        **_variant(
            "per micro batch in flight", f"temp(m = p) - temp(m = p - 1), p = {tr.p}: one ring slot", x1 - x0, s1 - s0
        ),
        "paper_bytes": int(first["bytes"]["activations"] / first["in_flight"]),
        "paper_in_flight": int(first["in_flight"]),
        "jax_in_flight": min(tr.m, tr.p),
    }


def _saved(spec: StepSpec, mesh, stack: str = "blocks") -> list[dict]:
    """The residuals one layer of `stack` writes into the pipeline's stacks (jaxcheck.model.pipeline.layer_residuals),
    traced on abstract inputs [trace_batch(mesh), s, h], global shapes: shape and bytes of each."""
    from ..model.pipeline import layer_residuals
    from ..state import build
    from ..step import layer_function

    built = build(spec, mesh)
    layer_params = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape[2:], x.dtype), built.abstract["params"][stack])
    x = jax.ShapeDtypeStruct((trace_batch(mesh), spec.train.s, spec.shape.h), jnp.dtype(spec.opts.compute_dtype))
    with jax.set_mesh(mesh):
        saved = layer_residuals(layer_function(built.stack_graphdefs[stack], spec), layer_params, x)
    return [
        {"shape": f"{jnp.dtype(r.dtype).name}{list(r.shape)}", "bytes": int(r.size * jnp.dtype(r.dtype).itemsize)}
        for r in saved
    ]


def _profile_tensors(spec: StepSpec, batch: int = TRACE_BATCH, gdn: bool = False) -> list[dict]:
    """The profile's per-layer tensors at the traced shape (d = t = c = e = 1, b = batch): name, count, bytes (gdn:
    a Gated DeltaNet layer's)."""
    import sympy as sp
    from symbolic.recipes.jax.tensors import layer_tensors
    from symbolic.config.glossary import inputs_for
    from symbolic.config.switches import Switches
    from symbolic.config.symbols import BY_NAME

    traced = dataclasses.replace(jax_training(spec.train, spec.opts), d=1, t=1, c=1, ep=1, etp=None, b=batch, gbs=None)
    subs = {BY_NAME[name]: value for name, value in inputs_for(spec.shape, traced).items()}
    sw = Switches.of(traced, overheads=False, shape=spec.shape)
    return [
        {"name": part.name, "count": part.count, "bytes": int(sp.sympify(part.expr).xreplace(subs))}
        for part in layer_tensors(sw, moe=sw.moe, gdn=gdn)
    ]  # the main stack's layer: an MoE layer in a model
    # with experts


def residuals(spec: StepSpec, mesh, stack: str = "blocks") -> dict:
    """The residuals one layer of `stack` (a hybrid's linear_blocks: a Gated DeltaNet layer) writes into the stacks
    vs the profile's per-layer tensors, traced at b = trace_batch(mesh), global shapes (the profile's at d = t = c =
    1): count and bytes."""
    listed = _saved(spec, mesh, stack)
    batch = trace_batch(mesh)
    tensors = _profile_tensors(spec, batch, stack == "linear_blocks")
    return {
        "trace_shape": f"b={batch}, s={spec.train.s}, d=t=c=1",
        "jax": listed,
        "jax_count": len(listed),
        "jax_bytes": sum(r["bytes"] for r in listed),
        "symbolic": tensors,
        "symbolic_count": sum(t["count"] for t in tensors),
        "symbolic_bytes": sum(t["bytes"] for t in tensors),
    }


def dump_options(backend: str, directory: str) -> dict:
    """The compiler options of a compile that dumps the train step's HLO and buffer assignment into directory."""
    from ..compile import FAST_CPU
    from .xladump import DUMP_OPTIONS

    return {**({} if backend == "gpu" else FAST_CPU), **DUMP_OPTIONS, "xla_dump_to": directory}


def phases(spec: StepSpec, mesh, backend: str, dumped: str | None = None) -> list[dict]:
    """XLA's peak of live temporaries in each window between the step's loops (read from a dump of this compile, or
    of the compile already dumped into `dumped`) next to the profile's largest phase in that window."""
    import tempfile

    from symbolic.config.symbols import BY_NAME
    from symbolic.config.glossary import inputs_for
    from symbolic.config.switches import Switches
    from symbolic.recipes.jax import profile

    from ..compile import compile_step
    from .xladump import phase_peaks

    with tempfile.TemporaryDirectory(prefix="mem4d-dump-") as directory:
        if dumped is None:
            compile_step(spec, mesh, compiler_options=dump_options(backend, directory))
        # ZeRO-2's update loop over the L/p layers (XLA removes a loop of one trip)
        xla = phase_peaks(
            dumped or directory,
            (spec.train.sharded_grads and not spec.train.sharded_weights) and spec.shape.L > spec.train.p,
            ticks=spec.train.schedule == "1f1b",
        )
    training = jax_training(spec.train, spec.opts)
    values = {BY_NAME[n]: v for n, v in inputs_for(spec.shape, training).items()}
    live = {
        name: int(float(expr.xreplace(values)))
        for name, expr in profile.phase_bytes(Switches.of(training, False, backend=backend, shape=spec.shape)).items()
    }
    out = []
    for window, bytes_ in xla["windows"].items():
        members = [p for p in live if p.split("_")[0] in window.replace("+", " ").split()]
        sym = max((live[p] for p in members), default=None)
        out.append(
            {
                "name": window,
                "what": ", ".join(members) or "-",
                "xla": bytes_,
                "symbolic": sym,
                "rel_error": rel(sym, bytes_) if sym is not None else None,
            }
        )
    return out + [
        {
            "name": "heap (temp)",
            "what": "XLA packs the phases into one heap",
            "xla": xla["temp_bytes"],
            "symbolic": max(live.values()),
            "rel_error": rel(max(live.values()), xla["temp_bytes"]),
        }
    ]


def explain(spec: StepSpec, mesh, xla: dict, backend: str = "gpu") -> dict:
    """The "explain" object of `mem4d verify --json --explain`."""
    return {
        "phases": phases(spec, mesh, backend),
        "variants": variants(spec, mesh, xla["temp_bytes"]),
        "residuals": residuals(spec, mesh),
    }
