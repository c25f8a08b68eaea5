"""Multi-head latent attention in jaxcheck (jaxcheck.model.mla): parameter counts and layouts, the sharded step against
an unsharded reference (dense and MoE), flash attention with values narrower than the query/key heads.

Sources of truth: ModelShape.param_count / attention_count (the closed form from Megatron-Core's MLASelfAttention
layout) for the parameters; for the step, the same flax modules run directly on one device over the whole batch (no
pipeline, micro batches, remat or sharding; unfused softmax attention over the whole [s, s] scores; routed experts
computed densely, as tests/test_jax_moe.py's reference), differentiated by jax.grad in fp32: loss to rtol 1e-5,
every gradient leaf to atol 2e-6 + rtol 1e-3 (reduction order differs across shardings), as
tests/test_jax_equivalence.py; for flash attention, the unfused path of jaxcheck.model.attention: outputs and
gradients to 1e-5 of their largest magnitude (fp32; only the summation order differs).
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from conftest import quick, restack, skip_if_not_enough_devices, unsharded_reference
from symbolic.config.shapes import ModelShape
from symbolic.config.training import Training
from moe_step import dense_routed

# all sizes distinct (dh + d_r = 20, dh + d_v = 22, kv_r + d_r = 36 too); a = k = 4 heads and L = 6 over t, p = 2
MLA = dict(h=64, f=176, a=4, k=4, L=6, v=136, head_dim=12, kv_lora=28, rope_dim=8, v_dim=10)
SHAPE = ModelShape("test-mla", q_lora=24, **MLA)
NO_Q_LORA = ModelShape("test-mla-q0", **MLA)  # a plain query projection [h, a, dh + d_r] (DeepSeek-V2-Lite)
# DeepSeek-V2-Lite's kind: a plain query projection and routed experts (4, top 2, one shared expert of width 80)
MOE = ModelShape("test-mla-moe", **MLA, E=4, k_e=2, f_e=48, f_s=80)
SEQ, GBS = 16, 4


def _spec(shape, d, p, t, c, recompute="selective", e=1, flash_attn=True):
    from jaxcheck.spec import JaxOptions, StepSpec

    capacity = {"moe_capacity": shape.E / shape.k_e} if shape.moe else {}  # C = T: no assignment is dropped
    train = Training(
        d=d, t=t, p=p, c=c, s=SEQ, b=1, gbs=GBS, zero=1, recompute=recompute, ep=e, flash_attn=flash_attn, **capacity
    )
    return StepSpec(shape, train, JaxOptions(compute_dtype="float32", learning_rate=1e-2)).check()


@pytest.mark.parametrize("shape", [SHAPE, NO_Q_LORA, MOE], ids=lambda s: s.name)
def test_param_count_and_tensor_layout(shape):
    """The abstract model has ModelShape.param_count parameters, its attention attention_count; at d1 p2 t2 c2 the
    down-projections and latent norms are whole on every tensor rank, the up- and output projections split over t."""
    from jaxcheck.mesh import make_mesh
    from jaxcheck.state import build, param_count

    spec = _spec(shape, 1, 2, 2, 2)
    skip_if_not_enough_devices(spec.train.world)
    built = build(spec, make_mesh(spec.train))
    assert param_count(built) == shape.param_count
    attn = built.abstract["params"]["blocks"]["attn"]
    assert sum(math.prod(x.shape) for x in jax.tree.leaves(attn)) == shape.L * shape.attention_count
    share = lambda x: math.prod(x.sharding.shard_shape(x.shape)) / math.prod(x.shape)  # noqa: E731
    whole = ["wkv_a", "kv_norm"] + (["wq_a", "q_norm"] if shape.q_lora else [])
    split = ["wkv_b", "wo", "wq_b" if shape.q_lora else "wq"]
    assert {name: share(jax.tree.leaves(attn[name])[0]) for name in whole + split} == {
        **{name: 1 / 2 for name in whole},
        **{name: 1 / 4 for name in split},
    }  # p = 2 stages; t = 2 as well


_REFERENCES: dict = {}


def _reference(shape):
    """Host params ([1, n] stacks), a fixed batch [GBS, s], and the single-device loss and grads (once per shape)."""
    if shape.name not in _REFERENCES:
        _REFERENCES[shape.name] = unsharded_reference(_spec(shape, 1, 1, 1, 1, flash_attn=False), GBS, dense_routed)
    return _REFERENCES[shape.name]


CASES = [  # (d, p, t, c), remat: selective with d, t and with p, c at 2; full and none with three axes at 2
    ((2, 1, 2, 1), "selective"),
    ((1, 2, 1, 2), "selective"),
    ((1, 2, 2, 2), "full"),
    ((2, 2, 1, 2), "none"),
]


@pytest.mark.parametrize("mesh,remat", CASES, ids=[f"d{m[0]}p{m[1]}t{m[2]}c{m[3]}-{r}" for m, r in CASES])
def test_step_matches_reference_and_loss_falls(mesh, remat):
    """One step's loss and every gradient leaf as the reference; the loss falls over three AdamW steps."""
    _check(_spec(SHAPE, *mesh, recompute=remat))


