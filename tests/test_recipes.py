"""The trainers' recipes, component by component, against bytes computed by hand from each trainer's code.

Sources of truth: torchtitan 9dec370 (the code of its December 2024 H100 benchmark: parallelize_llama.py apply_fsdp
and apply_ac, train.py's loss, torch FSDP2's MixedPrecisionPolicy(bf16, fp32)); DeepSpeed edaa7221 (stage_1_and_2.py,
stage3.py, zero/config.py bucket defaults); torch.optim AdamW / SGD state; bitsandbytes' block-wise 8-bit AdamW.
Tolerance: exact bytes (each component is rounded to a whole byte once).
"""

import json
import subprocess
import sys
from dataclasses import replace

import pytest

from symbolic.config.errors import ConfigError
from symbolic.config.shapes import PRESETS
from symbolic.config.training import Training
from symbolic.estimator.estimate import estimate
from symbolic.plan.enumerate import Cluster
from symbolic.plan.search import search
from symbolic.recipes import widths

LLAMA3_8B = PRESETS["llama3-8b"]
P_8B = LLAMA3_8B.param_count  # 8,030,261,248 (tests/test_hf_models.py checks it against the safetensors index)
LAYER_8B = 2 * 4096 * 128 * (32 + 8) + 3 * 4096 * 14336 + 2 * 4096  # q, k, v, o + w1, w2, w3 + two RMSNorms
ENDS_8B = 2 * 128256 * 4096 + 4096  # tok_embeddings, output, final norm (untied)


def _torchtitan(**kw) -> Training:
    return Training(
        **{**widths("torchtitan"), "d": 8, "b": 2, "s": 8192, "gbs": 16, "zero": 3, "recompute": "selective", **kw}
    )


def test_torchtitan_llama3_8b_fsdp_selective_op_by_hand():
    """The benchmark's run (8 GPUs, FSDP 8, local batch 2, seq 8192, selective op AC): the only stage, byte by byte."""
    only = estimate(LLAMA3_8B, _torchtitan(), "torchtitan").stages[0]["bytes"]
    tokens = 2 * 8192
    assert only["weights"] == only["gradients"] == 4 * P_8B // 8  # fp32 shards over dp_shard = 8
    assert only["optimizer"] == 8 * P_8B // 8  # AdamW exp_avg + exp_avg_sq, fp32, zeros_like the shard
    # per block, bf16 unless said: block input (2h), mm outputs of wq (2 a dh), wv (2 k dh), w1 (2f), w2 (2h),
    # the flash kernel's output (2 a dh) and fp32 logsumexp (4a); wk, wo, w3 (even mm counts) recomputed
    per_token = 2 * 4096 + 2 * 4096 + 2 * 1024 + 2 * 4096 + 4 * 32 + 2 * 14336 + 2 * 4096
    assert only["activations"] == 32 * tokens * per_token
    # the final RMSNorm (fp32 input copy 4h, fp32 rsqrt 4, bf16 normed 2h, bf16 output 2h) and the int64 targets
    assert only["output_layer"] == tokens * (8 * 4096 + 4 + 8)
    # the larger moment: the loss's backward (log_softmax's fp32 output, its gradient in and out [b s, v]) over a
    # block's (its recomputed tensors, bf16 grads + fp32 reduce-scatter input, the LM head's bf16 gradient)
    loss = 3 * 4 * tokens * 128256
    block = tokens * (213_128 - per_token) + 6 * LAYER_8B + 2 * 4096 * 128256
    assert only["transient"] == max(loss, block) == loss
    assert only["embedding_input"] == 8 * tokens  # int64 input ids
    # bf16: the root group (embedding, norm, output) + the last block (not resharded) + the prefetched block
    assert only["params_gathered"] == 2 * (ENDS_8B + 2 * LAYER_8B)
    assert "grad_buckets" not in only and "dist_opt_allgather" not in only  # Megatron's buckets: not torchtitan's


