"""--srelu-fusion: Megatron-Core's fused weighted squared ReLU of the routed experts (Megatron-LM's
--use-fused-weighted-squared-relu).

Source of truth: megatron-core 0.16.1 (and Megatron-LM d98e8a64, the same file) fusions/fused_weighted_squared_relu.py:
WeightedSquaredReLUFunction.forward saves its input (fc1's output [R, f_e / t_e]) and the weights (the probabilities
[R, 1]) and recomputes relu(x)^2 in its backward; transformer/moe/experts.py TEGroupedMLP.bias_act_func calls it in
place of activation_func(x) * probs, whose relu keeps its output and whose product keeps the square. So the fusion
keeps one [R, f_e / t_e] tensor less per MoE layer. Hand counts on tiny shapes; exact."""

import contextlib
import io
import json

import sympy as sp

from megatron_args import read_lines, small_gpt

from symbolic.cli.entry import main
from symbolic.components.moe_experts import expert_tensors
from symbolic.components.moe_rows import expert_rows
from symbolic.config.switches import Switches
from symbolic.config.symbols import B_a, f_e, t_e

ARGS = small_gpt(
    "--bf16 --micro-batch-size 1 --squared-relu --num-experts 4 --moe-router-topk 2 --moe-ffn-hidden-size 48",
    "--moe-grouped-gemm --disable-bias-linear",
)


def test_the_fused_function_keeps_fc1s_output_not_relus_output_and_its_square():
    unfused = {p.name: p.expr for p in expert_tensors(Switches(moe=True, mlp="relu2"))}
    fused = {p.name: p.expr for p in expert_tensors(Switches(moe=True, mlp="relu2", srelu_fusion=True))}
    assert set(fused) == {"expert_input", "expert_fc1_output", "expert_probs", "expert_fc2_input"}
    assert set(unfused) - set(fused) == {"expert_relu_output", "expert_act_output"}
    drop = sp.Add(*unfused.values()) - sp.Add(*fused.values())
    assert sp.simplify(drop - B_a * expert_rows() * f_e / t_e) == 0


def test_the_switch_leaves_gelu_and_swiglu_experts_alone():
    for mlp in ("gelu", "swiglu"):
        plain = [p.expr for p in expert_tensors(Switches(moe=True, mlp=mlp))]
        assert plain == [p.expr for p in expert_tensors(Switches(moe=True, mlp=mlp, srelu_fusion=True))]


def _estimate(path, extra: str) -> dict:
    path.write_text(ARGS + extra)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["estimate", "--megatron", str(path), "--gpus", "1", "--json"]) == 0
    return json.loads(out.getvalue())


def test_a_megatron_file_drops_one_f_e_wide_tensor_per_moe_layer(tmp_path):
    fused = _estimate(tmp_path / "fused.txt", "--use-fused-weighted-squared-relu\n")
    plain = _estimate(tmp_path / "plain.txt", "")
    assert fused["config"]["srelu_fusion"] is True and "srelu_fusion" not in plain["config"]
    # 2 MoE layers x R = k_e s b = 2 x 64 rows x f_e = 48 x 2 bytes (bf16), one micro batch at p = 1
    assert plain["bytes"]["activations"] - fused["bytes"]["activations"] == 2 * 128 * 48 * 2


def test_the_reader_sets_it_only_where_tegroupedmlp_runs_it(tmp_path):
    fused = "--use-fused-weighted-squared-relu"
    for extra, want in ((f"{fused}\n", True), ("", False), (f"{fused} --use-te-activation-func\n", False)):
        assert read_lines(tmp_path, ARGS, extra).training["srelu_fusion"] is want, extra
    assert read_lines(tmp_path, ARGS, f"{fused} --transformer-impl local\n").training["srelu_fusion"] is False
    sequential = ARGS.replace("--moe-grouped-gemm ", "")
    assert (
        read_lines(tmp_path, sequential, f"{fused}\n").training["srelu_fusion"] is False
    )  # SequentialMLP: per-expert MLPs, no fusion


def test_the_flag_on_a_model_without_squared_relu_experts_is_one_line(capsys):
    assert main(["estimate", "--model", "tiny-moe", "--srelu-fusion"]) == 2
    assert "--srelu-fusion fuses squared-ReLU routed experts" in capsys.readouterr().err
    assert main(["estimate", "--model", "tiny-moe", "--recipe", "torchtitan", "--srelu-fusion"]) == 2
    assert "Megatron-Core's fused weighted squared ReLU" in capsys.readouterr().err