def test_moe_step_matches_reference():
    """MLA without a query latent and with routed experts at d2 e2 t2 (selective): the tokens travel by
    all-to-all."""
    step = _check(_spec(MOE, 2, 1, 2, 1, e=2))
    assert "all-to-all" in step.as_text()


def _check(spec):
    from jaxcheck.compile import QUICK_CPU, compile_step
    from jaxcheck.mesh import make_mesh
    from jaxcheck.step import make_optimizer

    skip_if_not_enough_devices(spec.train.world)
    params0, tokens, targets, ref_loss, ref_grads = _reference(spec.shape)
    options = QUICK_CPU if jax.default_backend() == "cpu" else None
    _, step, built = compile_step(spec, make_mesh(spec.train), with_grads=True, compiler_options=options)
    host = restack(params0, spec.shape, spec.train.p)
    opt = jax.tree.map(np.asarray, quick(make_optimizer(spec).init, host)(host))
    m = spec.train.m
    batch = {"tokens": tokens.reshape(m, -1, SEQ), "targets": targets.reshape(m, -1, SEQ)}
    params, opt, batch = (
        jax.device_put(x, built.shardings[g]) for x, g in ((host, "params"), (opt, "optimizer"), (batch, "batch"))
    )
    params, opt, loss, grads = step(params, opt, batch)
    assert float(loss) == pytest.approx(ref_loss, rel=1e-5)
    want = restack(ref_grads, spec.shape, spec.train.p)
    for path, g in jax.tree_util.tree_leaves_with_path(grads):
        ref = want
        for key in path:
            ref = ref[key.key]
        np.testing.assert_allclose(np.asarray(g), ref, rtol=1e-3, atol=2e-6, err_msg=jax.tree_util.keystr(path))
    losses = [float(loss)]
    for _ in range(2):
        params, opt, loss, _ = step(params, opt, batch)
        losses.append(float(loss))
    assert losses[2] < losses[1] < losses[0], losses
    return step


B, A, KH, D, D_V = 2, 4, 2, 20, 10  # GQA groups of 2 heads: the value width apart from the grouping


@pytest.mark.parametrize("block", [4, 16])
def test_flash_matches_unfused_with_narrower_values(block):
    """Flash attention (key blocks of 4: several per sequence; 16: one) == the unfused path, q, k [.., 20] and
    v [.., 10] wide: output [b, s, a, d_v] and the gradients of q, k and v."""
    from jaxcheck.mesh import make_mesh
    from jaxcheck.model.attention import allgather_attention
    from jaxcheck.model.flash import flash_attention

    keys = jax.random.split(jax.random.key(0), 4)
    q, k = jax.random.normal(keys[0], (B, SEQ, A, D)), jax.random.normal(keys[1], (B, SEQ, KH, D))
    v, w = jax.random.normal(keys[2], (B, SEQ, KH, D_V)), jax.random.normal(keys[3], (B, SEQ, A, D_V))

    def both(q, k, v):
        unfused = lambda *x: allgather_attention(*x, flash=False)  # noqa: E731
        flash = lambda *x: flash_attention(*x, None, block)  # noqa: E731
        return [(f(q, k, v), jax.grad(lambda *x: jnp.sum(f(*x) * w), (0, 1, 2))(q, k, v)) for f in (flash, unfused)]

    with jax.set_mesh(make_mesh(Training(s=SEQ))):
        (out, grads), (want, want_grads) = quick(both, q, k, v)(q, k, v)
    assert out.shape == (B, SEQ, A, D_V)
    for got, exp in zip((out, *grads), (want, *want_grads)):
        assert float(jnp.max(jnp.abs(got - exp))) <= 1e-5 * float(jnp.max(jnp.abs(exp)))


@pytest.mark.parametrize("shape", [SHAPE, NO_Q_LORA], ids=lambda s: s.name)
@pytest.mark.parametrize("recompute,flash_attn", [("none", True), ("selective", True), ("full", True), ("none", False)])
def test_saved_residuals_match_the_profile_tensor_list(shape, recompute, flash_attn):
    """The residuals the pipeline stacks for one MLA layer (jaxcheck.model.pipeline.layer_residuals) == the jax
    profile's per-layer tensors (symbolic.recipes.jax.tensors: the latents' norm residuals, q and k dh + d_r wide,
    v and the output d_v), in count and bytes."""
    from jaxcheck.crosscheck.explain import residuals
    from jaxcheck.mesh import make_mesh
    from jaxcheck.spec import StepSpec

    train = Training(s=64, gbs=1, recompute=recompute, zero=0, flash_attn=flash_attn)
    res = residuals(StepSpec(shape, train).check(), make_mesh(train))
    assert (res["jax_count"], res["jax_bytes"]) == (res["symbolic_count"], res["symbolic_bytes"])
