"""head_dim != h/a (Qwen3, Mistral-Nemo): Q, K, V, O are a*dh and k*dh wide in every component of both profiles.

Sources of truth: ModelShape.param_count (checked against published counts in tests/test_hf_models.py) for the
weights; the widths of the Q, K, V and attention-output tensors read off the definition (exact, sympy); the flax
model's leaves for jaxcheck (tests/test_jax_model.py). Tolerance: exact.
"""

import dataclasses

import pytest
import sympy as sp

from model_files import LLAMA, cli_json, write

from symbolic.components import layer_tensors
from symbolic.config.shapes import PRESETS
from symbolic.config.switches import Switches
from symbolic.config.symbols import B_a, a, b, c, dh, k, s, t
from symbolic.config.training import Training
from symbolic.estimator.estimate import estimate

TINY = PRESETS["tiny"]  # h=256, a=16: h/a = 16


@pytest.mark.parametrize("head_dim", [32, 8, 16])
def test_weights_count_every_parameter_of_any_head_width(head_dim):
    """One GPU holding the whole model (p = t = d = c = 1): weights = B_w x param_count, exactly."""
    shape = dataclasses.replace(TINY, head_dim=head_dim)
    result = estimate(shape, Training(s=256, gbs=1, zero=0), overheads=False)
    assert result.stages[0]["bytes"]["weights"] == 2 * shape.param_count


def test_head_dim_equal_to_h_over_a_is_the_default_count():
    explicit = dataclasses.replace(TINY, head_dim=16)
    assert estimate(explicit, Training(s=256, gbs=8)).bytes == estimate(TINY, Training(s=256, gbs=8)).bytes


def test_attention_tensors_are_a_dh_and_k_dh_wide():
    """Per micro batch and GPU with SP: Q and the attention output a*dh wide, K and V k*dh wide, over t*c."""
    parts = {x.name: x.expr for x in layer_tensors(Switches())}
    for name, width in (("q", a * dh), ("attn_out", a * dh), ("k", k * dh), ("v", k * dh)):
        assert sp.simplify(parts[name] - B_a * s * b * width / (t * c)) == 0, name


@pytest.mark.parametrize("command", [["estimate"], ["plan", "--gpus", "4"]])
def test_cli_counts_a_config_with_its_own_head_dim(tmp_path, command):
    path = write(tmp_path, LLAMA | {"head_dim": 32})
    expected = dataclasses.replace(TINY, head_dim=32).param_count
    assert cli_json(*command, "--model", str(path), "--seq", "256", "--gbs", "8")["param_count"] == expected
