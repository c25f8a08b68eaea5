"""GPT-style layers in jaxcheck's model (LayerNorm, a GeLU MLP with biases, Q/K/V and output biases, learned
positions, tied embeddings; with Llama 4's weightless q/k norms and gpt-oss's sinks in the same shape): the sharded 1F1B step == the unsharded single-device reference, the traced residuals ==
the jax profile's per-layer list, the compiled step's arguments and outputs == the profile's, and what jaxcheck does
not build (dropout, a sequence longer than the learned positions) refused in one line.

Source of truth: a direct forward of the same flax modules on one device over the whole batch (conftest's
unsharded_reference), differentiated by jax.grad, in fp32: loss to rtol 1e-5, every gradient leaf (the positions,
the biases and the LayerNorms' among them) to atol 2e-6 + rtol 1e-3, as tests/test_jax_equivalence.py; jax's own list
of saved residuals (count and bytes, exact); XLA:GPU's memory analysis for an H100 (deviceless): argument and output
bytes exact, the total within 6 % (tests/test_verify.py's tolerance).
"""

import pytest

from conftest import assert_step_matches, skip_if_not_enough_devices, unsharded_reference
from tiny_shapes import GPT, tiny

from symbolic.config.shapes import ModelShape
from symbolic.config.training import Training

# with Llama 4's weightless q/k norms and gpt-oss's attention sinks too: one compile checks every attention extra
SHAPE = tiny("gpt-test", f=256, k=4, L=4, positions=32, **GPT, tied=True, qk_norm="weightless", sinks=True)
SEQ, GBS = 16, 4


def _spec(d, p, t, c, recompute="none", zero=3):
    from jaxcheck.spec import JaxOptions, StepSpec

    train = Training(d=d, t=t, p=p, c=c, s=SEQ, b=1, gbs=GBS, zero=zero, recompute=recompute)
    return StepSpec(SHAPE, train, JaxOptions(compute_dtype="float32", learning_rate=1e-2)).check()


def test_gpt_step_matches_reference():
    """LayerNorm scales and biases replicated, fc1 and its bias split over t, fc2's bias and the output's replicated,
    the learned positions replicated and tied embeddings (the embedding's gradient the lookup's plus the head's),
    across pipeline stages, context and ZeRO-3 (each parameter sharded over d*c too; one mesh, for the suite's
    budget)."""
    reference = unsharded_reference(_spec(1, 1, 1, 1), GBS)
    host = reference[0]
    spec = _spec(1, 2, 2, 2)
    skip_if_not_enough_devices(spec.train.world)
    block = host["blocks"]
    assert {"scale", "bias"} == set(block["attn_norm"]) == set(host["norm"]) and "positions" in host
    assert {"fc1", "fc1_bias", "fc2", "fc2_bias"} == set(block["mlp"]) and {"bo", "sinks"} <= set(block["attn"])
    assert "q_norm" not in block["attn"]  # weightless: no parameter
    assert_step_matches(spec, reference, SEQ)


@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
def test_gpt_residuals_match_the_profile_tensor_list(recompute):
    """Without remat a LayerNorm keeps what an RMSNorm does (the centred input for the input), and the GeLU MLP its
    fc1 output, four tanh-approximation intermediates, two scalars and its output (24 tensors, as Llama's 22 but two
    scalars), the weightless q/k norms their fp32 input and rsqrt twice (6 more; sinks keep nothing per token);
    selective keeps fc1 and the GeLU output (10); full the layer input."""
    from jaxcheck.crosscheck.explain import residuals
    from jaxcheck.mesh import make_mesh
    from jaxcheck.spec import StepSpec

    train = Training(s=32, gbs=1, recompute=recompute, zero=0)
    res = residuals(StepSpec(SHAPE, train).check(), make_mesh(train))
    assert (res["jax_count"], res["jax_bytes"]) == (res["symbolic_count"], res["symbolic_bytes"])
    assert res["jax_count"] == {"none": 30, "selective": 10, "full": 1}[recompute]


def test_gpt_arguments_exact_on_the_gpu_target():
    """The positions, the LayerNorms' biases and the MLP's two matrices and biases in the parameters, AdamW's states
    and the output tuple: exact; the total within 6 % (t2, selective remat, ZeRO-1; p = 1, the cheaper compile: the
    pipeline's 1F1B path is the equivalence test's)."""
    from jaxcheck.crosscheck.verify import verify
    from jaxcheck.targets import load

    train = Training(t=2, s=32, gbs=2, recompute="selective", zero=1)
    skip_if_not_enough_devices(train.world)
    result = verify(SHAPE, train, target=load("h100-80gb"))
    rows = {row["name"]: row for row in result["components"]}
    for name in ("params", "optimizer", "batch", "argument", "output - alias"):
        assert rows[name]["symbolic"] == rows[name]["xla"], name
    assert abs(result["rel_error_total"]) <= 0.06


@pytest.mark.parametrize("fields, seq, says", [({"dropout": True}, 16, "dropout"), ({}, 64, "--seq 32 at most")])
def test_what_jaxcheck_does_not_build_is_one_line(fields, seq, says):
    from symbolic.config.errors import ConfigError

    shape = ModelShape(**{**SHAPE.__dict__, **fields})
    with pytest.raises(ConfigError, match=says) as err:
        Training(s=seq, gbs=1).check(shape, "jax")
    assert "\n" not in str(err.value)


def test_pad_vocab_pads_as_megatron_does():
    """--pad-vocab N: v rounded up to a multiple of N x tp (Megatron-LM's _vocab_size_with_padding); GPT-2's 50257 at
    tp = 2 and N = 128 is 50432, at tp = 1 50304 (the vocabulary of Megatron-LM's GPT-2 runs); a multiple already, or
    no flag, leaves the shape as it is; 0 is refused in one line."""
    from symbolic.cli.args import padded_vocab
    from symbolic.config.errors import ConfigError
    from symbolic.config.shapes import PRESETS

    gpt2 = PRESETS["gpt2"]
    assert (padded_vocab(gpt2, 128, 2).v, padded_vocab(gpt2, 128, 1).v) == (50432, 50304)
    assert padded_vocab(gpt2, None, 2) is gpt2 and padded_vocab(SHAPE, 8, 1) is SHAPE
    with pytest.raises(ConfigError, match="--pad-vocab must be a positive") as err:
        padded_vocab(gpt2, 0, 2)
    assert "\n" not in str(err.value)
