"""The flax CausalLM itself on one device: causality, shapes and dtypes of the buffers the docstrings describe.

Source of truth: the definition of a causal LM (the output at position i depends on no token after i: exact zeros).
"""

import jax
import jax.numpy as jnp
import numpy as np
from conftest import quick, quick_model
from tiny_shapes import tiny

from symbolic.config.training import Training

SHAPE = tiny("test", L=2)


def _model(**opts):
    from jaxcheck.mesh import make_mesh
    from jaxcheck.spec import JaxOptions, StepSpec

    train = Training(s=16, b=2, gbs=2)
    spec = StepSpec(SHAPE, train, JaxOptions(**opts)).check()
    return quick_model(spec), make_mesh(train)


def test_causal_gradients_after_position_are_exactly_zero():
    model, mesh = _model(compute_dtype="float32")
    i = 6

    def out_at_i(x_BxSxH):
        for layer in range(SHAPE.L):
            x_BxSxH = jax.tree.map(lambda w: w[0, layer], model.blocks)(x_BxSxH)
        return model.logits(x_BxSxH)[:, i].sum()

    x = model.embed_tokens(jnp.arange(32, dtype=jnp.int32).reshape(2, 16) % SHAPE.v)
    with jax.set_mesh(mesh):
        g = np.asarray(quick(jax.grad(out_at_i), x)(x))
    assert np.all(g[:, i + 1 :] == 0.0)
    assert np.all(np.abs(g[:, : i + 1]).sum(axis=-1) > 0)


def test_dtypes_fp32_params_bf16_activations_fp32_logits():
    model, mesh = _model()
    assert model.blocks.attn.wq[...].dtype == jnp.float32
    assert model.blocks.attn.wq[...].shape == (1, SHAPE.L, SHAPE.h, SHAPE.a, SHAPE.dh)
    x = model.embed_tokens(jnp.zeros((2, 16), jnp.int32))
    assert x.dtype == jnp.bfloat16
    with jax.set_mesh(mesh):
        assert model.logits(x).dtype == jnp.float32
        assert model.logits(x).shape == (2, 16, SHAPE.v)
