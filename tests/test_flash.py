"""jaxcheck.model.flash: blockwise causal GQA attention with a custom VJP against plain softmax attention.

Source of truth: softmax(q k^T / sqrt(dh) + causal mask) v written out with an [s, s] score matrix in fp32, and its
jax.grad. Tolerance: outputs and gradients to 1e-5 of their largest magnitude (fp32; only the summation order
differs). Memory: the differentiated flash attention inside a scan (as in jaxcheck's layer scan) has no tensor as large
as one [b, a, s, s] score matrix (neither the scores nor score blocks stacked over the key blocks, which jax's scan
partial evaluation produced from a loop-invariant causal mask before the loops became while loops), while the dense
reference does (the test can tell the two apart).
"""

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from conftest import quick
from jaxcheck.model.flash import flash_attention

B, S, A, K, DH = 2, 64, 8, 2, 16


def dense(q, k, v, cap=None):
    """The reference: materialised [s, s] fp32 scores (soft-capped, cap tanh(x / cap), with a cap), causal mask,
    softmax, P V."""
    b, s, a, dh = q.shape
    q5 = q.reshape(b, s, k.shape[2], a // k.shape[2], dh)
    x = jnp.einsum("bqkgd,bskd->bkgqs", q5, k) / jnp.sqrt(jnp.float32(dh))
    x = x if cap is None else cap * jnp.tanh(x / cap)
    x = jnp.where(jnp.arange(s)[:, None] >= jnp.arange(s)[None, :], x, -jnp.inf)
    return jnp.einsum("bkgqs,bskd->bqkgd", jax.nn.softmax(x, axis=-1), v).reshape(b, s, a, dh)


def _inputs():
    kq, kk, kv, kw = jax.random.split(jax.random.key(0), 4)
    return (
        jax.random.normal(kq, (B, S, A, DH)),
        jax.random.normal(kk, (B, S, K, DH)),
        jax.random.normal(kv, (B, S, K, DH)),
        jax.random.normal(kw, (B, S, A, DH)),
    )


@functools.lru_cache(maxsize=None)
def _dense_reference() -> tuple:
    """dense's output and gradients (one quick program, shared by every block size)."""
    q, k, v, w = _inputs()
    return quick(
        lambda q, k, v: (dense(q, k, v), jax.grad(lambda *x: jnp.sum(dense(*x) * w), (0, 1, 2))(q, k, v)), q, k, v
    )(q, k, v)


@pytest.mark.parametrize("block", [8, 16, 64])
def test_output_and_gradients_match_dense(block):
    q, k, v, w = _inputs()
    flash = lambda q, k, v: jnp.sum(flash_attention(q, k, v, None, block) * w)
    out, grads = quick(
        lambda q, k, v: (flash_attention(q, k, v, None, block), jax.grad(flash, (0, 1, 2))(q, k, v)), q, k, v
    )(q, k, v)
    want, want_grads = _dense_reference()
    assert float(jnp.max(jnp.abs(out - want))) <= 1e-5 * float(jnp.max(jnp.abs(want)))
    for got, exp in zip(grads, want_grads):
        assert float(jnp.max(jnp.abs(got - exp))) <= 1e-5 * float(jnp.max(jnp.abs(exp)))


def test_soft_capped_scores_match_dense():
    """Gemma 2's soft-capped scores (cap 2, small enough that tanh bends most scores of these unit-normal inputs):
    output and gradients equal jax.grad of the capped dense reference, to 1e-5 of their largest magnitude, and differ
    from the uncapped ones."""
    q, k, v, w = _inputs()
    flash = lambda q, k, v: jnp.sum(flash_attention(q, k, v, None, 16, 2.0) * w)  # noqa: E731
    capped = lambda q, k, v: jnp.sum(dense(q, k, v, 2.0) * w)  # noqa: E731
    (out, grads), (want, want_grads) = quick(
        lambda q, k, v: (
            (flash_attention(q, k, v, None, 16, 2.0), jax.grad(flash, (0, 1, 2))(q, k, v)),
            (dense(q, k, v, 2.0), jax.grad(capped, (0, 1, 2))(q, k, v)),
        ),
        q,
        k,
        v,
    )(q, k, v)
    assert float(jnp.max(jnp.abs(out - want))) <= 1e-5 * float(jnp.max(jnp.abs(want)))
    for got, exp in zip(grads, want_grads):
        assert float(jnp.max(jnp.abs(got - exp))) <= 1e-5 * float(jnp.max(jnp.abs(exp)))
    assert float(jnp.max(jnp.abs(out - _dense_reference()[0]))) > 1e-2


def test_first_query_sees_only_the_first_key():
    """Causality across blocks: query 0's output is exactly v[0] (repeated over each KV group's heads)."""
    q, k, v, _ = _inputs()
    out = np.asarray(flash_attention(q, k, v, None, 16))
    np.testing.assert_allclose(out[:, 0], np.repeat(np.asarray(v[:, 0]), A // K, axis=1), rtol=1e-6)


def _largest(fn) -> int:
    """Elements of the largest array in the jaxpr of grad of fn applied in a scan over two 'layers'."""
    q, k, v, w = _inputs()

    def loss(q, k, v):
        def body(carry, _):
            return carry + fn(q, k, v), None

        total, _ = jax.lax.scan(body, jnp.zeros_like(w), None, length=2)
        return jnp.sum(total * w)

    text = str(jax.make_jaxpr(jax.grad(loss, (0, 1, 2)))(q, k, v))
    return max(int(np.prod([int(n) for n in dims.split(",") if n])) for dims in re.findall(r"\w+\[([0-9,]*)\]", text))


@pytest.mark.parametrize("block", [8, 16])
def test_no_score_sized_tensor_under_autodiff(block):
    scores = B * A * S * S
    assert _largest(lambda q, k, v: flash_attention(q, k, v, None, block)) < scores
    assert _largest(dense) >= scores  # the check can fail: the dense reference has [b, a, s, s] scores


def dense_with_sinks(q, k, v, sinks):
    """The reference with gpt-oss's sinks: each head's [s, s] scores and one more column, its sink logit, in the
    softmax; the sink's column has no value (transformers' eager_attention_forward of GptOssAttention)."""
    b, s, a, dh = q.shape
    q5 = q.reshape(b, s, k.shape[2], a // k.shape[2], dh)
    x = jnp.einsum("bqkgd,bskd->bkgqs", q5, k) / jnp.sqrt(jnp.float32(dh))
    x = jnp.where(jnp.arange(s)[:, None] >= jnp.arange(s)[None, :], x, -jnp.inf)
    z = jnp.broadcast_to(sinks.reshape(1, k.shape[2], a // k.shape[2], 1, 1), x.shape[:-1] + (1,))
    probs = jax.nn.softmax(jnp.concatenate([x, z], axis=-1), axis=-1)[..., :-1]
    return jnp.einsum("bkgqs,bskd->bqkgd", probs, v).reshape(b, s, a, dh)


def test_sinks_output_and_gradients_match_dense():
    """Sink logits [a] (gpt-oss): output and the gradients of q, k, v and the sinks to 1e-5 of their largest
    magnitude, at a block size that splits the keys (the sink joins after the last block)."""
    q, k, v, w = _inputs()
    sinks = jax.random.normal(jax.random.key(7), (A,))
    loss = lambda f: lambda *x: jnp.sum(f(*x) * w)  # noqa: E731
    flash = lambda q, k, v, z: flash_attention(q, k, v, z, 16)  # noqa: E731
    run = lambda f: (f(q, k, v, sinks), jax.grad(loss(f), (0, 1, 2, 3))(q, k, v, sinks))  # noqa: E731
    (out, grads), (want, want_grads) = quick(lambda: (run(flash), run(dense_with_sinks)))()
    assert float(jnp.max(jnp.abs(out - want))) <= 1e-5 * float(jnp.max(jnp.abs(want)))
    for got, exp in zip(grads, want_grads):
        assert float(jnp.max(jnp.abs(got - exp))) <= 1e-5 * float(jnp.max(jnp.abs(exp)))
