"""How jaxcheck's MoE layer routes and dispatches tokens, each against a hand computation (the sharded MoE step
against its reference: tests/test_jax_moe.py).

Sources of truth, per test: a crafted routing worked out by hand for dropping (fp32, rtol 1e-5 + atol 1e-4); numpy
for the group-limited choice; numpy on hand-set logits for sigmoid routing with the score-correction bias (rtol 1e-6).
"""

import jax
import jax.numpy as jnp
import numpy as np

from conftest import quick


def test_dispatch_drops_assignments_over_capacity():
    """A crafted routing, one device: tokens i = 0..5 each pick expert 0 and expert 1 + i % 3; C_f = 1 gives
    C = ceil(6 * 2 / 4) = 3, so expert 0 keeps tokens 0, 1, 2 (the first in token order) and drops 3, 4, 5. Each
    output equals the hand-worked sum over its kept assignments (fp32, outputs up to ~50: rtol 1e-5 + atol 1e-4 for
    the summation order), and a dropped assignment's router weight gets a gradient of exactly zero."""
    from jaxcheck.model.dispatch import capacity, routed_experts

    T, h, f_e, E = 6, 8, 12, 4
    keys = jax.random.split(jax.random.key(3), 5)
    x = jax.random.normal(keys[0], (1, T, h))
    gate, up = (jax.random.normal(k, (E, h, f_e)) for k in keys[1:3])
    down = jax.random.normal(keys[3], (E, f_e, h))
    experts = jnp.array([[[0, 1 + i % 3] for i in range(T)]], jnp.int32)
    weights = jax.nn.softmax(jax.random.normal(keys[4], (1, T, 2)), axis=-1)
    assert capacity(T, 2, E, 1.0) == 3
    run = lambda w: routed_experts(x, experts, w, gate, up, down, None, None, 1.0, False)
    y, dw = quick(lambda w: (run(w), jax.grad(lambda v: jnp.sum(run(v) * x))(w)), weights)(weights)
    x_, w_, g_, u_, d_ = (np.asarray(a, np.float64) for a in (x[0], weights[0], gate, up, down))
    ffn = lambda i, j: ((x_[i] @ g_[j]) / (1 + np.exp(-(x_[i] @ g_[j]))) * (x_[i] @ u_[j])) @ d_[j]
    expected = np.stack([(w_[i, 0] * ffn(i, 0) if i < 3 else 0.0) + w_[i, 1] * ffn(i, 1 + i % 3) for i in range(T)])
    np.testing.assert_allclose(np.asarray(y)[0], expected, rtol=1e-5, atol=1e-4)
    dw = np.asarray(dw)[0]
    assert np.all(dw[3:, 0] == 0.0) and np.all(dw[:3, 0] != 0.0) and np.all(dw[:, 1] != 0.0)


def _group_limited_top_k(choice, k_e: int, groups: int, group_topk: int) -> list[list[int]]:
    """Each token's chosen experts (sorted), one token at a time in numpy, as Megatron-Core's group_limited_topk
    describes the choice: a group's score is the sum of its top k_e // group_topk choice scores, the token keeps its
    group_topk best groups and takes its top k_e experts among theirs."""
    width, out = choice.shape[1] // groups, []
    for row in choice:
        score = -np.sort(-row.reshape(groups, width), axis=1)[:, : k_e // group_topk].sum(axis=1)
        allowed = np.concatenate([np.arange(g * width, (g + 1) * width) for g in np.argsort(-score)[:group_topk]])
        out.append(sorted(allowed[np.argsort(-row[allowed])[:k_e]].tolist()))
    return out


def test_group_limited_routing_against_numpy():
    """DeepSeek-V3's group-limited choice (n_group, topk_group) on 64 tokens of random logits, sigmoid scores + the
    score bias, E = 16 in 4 groups, k_e = 4 from the best 2: the chosen experts equal the numpy reference's, token by
    token; their weights are their scores renormalised (rtol 1e-6); every token's experts lie in at most 2 groups;
    and the limit decides: the unlimited top 4 differ for at least a quarter of the tokens (54 of 64 when written).
    Source of truth: numpy (_group_limited_top_k)."""
    from jaxcheck.model.moe import route

    rng = np.random.default_rng(0)
    logits = rng.normal(size=(1, 64, 16)).astype(np.float32)
    bias = rng.normal(scale=0.1, size=16).astype(np.float32)
    experts, weights = (np.asarray(x)[0] for x in route(jnp.asarray(logits), 4, True, jnp.asarray(bias), 4, 2))
    scores = 1 / (1 + np.exp(-logits[0].astype(np.float64)))
    assert [sorted(row) for row in experts.tolist()] == _group_limited_top_k(scores + bias, 4, 4, 2)
    chosen = np.take_along_axis(scores, experts, axis=1)
    np.testing.assert_allclose(weights, chosen / chosen.sum(axis=1, keepdims=True), rtol=1e-6)
    assert all(len({e // 4 for e in row}) <= 2 for row in experts.tolist())
    unlimited = np.asarray(route(jnp.asarray(logits), 4, True, jnp.asarray(bias))[0])[0]
    assert sum(set(a) != set(b) for a, b in zip(unlimited.tolist(), experts.tolist())) >= 16


def test_sigmoid_routing_with_the_score_correction_bias_by_hand():
    """DeepSeek-V3's noaux_tc routing (transformers' DeepseekV3TopkRouter with n_group = 1): sigmoid scores, the
    experts chosen by score + bias, weighted by their scores alone renormalised to one; the bias, which flips a choice
    here, gets no gradient. Source of truth: numpy on hand-set logits; tolerance 1e-6."""
    from jaxcheck.model.moe import route

    logits = np.array([[[2.0, 1.0, 0.5, -1.0]]], dtype=np.float32)  # [b, s, E]
    bias = np.array([0.0, 0.0, 0.4, 0.0], dtype=np.float32)  # lifts expert 2 over expert 1 for the choice only
    experts, weights = route(jnp.asarray(logits), 2, sigmoid=True, bias_E=jnp.asarray(bias))
    scores = 1 / (1 + np.exp(-logits[0, 0]))
    assert sorted(np.asarray(experts)[0, 0].tolist()) == [0, 2]
    chosen = np.asarray(experts)[0, 0]
    np.testing.assert_allclose(np.asarray(weights)[0, 0], scores[chosen] / scores[chosen].sum(), rtol=1e-6)
    grad = jax.grad(lambda b: jnp.sum(route(jnp.asarray(logits), 2, True, b)[1] ** 2))(jnp.asarray(bias))
    assert not np.any(np.asarray(grad))
