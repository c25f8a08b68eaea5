"""Transformer Engine FP8 under --recipe megatron: the GEMM inputs saved quantized, the attention output's FP8 copy,
the cached FP8 weight copies, --fp8-param-gather, and what is refused in one line.

Source of truth: Transformer Engine 2.20.2's transformer_engine/pytorch/module/linear.py and base.py (what a linear
saves and caches under FP8), written out here tensor by tensor for a small Llama shape; the recipes' bytes from
their scaling granularity (per tensor; 1 x 128 tiles with fp32 scales; 32-element blocks with e8m0 scales).
Tolerance: exact bytes."""

import json

import pytest

from symbolic.cli import main
from symbolic.config import rules
from symbolic.recipes.registry import select
from symbolic.config.errors import ConfigError
from symbolic.config.precision import fp8_bytes
from symbolic.config.shapes import ModelShape
from symbolic.config.training import Training
from symbolic.estimator.estimate import estimate

SHAPE = ModelShape("fp8-small", h=256, f=704, a=8, k=2, L=4, v=1024)  # untied, sizes distinct


@pytest.mark.parametrize(
    "recipe, saved, cache",
    [
        ("none", 2, 0),
        ("delayed", 1, 2),
        ("tensorwise", 1, 2),
        ("blockwise", 1 + 4 / 128, 2 * (1 + 4 / 128**2)),
        ("mxfp8", 1 + 1 / 32, 2 * (1 + 1 / 32)),
        ("nvfp4", 0.5 + 1 / 16, 2 * (0.5 + 1 / 16)),
    ],
)
def test_each_recipe_saves_one_byte_an_element_with_its_scales(recipe, saved, cache):
    assert fp8_bytes(recipe, 2, False) == (saved, cache)


