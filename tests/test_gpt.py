"""GPT-style models (GeLU MLP, LayerNorm, learned absolute positions, biases, dropout): parameters and refusals.

Sources of truth: GPT-2 small's 124,439,808 parameters (openai-community/gpt2's model.safetensors), the 12 h^2 + 13 h
parameters of one GPT layer (Narayanan et al. 2021, section 5.1; f = 4h, MHA), Korthikanti et al.'s 34 s b h per layer
(tests/test_korthikanti.py). Tolerance: exact.
"""

import sympy as sp

from symbolic.components.weights import end_params, layer_params, stage_params
from symbolic.config.shapes import PRESETS
from symbolic.config.switches import Switches
from symbolic.config.symbols import L, a, dh, f, h, k, s_p, t, v
from symbolic.config.training import Training
from symbolic.estimator.estimate import estimate

GPT2 = PRESETS["gpt2"]


def test_gpt2_is_counted_to_the_parameter():
    assert GPT2.param_count == 124_439_808
    sw = Switches.of(Training(), shape=GPT2)
    total = stage_params("only", sw).subs({h: 768, f: 3072, a: 12, k: 12, dh: 64, v: 50257, s_p: 1024, t: 1})
    assert total.subs(L, 12) == GPT2.param_count


def test_a_gpt_layer_is_12h2_plus_13h():
    sw = Switches(mlp="gelu", norm="layer", qkv_bias=True, o_bias=True, mlp_bias=True)
    assert sp.expand(layer_params(sw).subs({f: 4 * h, k: a, dh: h / a, t: 1}) - (12 * h**2 + 13 * h)) == 0
    # the first stage's embedding: v x h over t and the positions replicated
    assert sp.expand(end_params("first", Switches(positions=True)) - (h * v / t + s_p * h)) == 0


def test_estimate_and_plan_count_gpt2():
    """The paper profile's weights of GPT-2 on one GPU: 2 bytes x every parameter (tied: one v x h matrix)."""
    one = estimate(GPT2, Training(s=1024)).stages[0]["bytes"]
    assert one["weights"] == 2 * GPT2.param_count


def test_jaxcheck_refuses_gpt2s_dropout_in_one_line(capsys):
    """jaxcheck builds GPT-style layers (tests/test_jax_gpt.py) but draws no dropout masks: GPT-2 as published (0.1)
    is refused, naming its dropout (the `mem4d` entry point, in this process)."""
    from symbolic.cli.entry import main

    assert main(["verify", "--model", "gpt2", "--tp", "1", "--target", "cpu"]) == 2
    err = capsys.readouterr().err
    assert "dropout" in err and err.count("\n") == 1, err


def test_estimate_pads_the_vocabulary_on_request(capsys):
    """estimate --pad-vocab 128 at tp = 8: Llama 3's 128256 rows become 129024 (a multiple of 1024), and the paper
    total's weights (the embedding on the first stage and, at p = 1, the LM head) grow by 96 bf16 rows of h = 4096
    each per GPU; without the flag the
    shape is the config's. Source of truth: Megatron-LM's _vocab_size_with_padding, by hand."""
    import json

    from symbolic.cli.entry import main

    def run(*extra):
        assert main(["estimate", "--model", "llama3-8b", "--tp", "8", "--dp", "8", "--json", *extra]) == 0
        return json.loads(capsys.readouterr().out)

    plain, padded = run(), run("--pad-vocab", "128")
    assert (plain["shape"]["v"], padded["shape"]["v"]) == (128256, 129024)
    assert padded["bytes"]["weights"] - plain["bytes"]["weights"] == 2 * 2 * 96 * 4096  # embedding and, at p = 1, head
