"""Megatron-Core's full recompute of some layers (--recompute-method uniform|block --recompute-num-layers N,
megatron-core 0.16.1 transformer_block.py _checkpointed_forward; components/recompute_layers.py): what a stage keeps
and recomputes at once against counts by hand (exact), the rule table's refusals, the Megatron reader."""

import pytest
import sympy as sp

from symbolic.components.activations import layer_activation
from symbolic.components.recompute_layers import held_layers, working_layers
from symbolic.config.errors import ConfigError
from symbolic.config.shapes import PRESETS as MODELS
from symbolic.config.switches import Switches
from symbolic.config.training import Training

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
