"""The tiny MoE models tests/test_jax_moe.py steps and what it steps them against: the shapes (all sizes distinct,
each a routing or layout of a published family), the dense reference (every expert on every token, weighted by the
router's renormalised top-k weights) computed once per shape, and one compiled step on the reference's parameters."""

import jax
import jax.numpy as jnp
import numpy as np
import optax

from conftest import quick, restack, skip_if_not_enough_devices, unsharded_reference
from tiny_shapes import tiny

from symbolic.config.shapes import ModelShape
from symbolic.config.training import Training


# all sizes distinct; E / e, f_e / t, f_s / t whole for e in {1, 2, 4}, t = 2
SHAPE = tiny("test-moe", L=4, E=8, k_e=2, f_e=48, f_s=80, shared_gate=True)
# dense first, with DeepSeek-V3's routing: sigmoid scores, experts chosen by score + the score-correction bias within
# a token's best group of two (the other shapes route by softmax over all experts)
MIXED = tiny(
    "test-moe-mixed", L=4, E=8, k_e=2, f_e=48, dense_layers=(0,), sigmoid=True, expert_bias=True, groups=2, group_topk=1
)
# SHAPE with gpt-oss's biases: Q/K/V and output biases, attention sinks, the router's bias and the experts' gate, up
# and down biases (its shared experts kept, to keep their coverage in one compile)
GPT_OSS = ModelShape(
    **{**SHAPE.as_dict(), "name": "test-moe-gpt-oss", "qkv_bias": True, "o_bias": True, "sinks": True, "moe_bias": True}
)
# DeepSeek-V3's multi-token prediction: MIXED with one module (its layer an MoE layer, as the last layer is), and
# SHAPE with two (each module's input the previous one's output), for the parameter counts; the step's equivalence
# runs STAGED_MTP below, both at once
MIXED_MTP = ModelShape(**{**MIXED.as_dict(), "name": "test-moe-mixed-mtp", "mtp": 1})
SHAPE_MTP = ModelShape(**{**SHAPE.as_dict(), "name": "test-moe-mtp", "mtp": 2})
# a dense layer first in each of two stages (layers 0 and 2): at p = 2 one program whose every stage runs its dense
# layer, then its MoE layer (the program jaxcheck.stages compiles per stage kind of a dense-first model at p > 1)
STAGED = ModelShape(**{**MIXED.as_dict(), "name": "test-moe-staged", "dense_layers": (0, 2)})
# STAGED with two MTP modules: in one compile what SHAPE_MTP (two modules on the last stage, lookups over context) and
# MIXED_MTP (two stacks, no shared experts, sigmoid + bias, groups, tokens by all-to-all) each took a compile and a
# reference of their own for (45 of the suite's worker-seconds, 22 now, 2026-12-07); shared experts and softmax
# routing, which SHAPE_MTP's modules also ran, are the same MoE layer as the GPT_OSS cases' blocks
STAGED_MTP = ModelShape(**{**STAGED.as_dict(), "name": "test-moe-staged-mtp", "mtp": 2})
SEQ, GBS = 16, 4
NO_DROP = SHAPE.E / SHAPE.k_e  # C_f = E / k_e: capacity C = T, no assignment is ever dropped


def moe_spec(shape, d, e, p, t, t_e, c, zero=1, recompute="selective", C_f=NO_DROP, dtype="float32", checked=True):
    from jaxcheck.spec import JaxOptions, StepSpec

    train = Training(
        d=d, t=t, p=p, c=c, s=SEQ, b=1, gbs=GBS, zero=zero, recompute=recompute, ep=e, etp=t_e, moe_capacity=C_f
    )
    spec = StepSpec(shape, train, JaxOptions(compute_dtype=dtype, learning_rate=1e-2))
    return spec.check() if checked else spec


def dense_routed(
    x_BxSxH, experts_BxSxK, weights_BxSxK, gate, up, down, act=None, expert=None, C_f=None, expert_tp=None, biases=None
):
    """Every expert on every token, weighted by its router weight (zero where not chosen): [b, s, h]; with gpt-oss's
    biases (gate [E, f_e], up [E, f_e], down [E, h]) added to each expert's projections."""
    zero = lambda n: jnp.zeros((gate.shape[0], n), x_BxSxH.dtype)  # noqa: E731
    gate_b, up_b, down_b = (
        biases if biases is not None else (zero(gate.shape[2]), zero(gate.shape[2]), zero(gate.shape[1]))
    )
    w_BxSxE = jnp.sum(jax.nn.one_hot(experts_BxSxK, gate.shape[0]) * weights_BxSxK[..., None], axis=-2)
    g = jnp.einsum("bsh,ehf->bsef", x_BxSxH, gate) + gate_b
    u = jnp.einsum("bsh,ehf->bsef", x_BxSxH, up) + up_b
    y = jnp.einsum("bsef,efh->bseh", jax.nn.silu(g) * u, down) + down_b
    return jnp.einsum("bseh,bse->bsh", y, w_BxSxE.astype(y.dtype))


_REFERENCES: dict = {}


def moe_reference(shape):
    """Host params ([1, n] stacks), a fixed batch [GBS, s], and the dense reference's loss and grads (once per shape)."""
    if shape.name not in _REFERENCES:
        # unchecked: at p = 1 a model of dense layers between MoE ones is one jaxcheck refuses to compile
        _REFERENCES[shape.name] = unsharded_reference(
            moe_spec(shape, 1, 1, 1, 1, 1, 1, checked=False), GBS, dense_routed
        )
    return _REFERENCES[shape.name]


def assert_tree_close(tree, ref, rtol, atol, what):
    for path, x in jax.tree_util.tree_leaves_with_path(tree):
        r = ref
        for key in path:
            r = r[key.key]
        np.testing.assert_allclose(
            np.asarray(x), np.asarray(r), rtol=rtol, atol=atol, err_msg=what + jax.tree_util.keystr(path)
        )


def adamw_of(spec):
    """(grads, state, params) -> AdamW's new params: the step's optimizer, unsharded."""
    from jaxcheck.step import make_optimizer

    opt = make_optimizer(spec)
    return lambda g, s, w: optax.apply_updates(w, opt.update(g, s, w)[0])


def moe_step(spec):
    """One compiled step (QUICK_CPU) on the reference's params, fresh AdamW state and batch: the host state and
    (loss, grads, new params), the reference and the compiled executable with its report."""
    from jaxcheck.compile import QUICK_CPU, compile_step
    from jaxcheck.mesh import make_mesh
    from jaxcheck.step import make_optimizer

    skip_if_not_enough_devices(spec.train.world)
    params0, tokens, targets, ref_loss, ref_grads = ref = moe_reference(spec.shape)
    options = QUICK_CPU if jax.default_backend() == "cpu" else None
    report, step, built = compile_step(spec, make_mesh(spec.train), with_grads=True, compiler_options=options)
    assert sum(report.arguments.values()) == report.xla["argument_bytes"]
    host = restack(params0, spec.shape, spec.train.p)
    opt = jax.tree.map(np.asarray, quick(make_optimizer(spec).init, host)(host))
    m = spec.train.m
    batch = {"tokens": tokens.reshape(m, -1, SEQ), "targets": targets.reshape(m, -1, SEQ)}
    args = [jax.device_put(x, built.shardings[g]) for x, g in ((host, "params"), (opt, "optimizer"), (batch, "batch"))]
    new, _, loss, grads = step(*args)
    return (host, opt), (float(loss), grads, new), ref, (step, report)