def test_quantized_inputs_and_the_projection_copy_are_exactly_the_difference():
    """Per layer and micro batch (t = 2 with SP, s = 512, b = 1, no recompute): qkv_input, mlp_input [s, h] and fc2's
    input [s, f] drop from 2 to 1 byte an element; the output projection keeps its own 1-byte copy of the attention
    output [s, a dh] beside flash attention's bf16 one."""
    s, t, h, f, a, dh = 512, 2, 256, 704, 8, 32
    base = Training(t=t, s=s, b=1, recompute="none")
    plain = estimate(SHAPE, base).stages[0]["bytes"]["activations"]
    fp8 = estimate(SHAPE, Training(t=t, s=s, b=1, recompute="none", fp8="delayed")).stages[0]["bytes"]["activations"]
    per_layer = -(2 * s * h // t + s * f // t) + s * a * dh // t
    assert fp8 - plain == SHAPE.L * per_layer


@pytest.mark.parametrize(
    "recipe, gather, per_weight, weight",
    [
        ("delayed", False, 2, 2),
        ("tensorwise", True, 1, 1),
        ("mxfp8", False, 2 * (1 + 1 / 32), 2),
        ("mxfp8", True, 1 + 1 / 32, 1 + 1 / 32),
        ("nvfp4", True, 0.5 + 1 / 16, 0.5 + 1 / 16),
    ],
)
def test_weight_cache_is_b_c_per_layer_weight(recipe, gather, per_weight, weight):
    """t = p = 1: the cache holds B_c bytes for every layer parameter (the embedding and the output layer stay
    bf16); with --fp8-param-gather the weights are 1 byte each and only the transposed copy is cached; MXFP8 weights
    (TE's MXFP8Tensor, row-wise and column-wise usage) hold 1 + 1/32 bytes for each usage, no cache beside them."""
    layers = SHAPE.param_count - 2 * SHAPE.h * SHAPE.v - SHAPE.h  # embedding, head, final norm
    got = estimate(SHAPE, Training(s=256, fp8=recipe, fp8_param_gather=gather)).stages[0]["bytes"]
    assert got["fp8_weight_cache"] == round(per_weight * layers)
    assert got["weights"] == round(weight * SHAPE.param_count)


def test_nvfp4_is_read_from_megatron_lms_fp4_flags(tmp_path):
    """--fp4-format e2m1 (--fp4-recipe nvfp4, its default) is --fp8 nvfp4; --fp4-param-gather the quantized weights;
    beside --fp8-format Megatron-Core refuses it (TransformerConfig.__post_init__)."""
    from symbolic.readers.megatron import read

    base = (
        "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --vocab-size 128 --seq-length 64 --bf16 "
        "--micro-batch-size 1 "
    )
    path = tmp_path / "args.txt"
    path.write_text(base + "--fp4-format e2m1 --fp4-param-gather\n")
    training = read(path).training
    assert (training["fp8"], training["fp8_param_gather"]) == ("nvfp4", True)
    path.write_text(base + "--fp4-format e2m1 --fp8-format hybrid\n")
    with pytest.raises(ConfigError, match="beside --fp8-format"):
        read(path)


def test_moe_layers_quantize_the_experts_inputs_not_the_routers():
    """An MoE layer's normed input stays bf16 (the router and the dispatcher read it); the routed experts' permuted
    tokens and fc2 inputs are saved quantized."""
    from symbolic.components import layer_tensors
    from symbolic.config.switches import Switches

    parts = {part.name: part for part in layer_tensors(Switches(moe=True, fp8=True), moe=True)}
    assert "B_q" not in str(parts["mlp_input"].expr)
    assert "B_q" in str(parts["expert_input"].expr) and "B_q" in str(parts["expert_fc2_input"].expr)


@pytest.mark.parametrize(
    "recipe, gather, per_weight",
    [("delayed", False, 1), ("tensorwise", True, 0), ("mxfp8", True, 1 + 1 / 32), ("nvfp4", False, 2 * (0.5 + 1 / 16))],
)
def test_blackwell_float8_weights_keep_no_transpose(recipe, gather, per_weight):
    """--no-fp8-transpose (TE 2.20.2 is_non_tn_fp8_gemm_supported, compute capability 10.x): a delayed or tensorwise
    Float8Tensor's one _data buffer serves both usages, so the cache holds one FP8 copy, or nothing beside FP8
    weights; MXFP8 and NVFP4 keep both usages as before. --recipe torchtitan and blockwise refuse the flag."""
    layers = SHAPE.param_count - 2 * SHAPE.h * SHAPE.v - SHAPE.h
    training = Training(s=256, fp8=recipe, fp8_param_gather=gather, fp8_transpose=False)
    assert estimate(SHAPE, training).stages[0]["bytes"]["fp8_weight_cache"] == round(per_weight * layers)
    x = rules.letters(Training(s=256, zero=3, fp8="tensorwise", fp8_transpose=False), SHAPE)
    assert "--no-fp8-transpose: Megatron only" in [r.name for r in select("torchtitan") if not r.holds(x)]
    x = rules.letters(Training(s=256, fp8="blockwise", fp8_transpose=False), SHAPE)
    assert [r.name for r in select("paper") if not r.holds(x)] == ["--no-fp8-transpose: not blockwise"]


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        ({"fp8": "blockwise", "fp8_param_gather": True}, "needs --fp8 delayed, tensorwise, mxfp8 or nvfp4"),
        ({"fp8_param_gather": True}, "needs --fp8 delayed, tensorwise, mxfp8 or nvfp4"),
        ({"fp8": "delayed", "act_dtype": "fp16", "weight_dtype": "fp16"}, "--act-dtype fp16"),
        ({"fp8": "e4m3"}, "--fp8 must be one of"),
    ],
)
def test_bad_fp8_choices_are_one_line(kwargs, needle):
    with pytest.raises(ConfigError, match=needle) as err:
        Training(**kwargs)
    assert "\n" not in str(err.value)


def test_other_recipes_and_other_layer_kinds_are_refused():
    x = rules.letters(Training(s=256, zero=3, fp8="tensorwise"), SHAPE)
    for profile in ("deepspeed", "jax"):
        assert any(rule.name == "--fp8: Megatron and torchtitan only" for rule in select(profile) if not rule.holds(x))
    dsa = ModelShape(
        "dsa",
        h=256,
        f=704,
        a=8,
        k=8,
        L=2,
        v=1024,
        kv_lora=64,
        q_lora=96,
        rope_dim=16,
        v_dim=32,
        head_dim=32,
        index_heads=4,
        index_dim=32,
        index_topk=64,
    )
    with pytest.raises(ConfigError, match="sparse-attention indexer"):
        Training(s=256, fp8="delayed").check(dsa, "paper")


MLA = ModelShape("mla", h=256, f=704, a=8, k=8, L=2, v=1024, kv_lora=64, q_lora=96, rope_dim=16, v_dim=32, head_dim=32)


