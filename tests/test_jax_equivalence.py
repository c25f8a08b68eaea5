"""Sharded train step == unsharded single-device reference, for every (dp, pp, tp, cp) in {1, 2}^4; loss falls.
Every test runs the default 1F1B schedule but test_gpipe_matches_reference (GPipe, each ZeRO stage and remat policy).

Source of truth: a direct forward of the same flax modules on one device over the whole batch at once (no pipeline, no
micro batches, no remat, no sharding, unfused softmax attention over the whole [s, s] score matrix instead of the
sharded step's flash attention), differentiated by jax.grad. Compute runs in fp32 here so the comparison is tight:
loss to rtol 1e-5, every gradient leaf to atol 2e-6 + rtol 1e-3 (reduction order differs across shardings).
"""

import itertools

import jax
import numpy as np
import optax
import pytest

from conftest import quick, skip_if_not_enough_devices, unsharded_reference
from tiny_shapes import tiny

from symbolic.config.training import Training

SHAPE = tiny("test", L=4)  # all sizes distinct, each divisible by 2
SEQ, MBS, GBS = 16, 1, 4


def _spec(d, p, t, c, recompute="selective", sp=True, flash_attn=True, zero=1, schedule="1f1b", **opts):
    from jaxcheck.spec import JaxOptions, StepSpec

    layout = dict(zero=zero, recompute=recompute, sp=sp, flash_attn=flash_attn, schedule=schedule)
    train = Training(d=d, t=t, p=p, c=c, s=SEQ, b=MBS, gbs=GBS, **layout)
    return StepSpec(SHAPE, train, JaxOptions(compute_dtype="float32", learning_rate=1e-2, **opts)).check()


@pytest.fixture(scope="module")
def reference():
    """Host params in the unstacked [1, L] layout, a fixed batch [GBS, s], and the single-device loss and grads."""
    return unsharded_reference(_spec(1, 1, 1, 1, flash_attn=False), GBS)


_STATES: dict = {}


def _host_state(reference, spec) -> tuple:
    """Host params restacked for the spec's p stages and their fresh AdamW state (numpy), made once per (p, options):
    an optimizer init runs op by op."""
    from jaxcheck.step import make_optimizer

    key = (spec.train.p, spec.opts)
    if key not in _STATES:
        params = _restack(reference[0], spec.train.p)
        init = quick(make_optimizer(spec).init, params)
        _STATES[key] = params, jax.tree.map(np.asarray, init(params))
    return _STATES[key]