def test_torchtitan_loss_parallel_holds_four_logit_sized_tensors():
    """At tp > 1 torchtitan's loss runs under loss_parallel, whose nll_loss backward (torch/distributed/tensor/parallel/
    loss.py _nll_loss_and_log_softmax_backward) holds the saved fp32 log-softmax, grad_input and exp(x) while it
    forms their sum: four fp32 [b s, v/t] (three at tp = 1, aten's fused backward). Exact, by hand."""
    tokens = 2 * 8192
    for t, count in ((1, 3), (2, 4)):
        only = estimate(LLAMA3_8B, _torchtitan(d=8 // t, t=t, sp=True), "torchtitan").stages[0]["bytes"]
        assert only["transient"] == count * 4 * tokens * 128256 // t, t


def test_torchtitan_without_checkpointing_keeps_what_eager_autograd_saves():
    """No AC (tp = 1): per token, two RMSNorms (8h + 4 each), Q and the repeated K, V (a heads each) and the flash
    output (2 a dh each) with its fp32 logsumexp (4a), the FFN's w1, SiLU, w3 outputs and their product (2f each):
    16h + 8 a dh + 4a + 8f + 8 = 213,128 bytes for Llama 3 8B (listed from torchtitan 9dec370's model.py by running
    its block under autograd's saved-tensor hooks, duplicates counted once)."""
    only = estimate(LLAMA3_8B, _torchtitan(recompute="none"), "torchtitan").stages[0]["bytes"]
    assert only["activations"] == 32 * 2 * 8192 * 213_128
    # tp = 2: each norm's output is saved whole (all-gathered by PrepareModuleInput), the rest over t
    only = estimate(LLAMA3_8B, _torchtitan(recompute="none", t=2, d=4), "torchtitan").stages[0]["bytes"]
    assert only["activations"] == 32 * 2 * 8192 * (2 * 2 * 4096 + (213_128 - 2 * 2 * 4096) // 2)


def test_torchtitan_per_layer_selective_checkpointing():
    """selective_ac_option = 2 (torchtitan's default option): blocks 2, 4, ..., 32 (a module-wide counter, n % 2 == 0)
    keep their input, the other 16 everything eager autograd saves."""
    only = estimate(LLAMA3_8B, _torchtitan(ac_every=2), "torchtitan").stages[0]["bytes"]
    tokens = 2 * 8192
    assert only["activations"] == 16 * tokens * 213_128 + 16 * tokens * 2 * 4096
    with pytest.raises(ConfigError, match="--recipe torchtitan"):
        estimate(LLAMA3_8B, Training(ac_every=2))
    with pytest.raises(ConfigError, match="--recompute selective"):
        estimate(LLAMA3_8B, _torchtitan(ac_every=2, recompute="full"), "torchtitan")


def test_torchtitan_full_checkpointing_keeps_the_block_input():
    """ptd_checkpoint_wrapper per block: one bf16 [b, s, h] per layer (sharded over t along s by SequenceParallel)."""
    only = estimate(LLAMA3_8B, _torchtitan(recompute="full", t=2, d=4), "torchtitan").stages[0]["bytes"]
    assert only["activations"] == 32 * 2 * 8192 * 4096 * 2 // 2


def test_deepspeed_zero_stages_by_hand():
    """tiny on 4 data-parallel ranks: bf16 weights and gradients, fp32 master + Adam over d, one 5e8-element bf16
    reduce bucket (min with the stage's parameters), stage 3's gathered module and its prefetch (5e7)."""
    shape = PRESETS["tiny"]
    n = shape.param_count
    layer = 2 * 256 * 16 * (16 + 4) + 3 * 256 * 688 + 2 * 256
    for zero in (1, 2, 3):
        t = Training(**{**widths("deepspeed"), "d": 4, "s": 256, "zero": zero})
        only = estimate(shape, t, "deepspeed").stages[0]["bytes"]
        assert only["weights"] == (2 * n // 4 if zero == 3 else 2 * n)
        assert only["gradients"] == (2 * n if zero == 1 else round(2 * n / 4))
        assert only["optimizer"] == 12 * n // 4
        assert only.get("grad_partition", 0) == (round(2 * n / 4) if zero == 1 else 0)
        assert only["reduce_bucket"] == 2 * min(n, 500_000_000)
        ends = 2 * 1024 * 256 + 256
        assert only.get("params_gathered", 0) == (2 * (max(ends, layer) + min(layer, 50_000_000)) if zero == 3 else 0)
        # the step: stage 3 a sub-group's bf16 + fp32 gradient copies, stages 1-2 the fp32 slice, beyond the backward
        step = 6 * n / 4 if zero == 3 else 4 * n / 4
        backward = sum(
            x
            for name, x in only.items()
            if name
            not in (
                "weights",
                "gradients",
                "optimizer",
                "grad_partition",
                "optimizer_step",
                "communicators",
                "cuda_context",
                "fragmentation",
                "total",
            )
        )
        assert abs(only["optimizer_step"] - max(0, step - backward)) <= 12  # a byte of rounding per component


def test_deepspeed_fp32_gradients_at_stage_1_are_bf16_optimizer():
    """data_types.grad_accum_dtype fp32 at stage 1 selects BF16_Optimizer (engine.py): a whole fp32 gradient buffer
    (4 bytes per parameter) beside autograd's whole bf16 .grad (2), no partition copy; at stage 2 refused in one line."""
    shape = PRESETS["tiny"]
    n = shape.param_count
    t = Training(**{**widths("deepspeed"), "d": 4, "s": 256, "zero": 1, "grad_dtype": "fp32"})
    only = estimate(shape, t, "deepspeed").stages[0]["bytes"]
    assert (only["gradients"], only["lp_grads"], only["grad_partition"]) == (4 * n, 2 * n, 0)
    with pytest.raises(ConfigError, match="ZeRO-2 with grad_accum_dtype fp32"):
        estimate(shape, replace(t, zero=2), "deepspeed")


def test_deepspeed_without_zero_init_keeps_every_gathered_weight():
    """A model built outside deepspeed.zero.Init: F.linear saves each gathered weight for backward, so at the turn
    every layer's and the LM head's bf16 weights are gathered (DeepSpeedExamples bf16_master_weight; stage3.py's
    memory-efficient linear comes only with zero.Init); full recompute saves none of them."""
    shape = PRESETS["tiny"]
    layer = 2 * 256 * 16 * (16 + 4) + 3 * 256 * 688 + 2 * 256
    t = Training(**{**widths("deepspeed"), "d": 4, "s": 256, "zero": 3, "zero_init": False})
    only = estimate(shape, t, "deepspeed").stages[0]["bytes"]
    assert only["params_gathered"] == 2 * (8 * layer + 1024 * 256 + layer)  # + the prefetch (a layer under 5e7)
    full = estimate(shape, replace(t, recompute="full"), "deepspeed").stages[0]["bytes"]
    assert (
        full["params_gathered"]
        == estimate(shape, replace(t, zero_init=True), "deepspeed").stages[0]["bytes"]["params_gathered"]
    )


@pytest.mark.parametrize(
    "choices, opt_bytes",
    [
        ({}, 12),  # Megatron: fp32 master + Adam m, v
        ({"optimizer": "sgd"}, 8),  # master + one momentum buffer
        ({"optimizer": "sgd", "master_weights": False, "weight_dtype": "fp32"}, 4),
        ({"moment_dtype": "bf16"}, 8),  # DeepSeek-V3's bf16 moments over an fp32 master
        ({"optimizer": "adamw8bit"}, 4 + 2 + 2 * 4 / 256),  # two uint8 states + fp32 absmax per 256-element block
    ],
)
def test_optimizer_bytes_per_parameter(choices, opt_bytes):
    t = Training(**choices)
    assert t.opt_bytes == opt_bytes
    one = estimate(PRESETS["tiny"], Training(s=256, **choices)).stages[0]["bytes"]
    assert abs(one["optimizer"] - opt_bytes * PRESETS["tiny"].param_count) <= 1


def test_megatron_exact_stages_by_hand():
    """Megatron's exact only stage of llama3-8b (p = 1, s 4096): the bf16 logits beside their fp32 copy
    (LanguageModule: vocab_parallel_cross_entropy(logits.float())), the dummy bf16 weight gradients of gradient
    accumulation fusion (one per distinct weight shape: QKV, proj, fc1 (2f with SwiGLU), fc2, the LM head), none
    with --no-grad-accum-fusion; full recompute's working set is one layer's tensors with nothing recomputed."""
    only = estimate(LLAMA3_8B, Training(s=4096)).stages[0]["bytes"]
    assert only["logits_bf16"] == 2 * 4096 * 128256
    qkv, proj, fc1, fc2, head = 6144 * 4096, 4096 * 4096, 2 * 14336 * 4096, 4096 * 14336, 128256 * 4096
    assert only["dummy_wgrads"] == 2 * (qkv + proj + fc1 + fc2 + head)
    assert estimate(LLAMA3_8B, Training(s=4096, grad_accum_fusion=False)).stages[0]["bytes"]["dummy_wgrads"] == 0
    full = estimate(LLAMA3_8B, Training(s=4096, recompute="full")).stages[0]["bytes"]
    none = estimate(LLAMA3_8B, Training(s=4096)).stages[0]["bytes"]
    assert full["recompute_working_set"] == none["activations"] // 32 and none["recompute_working_set"] == 0


@pytest.mark.parametrize("logits, width", [("fp32", 4), ("bf16", 2), ("none", 0)])
def test_the_losss_logits(logits, width):
    """The paper profile's output layer: two bf16 [s, b, h] inputs + the logits the loss keeps, B_l bytes each."""
    one = estimate(PRESETS["tiny"], Training(s=256, logits=logits)).stages[0]["bytes"]
    assert one["output_layer"] == 2 * 2 * 256 * 256 + width * 256 * 1024


@pytest.mark.parametrize(
    "training, profile, words",
    [
        (Training(zero=1, recompute="full"), "torchtitan", "FSDP2"),
        (Training(zero=0), "deepspeed", "ZeRO stage 0"),
        (Training(zero=3, recompute="full"), "torchtitan", "no separate master copy"),  # Megatron's precision
    ],
)
def test_what_a_recipe_does_not_have_is_one_line(training, profile, words):
    with pytest.raises(ConfigError, match=words) as err:
        estimate(LLAMA3_8B, training, profile)
    assert "\n" not in str(err.value)


def test_fp8_without_master_is_refused_at_construction():
    with pytest.raises(ConfigError, match="master copy"):
        Training(weight_dtype="fp8", master_weights=False)


def test_recipes_refuse_experts():
    """DeepSpeed's MoE is not modelled; torchtitan's is at tp = 1 only (tests/test_titan_moe.py)."""
    with pytest.raises(ConfigError, match="DeepSpeed's MoE"):
        estimate(PRESETS["mixtral-8x7b"], Training(**{**widths("deepspeed"), "zero": 1}), "deepspeed")
    t = Training(**{**widths("torchtitan"), "zero": 3, "recompute": "full", "t": 2, "d": 4})
    with pytest.raises(ConfigError, match="routed experts"):
        estimate(PRESETS["mixtral-8x7b"], t, "torchtitan")


def test_allocated_reserved_device():
    """device = reserved + CUDA context + NCCL communicators; reserved = allocated + fragmentation + what the pool
    keeps beyond the live tensors (the copy-in stream's all-gather buffers, the loss's freed logits) (exact)."""
    result = estimate(LLAMA3_8B, _torchtitan(), "torchtitan")
    parts, kinds = result.stages[0]["bytes"], result.memory
    assert kinds["device_bytes"] == result.peak == parts["total"]
    assert kinds["reserved_bytes"] == parts["total"] - parts["cuda_context"] - parts["communicators"]
    slack = parts["fragmentation"] + parts["allgather_cache"] + parts["freed_logits"]
    assert parts["allgather_cache"] > 0 and parts["freed_logits"] > 0
    assert kinds["allocated_bytes"] == kinds["reserved_bytes"] - slack


def test_plan_searches_what_the_recipe_has():
    """plan --recipe torchtitan lists FSDP2 stages (2, 3) only, every policy at tp > 1 too."""
    cluster = Cluster(PRESETS["tiny"], gpus=8, s=256, gbs=16)
    plan = search(cluster, limit=2**40, profile="torchtitan")
    assert plan.feasible > 0
    assert set(plan.rows["zero"][plan.order].tolist()) == {2, 3}
    configs = [plan.config(int(i))["config"] for i in plan.order]
    assert {c["recompute"] for c in configs} == {"none", "selective", "full"}
    assert max(c["tp"] for c in configs if c["recompute"] == "none") > 1
    row = plan.config(int(plan.order[0]))
    alone = estimate(PRESETS["tiny"], plan.training(int(plan.order[0])), "torchtitan")
    assert alone.peak == row["peak_bytes"] and row["config"]["weight_dtype"] == "fp32"


def _mem4d(*argv) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "symbolic.cli", *argv], capture_output=True, text=True, timeout=120)


def test_cli_recipe_flags_and_conflicts():
    done = _mem4d("estimate", "--recipe", "torchtitan", "--model", "tiny", "--dp", "4", "--seq", "256", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["profile"] == "torchtitan" and report["config"]["zero"] == 3  # the recipe's defaults
    assert report["config"]["recompute"] == "selective" and report["config"]["master_weights"] is False
    assert report["judged"] == "device_bytes" and report["memory"]["device_bytes"] == report["peak_bytes"]
    for argv, words in (
        (["estimate", "--recipe", "deepspeed", "--profile", "jax"], "conflict"),
        (["verify", "--optimizer", "sgd"], "--optimizer: the jax step's precision"),
        (["estimate", "--optimizer", "lion"], "invalid choice"),
    ):
        done = _mem4d(*argv)
        assert done.returncode == 2 and words in done.stderr and len(done.stderr.strip().splitlines()) == 1, argv
