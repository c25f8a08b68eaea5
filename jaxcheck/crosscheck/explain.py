"""`mem4d verify --explain`: take XLA's temp apart with compiled variants and list the residuals saved per layer."""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from ..spec import StepSpec, jax_training
from .profile import rel, symbolic_bytes, symbolic_temp

TRACE_BATCH = 2


def _temps(spec: StepSpec, mesh) -> tuple[int, int]:
    """(XLA temp, symbolic temp) of the train step of this spec."""
    from ..compile import FAST_CPU, compile_step

    cpu = mesh.devices.flat[0].platform == "cpu"
    report, _, _ = compile_step(spec, mesh, compiler_options=FAST_CPU if cpu else None)
    return report.xla["temp_bytes"], symbolic_temp(symbolic_bytes(spec.shape, spec.train, spec.opts))


def forward_temp(spec: StepSpec, mesh) -> int:
    """XLA's temp bytes of the loss alone (forward pass, no gradients or optimizer)."""
    from ..compile import FAST_CPU
    from ..state import build
    from ..step import loss_fn

    built = build(spec, mesh)
    fn = lambda params, batch: loss_fn(params, batch, built.graphdef, built.block_graphdef, spec)
    cpu = mesh.devices.flat[0].platform == "cpu"
    with jax.set_mesh(mesh):
        jitted = jax.jit(fn, in_shardings=(built.shardings["params"], built.shardings["batch"]))
        compiled = jitted.lower(built.abstract["params"], built.abstract["batch"]).compile(
            compiler_options=FAST_CPU if cpu else None)
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
    x2, s2 = _temps(dataclasses.replace(spec, shape=dataclasses.replace(shape, L=2 * shape.L)), mesh)
    per = shape.L // tr.p
    out.append(_variant("per layer", f"(temp(2L) - temp(L)) / (L/p), L/p = {per}", (x2 - x0) / per, (s2 - s0) / per))
    xm, sm = _temps(dataclasses.replace(spec, train=dataclasses.replace(tr, gbs=2 * tr.global_batch)), mesh)
    out.append(_variant("per micro batch", f"(temp(2m) - temp(m)) / m, m = {tr.m}", (xm - x0) / tr.m, (sm - s0) / tr.m))
    other = {"none": "full", "selective": "none", "full": "none"}[tr.recompute]
    xo, so = _temps(dataclasses.replace(spec, train=dataclasses.replace(tr, recompute=other)), mesh)
    out.append(_variant(f"remat {other} - {tr.recompute}", "what the remat policy changes", xo - x0, so - s0))
    out.append({"name": "forward only", "what": "temp of the loss alone (no symbolic figure)",
                "xla": forward_temp(spec, mesh), "symbolic": None, "rel_error": None})
    return out


def _is_activation(aval, s: int) -> bool:
    """A per-micro-batch tensor: [b, s, ...] or [b, heads, ..., s, s], not bool (the causal mask is loop-invariant)."""
    shape = tuple(aval.shape)
    return aval.dtype != jnp.bool_ and len(shape) >= 2 and shape[0] == TRACE_BATCH and s in shape[1:]


def _saved(spec: StepSpec, mesh) -> list[dict]:
    """jax's saved residuals of one layer function on abstract inputs [TRACE_BATCH, s, h], each with its bytes."""
    from jax._src.ad_checkpoint import saved_residuals

    from ..state import build
    from ..step import layer_function

    built = build(spec, mesh)
    layer_params = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape[2:], x.dtype), built.abstract["params"]["blocks"])
    s = spec.train.s
    x = jax.ShapeDtypeStruct((TRACE_BATCH, s, spec.shape.h), jnp.dtype(spec.opts.compute_dtype))
    with jax.set_mesh(mesh):
        saved = saved_residuals(layer_function(built.block_graphdef, spec), layer_params, x)
    return [{"shape": aval.str_short(), "bytes": int(aval.size * aval.dtype.itemsize), "what": desc,
             "activation": _is_activation(aval, s)} for aval, desc in saved]


def _profile_tensors(spec: StepSpec) -> list[dict]:
    """The profile's per-layer tensors at the traced shape (d = t = c = 1, b = TRACE_BATCH): name, count, bytes."""
    import sympy as sp
    from symbolic.components.jaxstep import layer_tensors
    from symbolic.config.glossary import inputs_for
    from symbolic.config.switches import Switches
    from symbolic.config.symbols import BY_NAME

    traced = dataclasses.replace(jax_training(spec.train, spec.opts), d=1, t=1, c=1, b=TRACE_BATCH, gbs=None)
    subs = {BY_NAME[name]: value for name, value in inputs_for(spec.shape, traced).items()}
    sw = Switches.of(traced, overheads=False)
    return [{"name": part.name, "count": part.count, "bytes": int(sp.sympify(part.expr).xreplace(subs))}
            for part in layer_tensors(sw)]


def residuals(spec: StepSpec, mesh) -> dict:
    """jax's saved residuals of one layer (activations per micro batch) vs the profile's per-layer tensors, traced at
    b = TRACE_BATCH (so batch-dependent tensors are told apart from loop-invariant ones) and d = t = c = 1."""
    listed = _saved(spec, mesh)
    acts = [r for r in listed if r["activation"]]
    tensors = _profile_tensors(spec)
    return {"trace_shape": f"b={TRACE_BATCH}, s={spec.train.s}, d=t=c=1", "jax": listed,
            "jax_count": len(acts), "jax_bytes": sum(r["bytes"] for r in acts),
            "symbolic": tensors, "symbolic_count": sum(t["count"] for t in tensors),
            "symbolic_bytes": sum(t["bytes"] for t in tensors)}


def explain(spec: StepSpec, mesh, xla: dict) -> dict:
    """The "explain" object of `mem4d verify --json --explain`."""
    return {"variants": variants(spec, mesh, xla["temp_bytes"]), "residuals": residuals(spec, mesh)}