def _restack(tree: dict, p: int) -> dict:
    """[1, L, ...] block leaves -> [p, L/p, ...] (stage i holds layers i*L/p ...)."""
    out = dict(tree)
    out["blocks"] = jax.tree.map(lambda w: w.reshape((p, SHAPE.L // p) + w.shape[2:]), tree["blocks"])
    return out


# the half of the 2^4 meshes with an even number of axes at 2: every pair of axes meets in all four size pairs (a
# resolution-IV fraction), 8 compiles instead of 16; single axes at 2 run in the ZeRO tests below. Each mesh also
# carries one variant of what the step can do, so that every variant is compiled once, beside a mesh, and no compile is
# spent on the default alone: the remat policies, sequence parallelism off (t = 2), XLA attention over the whole score
# matrix (flash_attn off), and flash attention over several key blocks (s = 16 in blocks of 4 or 8; with queries split
# over context, keys gathered). The full 16-device mesh keeps the defaults (selective, sp, one key block); the bf16 test
# below runs it too.
MESHES = {  # (d, p, t, c): the variant, as _spec's keywords (block: jaxcheck.model.attention.FLASH_BLOCK)
    (1, 1, 1, 1): {"block": 4},
    (1, 1, 2, 2): {"block": 8},
    (1, 2, 1, 2): {"recompute": "none", "block": 4},
    (1, 2, 2, 1): {"recompute": "full"},
    (2, 1, 1, 2): {"recompute": "full", "block": 4},
    (2, 1, 2, 1): {"sp": False},
    (2, 2, 1, 1): {"flash_attn": False},
    (2, 2, 2, 2): {},
}
assert sorted(MESHES) == [x for x in itertools.product((1, 2), repeat=4) if x.count(2) % 2 == 0]


@pytest.mark.parametrize(
    "mesh",
    list(MESHES),
    ids=["-".join(map(str, m)) + "".join(f"-{k}={v}" for k, v in MESHES[m].items()) for m in MESHES],
)
def test_step_matches_reference_and_loss_falls(reference, monkeypatch, mesh):
    """Each mesh with its variant: loss and gradients as the reference, loss falling over 5 steps."""
    import jaxcheck.model.attention

    variant = dict(MESHES[mesh])
    if "block" in variant:
        monkeypatch.setattr(jaxcheck.model.attention, "FLASH_BLOCK", variant.pop("block"))
    _check_against_reference(reference, _spec(*mesh, **variant))


@pytest.mark.parametrize("zero,d,p,t,c", [(2, 2, 2, 2, 2), (2, 1, 2, 1, 2), (3, 2, 2, 2, 2), (3, 2, 1, 1, 1)])
def test_zero_2_and_3_match_reference(reference, zero, d, p, t, c):
    """Gradients sharded over data x context (ZeRO-2: each layer's reduce-scattered into the accumulator, the update
    on shards, each layer gathered back), and the parameters too (ZeRO-3: all-gathered one layer at a time): loss
    and gradients as the reference, and the updated parameters AdamW's of those gradients."""
    _check_against_reference(reference, _spec(d, p, t, c, zero=zero), check_update=True)


@pytest.mark.parametrize("d,p,t,c", [(1, 4, 1, 1), (2, 4, 2, 1)])
def test_deep_1f1b_pipelines_match_reference(reference, d, p, t, c):
    """1F1B with one layer per stage: m = p = 4 (stage 0's ring full, the last stage's one slot reused every tick)
    and m = 2 < p = 4 (fewer micro batches than stages)."""
    _check_against_reference(reference, _spec(d, p, t, c))


@pytest.mark.parametrize(
    "zero,recompute,d,p,t,c", [(1, "selective", 2, 2, 2, 2), (3, "full", 1, 2, 1, 2), (2, "none", 2, 2, 1, 1)]
)
def test_gpipe_matches_reference(reference, zero, recompute, d, p, t, c):
    """--schedule gpipe (every forward, then every backward) under ZeRO-1, 2 and 3 and each remat policy."""
    _check_against_reference(
        reference, _spec(d, p, t, c, zero=zero, recompute=recompute, schedule="gpipe"), check_update=zero >= 2
    )


def _check_against_reference(reference, spec, check_update=False):
    """One step's loss and grads vs the reference; loss falls over 5 AdamW steps; stages shift by collective-permute.
    check_update: the first step's new parameters vs optax AdamW on one device, unsharded, applied to the step's own
    gradients (those just checked against the reference; AdamW's first step is about lr * sign(g), so the reference's
    gradients would flip it where g is rounding noise): atol 1e-6, rtol 1e-5."""
    from jaxcheck.compile import QUICK_CPU, compile_step
    from jaxcheck.mesh import make_mesh

    skip_if_not_enough_devices(spec.train.world)
    p = spec.train.p
    _, tokens, targets, ref_loss, ref_grads = reference
    report, step, built = compile_step(
        spec,
        make_mesh(spec.train),
        with_grads=True,
        compiler_options=QUICK_CPU if jax.default_backend() == "cpu" else None,
    )
    assert sum(report.arguments.values()) == report.xla["argument_bytes"]
    host_params, host_opt_state = _host_state(reference, spec)
    params = jax.device_put(host_params, built.shardings["params"])
    opt_state = jax.device_put(host_opt_state, built.shardings["optimizer"])
    m = spec.train.m
    batch = jax.device_put(
        {"tokens": tokens.reshape(m, -1, SEQ), "targets": targets.reshape(m, -1, SEQ)}, built.shardings["batch"]
    )
    ref_grads = _restack(ref_grads, p)
    losses = []
    for i in range(5):
        params, opt_state, loss, grads = step(params, opt_state, batch)
        losses.append(float(loss))
        if i == 0 and check_update:
            _check_update(spec, host_params, host_opt_state, grads, params)
        if i == 0:
            assert losses[0] == pytest.approx(ref_loss, rel=1e-5)
            for path, g in jax.tree_util.tree_leaves_with_path(grads):
                ref = ref_grads
                for key in path:
                    ref = ref[key.key]
                np.testing.assert_allclose(np.asarray(g), ref, rtol=1e-3, atol=2e-6, err_msg=jax.tree_util.keystr(path))
    assert all(b < a for a, b in zip(losses, losses[1:])), losses
    if p > 1:  # the stage shift is a collective-permute, not an all-gather of the weights
        assert "collective-permute" in step.as_text()


def _check_update(spec, host_params, host_opt_state, grads, params):
    """The step's new parameters == optax AdamW (one device, unsharded) of its gradients from the same state."""
    from jaxcheck.step import make_optimizer

    opt = make_optimizer(spec)
    grads = jax.tree.map(np.asarray, grads)
    update = lambda g, s, w: optax.apply_updates(w, opt.update(g, s, w)[0])
    expected = quick(update, grads, host_opt_state, host_params)(grads, host_opt_state, host_params)
    for path, w in jax.tree_util.tree_leaves_with_path(params):
        ref = expected
        for key in path:
            ref = ref[key.key]
        np.testing.assert_allclose(
            np.asarray(w), np.asarray(ref), rtol=1e-5, atol=1e-6, err_msg="updated " + jax.tree_util.keystr(path)
        )


def test_bf16_compute_close_to_fp32_reference(reference):
    """Default precision (fp32 params, bf16 compute) on the full 16-device mesh vs the fp32 single-device reference.

    Tolerance from bf16's 8-bit mantissa: loss within rel 1e-2, each gradient leaf within 5e-2 relative L2 error.
    """
    from jaxcheck.compile import QUICK_CPU, compile_step
    from jaxcheck.mesh import make_mesh
    from jaxcheck.spec import JaxOptions, StepSpec

    skip_if_not_enough_devices(16)
    _, tokens, targets, ref_loss, ref_grads = reference
    train = _spec(2, 2, 2, 2).train
    spec = StepSpec(SHAPE, train, JaxOptions(compute_dtype="bfloat16")).check()
    options = QUICK_CPU if jax.default_backend() == "cpu" else None
    _, step, built = compile_step(spec, make_mesh(train), with_grads=True, compiler_options=options)
    host_params, host_opt_state = _host_state(reference, spec)
    params = jax.device_put(host_params, built.shardings["params"])
    opt_state = jax.device_put(host_opt_state, built.shardings["optimizer"])
    batch = jax.device_put(
        {"tokens": tokens.reshape(train.m, -1, SEQ), "targets": targets.reshape(train.m, -1, SEQ)},
        built.shardings["batch"],
    )
    _, _, loss, grads = step(params, opt_state, batch)
    assert float(loss) == pytest.approx(ref_loss, rel=1e-2)
    ref_grads = _restack(ref_grads, 2)
    for path, g in jax.tree_util.tree_leaves_with_path(grads):
        ref = ref_grads
        for key in path:
            ref = ref[key.key]
        err = np.linalg.norm(np.asarray(g) - ref) / np.linalg.norm(ref)
        assert err < 5e-2, (jax.tree_util.keystr(path), err)