def test_latent_attention_saves_each_down_projections_fp8_copy():
    """FP8 with latent attention (megatron-core 0.16.1 gpt_layer_specs.py: TENorm, two TELinear down-projections,
    TELayerNormColumnParallelLinear up-projections): the bf16 normed input gives way to one B_q copy per
    down-projection, the normed latents (ln_out) are saved at B_q, the latents before their norms stay bf16; the
    activations change by exactly that and the dense MLP's inputs, per layer (t = 2 with SP, s = 256, b = 1, tensorwise: B_q = 1)."""
    from symbolic.components import layer_tensors
    from symbolic.config.switches import Switches

    parts = {part.name: part for part in layer_tensors(Switches(mla=True, q_lora=True, fp8=True))}
    assert "qkv_input" not in parts and {"q_down_input_fp8", "kv_down_input_fp8"} <= set(parts)
    assert "B_q" in str(parts["q_latent_normed"].expr) and "B_q" not in str(parts["q_latent"].expr)
    Training(s=256, t=2, fp8="tensorwise").check(MLA, "paper")
    got = {
        fp8: estimate(MLA, Training(s=256, t=2, fp8=fp8)).stages[0]["bytes"]["activations"]
        for fp8 in ("none", "tensorwise")
    }
    tokens = 256 // 2  # the sequence-parallel shard of every [s, b, width] tensor outside the heads
    attention = tokens * (2 * 1 * 256 - 2 * 256 + (1 - 2) * (96 + 64)) + 256 * 8 * 32 // 2 * 1  # + proj_input_fp8
    mlp = tokens * 256 * (1 - 2) + 256 * 704 // 2 * (1 - 2)  # the dense MLP's fc1 and fc2 inputs, as for GQA
    per_layer = attention + mlp
    assert got["tensorwise"] - got["none"] == MLA.L * per_layer


def test_cli_runs_the_megatron_fp8_recipes(capsys):
    for flags in (["--fp8", "tensorwise", "--fp8-param-gather"], ["--fp8", "blockwise"]):
        assert main(["estimate", "--model", "llama3-8b", "--dp", "8", "--tp", "2", *flags, "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["config"]["fp8"] == flags[1] and out["bytes"]["fp8_weight_cache"] > 0
    assert main(["estimate", "--recipe", "deepspeed", "--zero", "3", "--fp8", "tensorwise"]) == 2
    assert "Megatron-LM's Transformer Engine FP8" in capsys.readouterr().err


def test_plan_rows_with_fp8_match_estimate():
    """plan --fp8 delayed: every row it evaluates for the small Llama on 8 GPUs (ZeRO 1) equals estimate() of its
    configuration, FP8 included (bytes to 1, the peak and where it is)."""
    from symbolic.plan.enumerate import Cluster
    from symbolic.plan.search import search

    plan = search(Cluster(SHAPE, gpus=8, s=256, gbs=16, fp8="delayed"), limit=2**31, zero=(1,))
    assert plan.evaluated
    for i in range(plan.evaluated):
        training = plan.training(i)
        assert training.fp8 == "delayed"
        one, got = estimate(SHAPE, training), plan.config(i)
        assert got["bytes"]["fp8_weight_cache"] > 0
        assert max(abs(one.bytes[name] - got["bytes"][name]) for name in got["bytes"]) <= 1
        assert (got["peak_bytes"], got["peak_from"]) == (one.peak, one.peak_from)


@pytest.mark.parametrize(
    "flags, needle",
    [
        ("--fp8-format e4m3 --fp8-recipe mxfp8 --fp8-param-gather --reuse-grad-buf-for-mxfp8-param-ag", None),
        ("--fp8-format e4m3 --fp8-recipe mxfp8 --fp8-param-gather", "--fp8-param-gather (with mxfp8 and without"),
        (
            "--fp8-format e4m3 --fp8-recipe tensorwise --fp8-param-gather --reuse-grad-buf-for-mxfp8-param-ag",
            "--reuse-grad-buf-for-mxfp8-param-ag (needs --fp8-recipe mxfp8",
        ),
    ],
)
def test_a_megatron_file_keeps_mxfp8_weights_with_the_gradient_buffer_reused(tmp_path, capsys, flags, needle):
    """megatron-core 0.16.1: MXFP8 weights under --fp8-param-gather share the gradient buffer for their all-gather
    where --reuse-grad-buf-for-mxfp8-param-ag is set (Megatron-Bridge's MXFP8 recipe); without it another buffer is
    kept (optimizer_config.py warns): refused, as is the flag without MXFP8 weights."""
    path = tmp_path / "run.args"
    path.write_text(
        "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --vocab-size 128 --seq-length 128 "
        "--max-position-embeddings 128 --micro-batch-size 1 --bf16 --use-distributed-optimizer "
        f"--global-batch-size 8 {flags}\n"
    )
    code = main(["estimate", "--megatron", str(path), "--gpus", "8", "--json"])
    out, err = capsys.readouterr()
    if needle is None:
        assert code == 0 and json.loads(out)["config"]["fp8_param_gather"], err
    else:
        assert (code, err.count("\n")) == (2, 1) and needle in err, err
