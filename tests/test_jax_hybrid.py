"""Gated DeltaNet hybrids (Qwen3-Next, Qwen3.5) in jaxcheck's model: the chunked gated delta rule == the rule token
by token; the sharded 1F1B step == the unsharded single-device reference; and the traced residuals of both layer
kinds (a Gated DeltaNet layer, a gated-attention layer) == the jax profile's per-layer lists.

Sources of truth: jaxcheck.model.gdn.recurrent_rule (fla's recurrent reference, token by token), values and jax.grad
of both to atol 1e-5 in fp32; conftest's unsharded_reference (a direct forward of the same flax modules on one device
over the whole batch, in model order, differentiated by jax.grad, fp32): loss to rtol 1e-5, every gradient leaf to
atol + rtol 1e-3 with atol 2e-3 of the leaf's largest |gradient| (at least 2e-6): the rule's triangular solves and
l2norms carry the fp32 rounding of the sharded step's other reduction order to 5.4e-4 of a leaf's largest gradient
(Wq of the Gated DeltaNet layers, measured at p 2 t 2 d 2; an attention leaf's to 1e-4; a layer run out of order is
off by its whole size); and jax's own list of saved residuals (count and bytes, exact).
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from conftest import assert_step_matches, skip_if_not_enough_devices, unsharded_reference
from tiny_shapes import GATED, GDN, tiny

from symbolic.config.shapes import ModelShape
from symbolic.config.training import Training

# Qwen3.5's pattern, three Gated DeltaNet layers to one gated-attention layer, twice: every stage of p = 2 holds
# one period, Gated DeltaNet layers first, as jaxcheck stacks them; n_gv = 2 n_gk (the queries and keys repeated),
# value heads wider than key heads, per-head q/k norms. The MoE shape's step is not compiled against the reference here
# (its MoE layers are tests/test_jax_moe.py's, its Gated DeltaNet layers this dense shape's): its residual lists are
# checked below, and its steps compile in grids/derive-hybrid.toml and grids/holdout-hybrid.toml
# (and Qwen3-Next's attention biases, the gate's bg among them)
HYBRID = tiny("hybrid-test", L=8, **GATED, qkv_bias=True, o_bias=True, **GDN, lin_v_heads=4, lin_v_dim=24)
# Qwen3.5-MoE's and Qwen3-Next's: experts with a gated shared expert in every layer, n_gv = n_gk, attention biases
MOE = {"E": 4, "k_e": 2, "f_e": 32, "f_s": 48, "shared_gate": True}
HYBRID_MOE = dataclasses.replace(
    HYBRID, name="hybrid-moe-test", f=48, L=4, linear_layers=(0, 1, 2), lin_k_heads=4, **MOE
)
# the sharded step against the reference: half as deep, one Gated DeltaNet and one attention layer a stage at p = 2
# (the stacking is the same; it halves the two compiles' seconds)
HYBRID_STEP = dataclasses.replace(HYBRID, name="hybrid-step-test", L=4, linear_layers=(0, 2))
SAVED = {  # residuals per layer kind and remat policy (Gated DeltaNet layer, gated-attention layer)
    "hybrid": {"none": (39, 33), "selective": (15, 13), "full": (1, 1)},
    "hybrid-moe": {"none": (63, 57), "selective": (29, 27), "full": (1, 1)},
}
SEQ, GBS = 128, 4
# the sharded step's sequence: one chunk of the rule (GDN_CHUNK = 64). What the step test checks, each weight, tap and
# head of both mixers in its shard, does not depend on the number of chunks (t splits heads, never the sequence, and
# a chunk's carried state is a head's); the rule over several chunks, values and gradients, is
# test_chunked_rule_matches_the_recurrence's (s 128 and 48). The reference and the step: 42.6 worker CPU-seconds at
# s 128, 27.8 at 64 (2026-12-07)
STEP_SEQ = 64


def test_chunked_rule_matches_the_recurrence():
    """Two chunks of 64 and a shorter sequence (one chunk of s), with n heads, d_gk != d_gv and a strong decay."""
    from jaxcheck.model.gdn import gated_delta_rule, recurrent_rule

    for s in (128, 48):
        keys = jax.random.split(jax.random.key(0), 6)
        unit = lambda x: x / jnp.linalg.norm(x, axis=-1, keepdims=True)  # noqa: E731  (l2-normed, as the layer's)
        q, k = unit(jax.random.normal(keys[0], (2, s, 3, 16))), unit(jax.random.normal(keys[1], (2, s, 3, 16)))
        v = jax.random.normal(keys[2], (2, s, 3, 8))
        g = -jax.nn.softplus(jax.random.normal(keys[3], (2, s, 3)))
        beta = jax.nn.sigmoid(jax.random.normal(keys[4], (2, s, 3)))
        w = jax.random.normal(keys[5], (2, s, 3, 8))
        args = (q, k, v, g, beta)
        np.testing.assert_allclose(jax.jit(gated_delta_rule)(*args), jax.jit(recurrent_rule)(*args), atol=1e-5)
        chunked = jax.jit(jax.grad(lambda *x: jnp.sum(gated_delta_rule(*x) * w), argnums=range(5)))(*args)
        direct = jax.jit(jax.grad(lambda *x: jnp.sum(recurrent_rule(*x) * w), argnums=range(5)))(*args)
        for got, want in zip(chunked, direct):
            np.testing.assert_allclose(got, want, atol=1e-5)


def _spec(d, p, t, recompute="none", zero=1, shape=HYBRID):
    from jaxcheck.spec import JaxOptions, StepSpec

    train = Training(d=d, t=t, p=p, s=STEP_SEQ, b=1, gbs=GBS, zero=zero, recompute=recompute)
    return StepSpec(shape, train, JaxOptions(compute_dtype="float32", learning_rate=1e-2)).check()


@pytest.fixture(scope="module")
def reference():
    return HYBRID_STEP, unsharded_reference(_spec(1, 1, 1, shape=HYBRID_STEP), GBS)


def test_hybrid_step_matches_reference(reference):
    """Heads of both mixers over t, the Gated DeltaNet's weights, taps and dt_bias/A_log split with their heads, its
    norm scale replicated, the attention's biases (the gate's too); p 2 t 2 d 2 ZeRO-3, each stage a Gated DeltaNet
    layer and an attention layer."""
    shape, ref = reference
    host = ref[0]
    spec = _spec(2, 2, 2, "none", 3, shape)
    skip_if_not_enough_devices(spec.train.world)
    assert {"wq", "wk", "wv", "wz", "wb", "wa", "conv_q", "dt_bias", "A_log", "norm", "wo"} <= set(
        host["linear_blocks"]["attn"]
    )
    assert "wg" in host["blocks"]["attn"] and shape.qkv_bias == ("bg" in host["blocks"]["attn"])
    assert_step_matches(spec, ref, STEP_SEQ, atol=lambda want: max(2e-6, 2e-3 * np.abs(want).max()))


@pytest.mark.parametrize("shape,name", [(HYBRID, "hybrid"), (HYBRID_MOE, "hybrid-moe")], ids=["hybrid", "hybrid-moe"])
@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
def test_hybrid_residuals_match_the_profile_tensor_lists(recompute, shape, name):
    """A Gated DeltaNet layer keeps, under no remat, its norm's, the convolutions' inputs, the l2norms', the decay's
    and beta's intermediates, the rule's five inputs, its output, z and out_proj's input; selective the eight named
    tensors; a gated-attention layer three tensors more than Qwen3's under none (the sigmoid, its derivative, the
    gated output) and two more under selective (the gate and the gated output)."""
    from jaxcheck.crosscheck.explain import residuals
    from jaxcheck.mesh import make_mesh
    from jaxcheck.spec import StepSpec

    train = Training(s=128, gbs=1, recompute=recompute, zero=0)
    spec = StepSpec(shape, train).check()
    for stack, want in zip(("linear_blocks", "blocks"), SAVED[name][recompute]):
        res = residuals(spec, make_mesh(train), stack)
        assert (res["jax_count"], res["jax_bytes"]) == (res["symbolic_count"], res["symbolic_bytes"]), stack
        assert res["jax_count"] == want, stack


@pytest.mark.parametrize(
    "change,rule",
    [
        ({"p": 4}, "holds Gated DeltaNet layers only"),  # stages [G G], [G A]: unequal counts, one program per count
        ({"c": 2}, "Gated DeltaNet: no context parallel"),
        ({"t": 4, "s": 128}, "Gated DeltaNet: n_gk % t"),
        ({"s": 96}, "s % chunk (jax)"),
        ({"p": 2, "schedule": "gpipe"}, "Gated DeltaNet at p > 1: 1F1B (jax)"),
    ],
)
def test_hybrid_layouts_jaxcheck_does_not_build_are_refused_in_one_line(change, rule):
    """Each layout the rule table's jax rows refuse for a hybrid raises that rule, its message one line; unequal
    counts per stage compile one program per count (jaxcheck.stages), which refuses a stage of one kind only."""
    from jaxcheck.spec import StepSpec
    from symbolic.config.errors import BrokenRule, ConfigError

    fields = {"d": 1, "t": 1, "p": 1, "c": 1, "s": SEQ, "b": 1, "gbs": GBS, "zero": 0, **change}
    shape = ModelShape(**{**HYBRID.as_dict(), "a": 8, "k": 4}) if fields["t"] == 4 else HYBRID
    with pytest.raises(ConfigError) as err:
        StepSpec(shape, Training(**fields)).check()
    assert err.value.rule == rule if isinstance(err.value, BrokenRule) else rule in str(err.value)
    assert "\n" not in str(err.value)
