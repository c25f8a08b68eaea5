"""Qwen2's Q/K/V biases, Qwen3's per-head q/k norms, OLMoE's q/k norms over the whole projection and Gemma's layers
(sandwich norms, GeGLU, soft-capped logits and scores) in jaxcheck's model (Llama 4's weightless q/k norms, output and MLP biases and sinks:
tests/test_jax_gpt.py's shape): the sharded 1F1B step == the unsharded single-device reference, and the traced
residuals == the jax profile's per-layer list.

Source of truth: a direct forward of the same flax modules on one device over the whole batch (conftest's
unsharded_reference), differentiated by jax.grad, in fp32: loss to rtol 1e-5, every gradient leaf (the biases and the
norm scales among them) to atol 2e-6 + rtol 1e-3, as tests/test_jax_equivalence.py; and jax's own list of saved
residuals (count and bytes, exact).
"""

import pytest

from conftest import assert_step_matches, skip_if_not_enough_devices, unsharded_reference
from tiny_shapes import tiny

from symbolic.config.training import Training

SHAPE = tiny("qwen-test", L=4, qkv_bias=True, qk_norm="head")
OLMOE = tiny("olmoe-test", L=4, qk_norm="full")  # scales [a dh], [k dh] over t
# Gemma's layers in one shape, Gemma 3's and Gemma 2's together: sandwich norms (post-attention, post-feedforward),
# per-head q/k norms (3), soft-capped logits and scores (2), GeGLU, the lookup scaled by sqrt(h), a head width other
# than h/a, tied embeddings
GEMMA = tiny(
    "gemma-test", L=4, head_dim=24, qk_norm="head", tied=True, sandwich=True, logit_softcap=True, attn_softcap=True
)
SHAPES, IDS = [SHAPE, OLMOE, GEMMA], ["qwen", "olmoe", "gemma"]  # weightless q/k norms, output biases, sinks:
# tests/test_jax_gpt.py
SAVED = {  # residuals one layer keeps per remat policy: Llama's 22 under none, q/k norms 8 more, Gemma's post-norms 8
    # more and GeGLU's GeLU 4 more (and 2 scalars; the capped scores are flash attention's, which keeps none of them);
    # selective: Gemma's two part outputs more
    "qwen": {"none": 30, "selective": 11, "full": 1},
    "olmoe": {"none": 30, "selective": 11, "full": 1},
    "gemma": {"none": 42, "selective": 13, "full": 1},
}
SEQ, GBS = 16, 4


def _spec(d, p, t, c, recompute="selective", zero=1, shape=SHAPE):
    from jaxcheck.spec import JaxOptions, StepSpec

    train = Training(d=d, t=t, p=p, c=c, s=SEQ, b=1, gbs=GBS, zero=zero, recompute=recompute)
    return StepSpec(shape, train, JaxOptions(compute_dtype="float32", learning_rate=1e-2)).check()


@pytest.fixture(scope="module", params=SHAPES, ids=IDS)
def reference(request):
    return request.param, unsharded_reference(_spec(1, 1, 1, 1, shape=request.param), GBS)


@pytest.mark.parametrize("d,p,t,c,recompute,zero", [(1, 2, 2, 2, "none", 3)])
def test_qwen_attention_step_matches_reference(reference, d, p, t, c, recompute, zero):
    """Biases split over t with their heads, per-head norm scales replicated, whole-width norm scales split over t
    (their mean over the heads of every tensor rank), across pipeline stages, context and ZeRO-3 (each parameter
    sharded over d*c too: the strictest layout; one mesh, to keep the suite inside its budget)."""
    shape, ref = reference
    host = ref[0]
    spec = _spec(d, p, t, c, recompute, zero, shape)
    skip_if_not_enough_devices(spec.train.world)
    assert {"q_norm", "k_norm"} <= set(host["blocks"]["attn"])
    assert shape.qkv_bias == ({"bq", "bk", "bv"} <= set(host["blocks"]["attn"]))
    assert shape.sandwich == ({"post_attn_norm", "post_mlp_norm"} <= set(host["blocks"]))
    assert_step_matches(spec, ref, SEQ)


@pytest.mark.parametrize("shape,name", list(zip(SHAPES, IDS)), ids=IDS)
@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
def test_qwen_residuals_match_the_profile_tensor_list(recompute, shape, name):
    """q/k norms keep, under no remat, each norm's fp32 input and output and its rsqrt twice (8 tensors more than
    Llama's 22; the rsqrt per head, or per token over the whole width); biases keep nothing; selective and full as
    Llama's. Gemma's sandwich norms keep as much again for each post-norm, and selective keeps their inputs."""
    from jaxcheck.crosscheck.explain import residuals
    from jaxcheck.mesh import make_mesh
    from jaxcheck.spec import StepSpec

    train = Training(s=64, gbs=1, recompute=recompute, zero=0)
    res = residuals(StepSpec(shape, train).check(), make_mesh(train))
    assert (res["jax_count"], res["jax_bytes"]) == (res["symbolic_count"], res["symbolic_bytes"])
    assert res["jax_count"] == SAVED[name][recompute]
