"""fp32 training (neither --bf16 nor --fp16) with FP8 under Megatron-FSDP, as MB-15 (deepseek_proxy_fsdp_ep2_fsdp2)
runs it: --fp8-param-gather keeps TE's Float8Tensor weights in a uint8 model-weight buffer and Megatron-FSDP an fp32
main-weight buffer (megatron-core 0.16.1 distributed/fsdp/src/megatron_fsdp/param_and_grad_buffer.py
allocate_buffers_for_parameters, preserve_fp32_weights), so the weights read as fp8 with fp32 master copies; TE
quantizes the fp32 inputs of its linears (TE 2.20.2 module/linear.py), every other saved tensor stays fp32."""

from __future__ import annotations

import json

import pytest

from conftest import megatron_estimate
from megatron_args import small_gpt
from symbolic.config.errors import ConfigError
from symbolic.config.training import Training

TINY = small_gpt(
    "--max-position-embeddings 128 --micro-batch-size 1 --attention-backend unfused --no-gradient-accumulation-fusion",
    "--use-distributed-optimizer",
    seq=128,
)
FSDP = "--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads_params "
FP8 = "--fp8-format e4m3 --fp8-recipe tensorwise --fp8-param-gather "


def run(tmp_path, text: str) -> tuple[int, str, str]:
    return megatron_estimate(tmp_path, TINY + text, 8)


@pytest.fixture(scope="module")
def fp32_and_bf16(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fp32fsdp")
    return [json.loads(run(tmp, FSDP + FP8 + extra)[1]) for extra in ("", "--bf16")]


def test_fp32_fsdp_fp8_weights_are_one_byte_with_fp32_main_copies(fp32_and_bf16):
    """Hand-worked from the buffers (exact): per parameter, sharded over d = 8, 1 byte of the uint8 model-weight
    buffer, 4 of main gradients (fp32: an upper bound, Megatron-FSDP's FP8 groups reduce in bf16) and 12 of the fp32
    main-weight buffer and Adam's two fp32 moments: the same as with --bf16 (its master copy is that buffer too)."""
    fp32, bf16 = fp32_and_bf16
    assert {
        k: fp32["config"][k]
        for k in ("weight_dtype", "master_weights", "act_dtype", "weight_bytes", "opt_bytes", "act_bytes", "zero")
    } == {
        "weight_dtype": "fp8",
        "master_weights": True,
        "act_dtype": "fp32",
        "weight_bytes": 1,
        "opt_bytes": 12,
        "act_bytes": 4,
        "zero": 3,
    }
    got, ref = fp32["stages"][0]["bytes"], bf16["stages"][0]["bytes"]
    assert got["gradients"] == 4 * got["weights"] and got["optimizer"] == 12 * got["weights"]
    assert all(got[k] == ref[k] for k in ("weights", "gradients", "optimizer", "fp8_weight_cache"))


def test_fp32_activations_double_all_but_the_quantized_linear_inputs(fp32_and_bf16):
    """Every saved tensor doubles from bf16 to fp32 except the FP8 copies TE's linears save (1 byte either way), so
    the layers' activations grow by a factor strictly between 1 and 2 (exact bounds)."""
    fp32, bf16 = (r["stages"][0]["bytes"]["activations"] for r in fp32_and_bf16)
    assert bf16 < fp32 < 2 * bf16


@pytest.mark.parametrize(
    "text, needle",
    [
        (FP8, "--fp8-param-gather (with fp32 weights (no --bf16) outside Megatron-FSDP"),
        (FSDP, "--use-megatron-fsdp (with fp32 weights (no --bf16) Megatron-FSDP keeps an fp32 main-weight buffer"),
    ],
)
def test_fp32_weights_outside_what_is_read_are_refused_in_one_line(tmp_path, text, needle):
    code, out, err = run(tmp_path, text)
    assert code == 2 and out == "" and err.count("\n") == 1 and needle in err, err


def test_fp8_takes_bf16_or_fp32_activations():
    assert Training(fp8="tensorwise", weight_dtype="fp32", master_weights=False, act_dtype="fp32").act_bytes == 4
    with pytest.raises(ConfigError, match="bf16 or fp32 activations"):
        Training(fp8="tensorwise", weight_dtype="fp16", act_dtype="fp16")
