"""--offload-modules: Megatron-Core's fine-grained activation offloading under --recipe megatron.

Source of truth: megatron-core 0.16.1 pipeline_parallel/fine_grained_activation_offload.py (a module's saved tensors
of at least min_offloaded_tensor_size = 2^20 elements go to the host; after the first iteration a layer's groups stay
and the next layer's are reloaded ahead of their backward), transformer/attention.py and transformer_layer.py (which
tensors each module's forward saves: linear_qkv, TELayerNormColumnParallelLinear, keeps the norm's input and output;
the input norm of a GQA layer is an IdentityOp), transformer_config.py (attn_proj needs core_attn). Hand counts on a
small Llama shape whose [s, h] tensors are exactly 2^20 elements and whose keys and values are a quarter of that;
exact bytes."""

import pytest

from megatron_args import read_lines, small_gpt

from symbolic.components import layer_tensors
from symbolic.config.errors import ConfigError
from symbolic.config.shapes import ModelShape
from symbolic.config.switches import Switches
from symbolic.config.training import Training
from symbolic.estimator.estimate import estimate

SHAPE = ModelShape("offload-small", h=256, f=704, a=8, k=2, L=4, v=1024)  # dh = 32: keys, values 64 wide
S = 4096  # s h = 2^20 elements: norm1_input, qkv_input, q, attn_out are offloaded; k and v (2^18) stay


def _bytes(**kwargs) -> dict:
    return estimate(SHAPE, Training(s=S, **kwargs)).stages[0]["bytes"]


def test_attention_modules_offload_their_large_saved_tensors():
    """qkv_linear takes the fused norm's input and output (TELayerNormColumnParallelLinear), core_attn q (k and v
    fall under 2^20 elements), attn_proj the output projection's input; the MLP's tensors stay."""
    plain, off = _bytes(), _bytes(offload_modules="qkv_linear,core_attn,attn_proj")
    per_layer = 2 * S * 256 * 4  # bf16 norm1_input, qkv_input, q, attn_out
    assert plain["activations"] - off["activations"] == SHAPE.L * per_layer
    assert off["offload_resident"] == 2 * per_layer and "offload_resident" not in plain


def test_a_gqa_layers_norms_are_not_modules_of_their_own():
    """attn_norm and mlp_norm offload nothing in a dense GQA layer under Transformer Engine: both norms are fused
    into the next linear (IdentityOp); qkv_linear alone takes the norm's input with it."""
    assert layer_tensors(Switches(offload="attn_norm+mlp_norm")) == layer_tensors(Switches())
    names = {part.name: part.expr for part in layer_tensors(Switches(offload="qkv_linear"))}
    assert names["norm1_input"].is_Piecewise and not names["norm2_input"].is_Piecewise


def test_small_tensors_stay():
    """At a quarter of the sequence no tensor reaches 2^20 elements: nothing moves, and nothing stays resident."""
    small = estimate(SHAPE, Training(s=S // 4, offload_modules="qkv_linear,core_attn,attn_proj")).stages[0]["bytes"]
    assert small["activations"] == estimate(SHAPE, Training(s=S // 4)).stages[0]["bytes"]["activations"]
    assert small["offload_resident"] == 0


def test_moe_modules_offload_the_experts_inputs():
    """An MoE layer's pre-MLP norm is a TENorm of its own (mlp_norm), the grouped fc1's input (expert_fc1) and the
    activation's input (moe_act) go, the activation's output (fc2's input) stays."""
    names = {
        part.name: part.expr
        for part in layer_tensors(Switches(moe=True, offload="mlp_norm+expert_fc1+moe_act"), moe=True)
    }
    assert all(names[n].is_Piecewise for n in ("norm2_input", "expert_input", "expert_fc1_output"))
    assert not names["expert_fc2_input"].is_Piecewise and not names["mlp_input"].is_Piecewise


@pytest.mark.parametrize(
    "modules, needle",
    [
        ("attn_proj", "needs core_attn"),
        ("mlp", "must be distinct names"),
        ("core_attn,core_attn", "must be distinct names"),
    ],
)
def test_bad_modules_are_one_line(modules, needle):
    with pytest.raises(ConfigError, match=needle) as err:
        Training(offload_modules=modules)
    assert "\n" not in str(err.value)


def test_other_recipes_refuse_it():
    with pytest.raises(ConfigError, match="fine-grained activation offloading"):
        Training(s=256, zero=3, offload_modules="core_attn").check(SHAPE, "torchtitan")


def test_a_megatron_file_reads_it(tmp_path):
    base = small_gpt("--bf16 --micro-batch-size 1")
    offloaded = "--fine-grained-activation-offloading --offload-modules core_attn attn_proj\n"
    assert read_lines(tmp_path, base, offloaded).training["offload_modules"] == "core_attn,attn_proj"
    with pytest.raises(ConfigError, match="without --fine-grained-activation-offloading"):
        read_lines(tmp_path, base, "--offload-modules core_attn\n")


def test_layer_level_offloading_keeps_l_minus_n_layers_and_the_small_tensors():
    """--cpu-offload-layers N (TE 2.20.2 pytorch/cpu_offload.py, DefaultOffloadSynchronizer: (L - N) layers' worth on
    the GPU at once; tensors under 256 x 1024 elements stay): at s = 2048 the [s, h] and f-wide tensors go, keys and
    values (2048 x 64 = 2^17 elements) stay, in N = 3 of the 4 layers."""
    s = 2048
    plain = estimate(SHAPE, Training(s=s)).stages[0]["bytes"]["activations"]
    off = estimate(SHAPE, Training(s=s, cpu_offload_layers=3)).stages[0]["bytes"]["activations"]
    kv = 2 * 2 * s * 64  # bf16 k and v of one layer
    assert off == plain // SHAPE.L * (SHAPE.L - 3) + 3 * kv


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        ({"p": 2}, "got p = 2"),
        ({"recompute": "selective"}, "--recompute sel"),
        ({"cpu_offload_layers": 4}, "fewer than L = 4"),
    ],
)
def test_layer_level_offloading_is_refused_where_megatron_refuses_it(kwargs, needle):
    training = Training(s=256, **{"cpu_offload_layers": 2, **kwargs})
    with pytest.raises(ConfigError, match=needle) as err:
        training.check(SHAPE, "paper")
    assert "\n" not in str(err.value)


def test_a_megatron_file_reads_the_offloaded_layers(tmp_path):
    line = small_gpt("--bf16 --micro-batch-size 1 --cpu-offloading-num-layers 1")
    assert read_lines(tmp_path, line).training["cpu_offload_layers"] == 1


def test_formula_json_lists_the_offload_switches_only_where_set():
    """formula --json's "switches" (Switches.shown): only what differs from the defaults, so a configuration without
    offloading prints what it printed before the switches existed (benchmarks/golden.py's formula cases), one with it
    names them; the default switches show nothing."""
    assert Switches().shown() == {}
    shown = Switches(offload="core_attn", cpu_offload=2).shown()
    assert (shown["offload"], shown["cpu_offload"]) == ("core_attn", 2)
