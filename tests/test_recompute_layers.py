"""Megatron-Core's full recompute of some layers (--recompute-method uniform|block --recompute-num-layers N,
megatron-core 0.16.1 transformer_block.py _checkpointed_forward; components/recompute_layers.py): what a stage keeps
and recomputes at once against counts by hand (exact), the rule table's refusals, the Megatron reader; in step time
(megatron-core 0.16.1 transformer_layer.py:445 recompute_mlp too) the extra forward by hand (1e-9 relative)."""

from dataclasses import replace

import pytest
import sympy as sp

from symbolic.components.activations import layer_activation
from symbolic.components.recompute_layers import held_layers, working_layers
from symbolic.config.errors import ConfigError
from symbolic.config.shapes import PRESETS as MODELS
from symbolic.config.switches import Switches
from symbolic.config.training import Training
from symbolic.time.evaluate import step_time
from symbolic.time.systems import SYSTEMS

LAYERS = sp.Symbol("layers", positive=True, integer=True)


def _switches(method: str, n: int) -> Switches:
    return Switches.of(Training(recompute="full", recompute_method=method, recompute_num_layers=n))


def test_block_keeps_n_inputs_and_the_other_layers_whole():
    sw = _switches("block", 5)
    kept, whole = layer_activation(Switches.of(Training(recompute="full"))), layer_activation(Switches.of(Training()))
    assert sp.simplify(held_layers(sw, LAYERS, layer_activation).subs(LAYERS, 32) - (5 * kept + 27 * whole)) == 0
    assert sp.simplify(held_layers(sw, LAYERS, layer_activation).subs(LAYERS, 4) - 4 * kept) == 0  # N >= the stage
    assert working_layers(sw, LAYERS).subs(LAYERS, 32) == 0 and working_layers(sw, LAYERS).subs(LAYERS, 5) == 1


def test_uniform_keeps_one_input_a_chunk_and_recomputes_a_chunk():
    sw = _switches("uniform", 4)
    kept = layer_activation(Switches.of(Training(recompute="full")))
    assert sp.simplify(held_layers(sw, LAYERS, layer_activation).subs(LAYERS, 30) - 8 * kept) == 0  # ceil(30 / 4)
    assert working_layers(sw, LAYERS).subs(LAYERS, 30) == 4 and working_layers(sw, LAYERS).subs(LAYERS, 3) == 3


def test_uniform_one_is_plain_full_recompute():
    assert Switches.of(Training(recompute="full", recompute_num_layers=1)) == Switches.of(Training(recompute="full"))


@pytest.mark.parametrize(
    "fields,profile,needle",
    [
        (
            {"p": 2, "vpp": 2, "recompute": "full", "recompute_method": "block", "recompute_num_layers": 2},
            "paper",
            "vpp = 2",
        ),
        ({"recompute": "full", "recompute_num_layers": 2}, "torchtitan", "Megatron-Core's full recompute"),
        ({"recompute": "selective", "recompute_num_layers": 2}, "paper", "go with --recompute full"),
    ],
)
def test_refused_in_one_line(fields, profile, needle):
    with pytest.raises(ConfigError, match=needle):
        Training(**fields).check(MODELS["llama3-8b"], profile)


def test_the_megatron_reader_reads_the_method_and_the_layers(tmp_path):
    from symbolic.readers.megatron import read

    tiny = "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --vocab-size 128 --max-position-embeddings 128 "
    path = tmp_path / "run.args"
    path.write_text(
        tiny + "--seq-length 128 --micro-batch-size 1 --recompute-granularity full --recompute-method "
        "block --recompute-num-layers 1\n"
    )
    got = read(path).training
    assert (got["recompute"], got["recompute_method"], got["recompute_num_layers"]) == ("full", "block", 1)
    path.write_text(
        tiny + "--seq-length 128 --micro-batch-size 1 --recompute-granularity full --recompute-method "
        "uniform --recompute-num-layers 1\n"
    )
    assert "recompute_num_layers" not in read(path).training  # mem4d's plain full recompute


def test_mlp_recompute_reruns_the_dense_mlp_forward():
    """--recompute-modules mlp (megatron-core 0.16.1 transformer_layer.py:445, dense layers only): T_rec is the dense
    MLP's forward, a third of its share of T_lin (by hand: 6 h f FLOPs a token beside the projections' 2 h (a + 2 k) dh
    + 2 a dh h), and TP+SP gathers and scatters twice more per layer (exact to 1e-9)."""
    shape = MODELS["llama3-8b"]
    base = Training(d=4, t=2, s=4096, b=1, gbs=64)
    out = step_time(shape, replace(base, recompute="selective", recompute_modules="mlp"), SYSTEMS["dgx-h100"])
    ref = step_time(shape, base, SYSTEMS["dgx-h100"])["breakdown"]
    h, f, a, k, dh = 4096, 14336, 32, 8, 128
    mlp, proj = 6 * h * f, 2 * h * (a + 2 * k) * dh + 2 * a * dh * h
    assert out["breakdown"]["T_rec"] == pytest.approx(ref["T_lin"] * mlp / (3 * (mlp + proj)), rel=1e-9)
    assert out["breakdown"]["T_tp"] == pytest.approx(ref["T_tp"] * (8 + 2) / 8, rel=1e-9)


def test_block_recompute_reruns_n_of_the_stage_layers():
    """--recompute-method block --recompute-num-layers N (megatron-core 0.16.1 transformer_block.py
    _checkpointed_forward): T_rec is N / (L/p) of full recompute's (exact to 1e-9)."""
    shape = MODELS["llama3-8b"]
    full = Training(d=8, s=4096, b=1, gbs=64, recompute="full")
    block = replace(full, recompute_method="block", recompute_num_layers=5)
    every = step_time(shape, full, SYSTEMS["dgx-h100"])["breakdown"]["T_rec"]
    assert step_time(shape, block, SYSTEMS["dgx-h100"])["breakdown"]["T_rec"] == pytest.approx(every * 5 / 32, rel=1e-9)
