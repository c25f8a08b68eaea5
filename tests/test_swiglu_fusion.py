"""--swiglu-fusion: Megatron-Core's fused SwiGLU (Megatron-LM's --bias-swiglu-fusion, its default with --swiglu).

Source of truth: megatron-core 0.16.1 fusions/fused_bias_swiglu.py (SwiGLUFunction.forward saves its input, fc1's
[.., 2 f / t] gate and up, alone; SiLU(gate) is recomputed in swiglu_back), transformer/mlp.py (MLP.forward runs
bias_swiglu_impl when bias_activation_fusion), and Megatron-LM's core_transformer_config_from_args
(bias_activation_fusion = --bias-swiglu-fusion under --swiglu). Hand count on a tiny shape; exact."""

import contextlib
import io
import json

import sympy as sp

from symbolic.cli.entry import main
from symbolic.components.activations import mlp_tensors
from symbolic.config.switches import Switches
from symbolic.config.symbols import B_a, b, c, f, s, t
from symbolic.readers.megatron import read


def test_fused_swiglu_keeps_fc1s_output_and_fc2s_input():
    unfused = {p.name: p.expr for p in mlp_tensors(Switches())}
    fused = {p.name: p.expr for p in mlp_tensors(Switches(swiglu_fusion=True))}
    assert set(unfused) - set(fused) == {"swiglu"}
    # gate and up (fc1's output, 2 f wide) and fc2's input (f): 3 f per token instead of the paper's 4 f
    mine = fused["gate"] + fused["up"] + fused["down_input"]
    assert sp.simplify(mine - 3 * B_a * s * b * f / (t * c)) == 0


def _estimate(*extra):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["estimate", "--model", "tiny", "--seq", "512", "--tp", "2", "--json", *extra]) == 0
    return json.loads(out.getvalue())["bytes"]["activations"]


def test_the_switch_drops_one_f_wide_tensor_per_layer():
    # tiny: L = 8, f = 688; s b / (t c) = 256 tokens; one micro batch at p = 1
    assert _estimate() - _estimate("--swiglu-fusion") == 8 * 2 * 256 * 688


def test_a_megatron_file_sets_it_as_megatron_lm_defaults(tmp_path):
    base = (
        "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --vocab-size 128 --seq-length 64 --bf16 "
        "--micro-batch-size 1\n"
    )
    for extra, want in (("--swiglu\n", True), ("--swiglu --no-bias-swiglu-fusion\n", False), ("", False)):
        path = tmp_path / "args.txt"
        path.write_text(base + extra)
        assert read(path).training["swiglu_fusion"] is want, extra
