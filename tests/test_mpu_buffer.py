"""Megatron-Core's global memory buffer ("mpu") and --transformer-impl local, by hand on a tiny dense model.

Source of truth: megatron-core 0.16.1 tensor_parallel/layers.py (LinearWithGradAccumulationAndAsyncCommunication
all-gathers a sequence-parallel input into get_global_memory_buffer().get_tensor(..., "mpu")), utils.py
GlobalMemoryBuffer (one tensor per name and dtype, kept), models/gpt/gpt_model.py (the LM head is Megatron's own
ColumnParallelLinear under either implementation); PyTorch's cuBLAS workspaces (two) without Transformer Engine's.
Exact bytes."""

import contextlib
import io
import json

from symbolic.cli.entry import main

H, S = 256, 512  # tiny: h = 256; s = 512, b = 1, c = 1


def stages(*extra: str) -> dict[str, dict]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["estimate", "--model", "tiny", "--seq", str(S), "--json", *extra]) == 0
    return {s["stage"]: s["bytes"] for s in json.loads(out.getvalue())["stages"]}


def test_the_lm_heads_gather_is_kept_on_the_head_stage():
    got = stages("--tp", "2", "--pp", "2")
    assert got["last"]["mpu_buffer"] == 2 * H * S  # [s b / c, h] bf16, gathered over t = 2
    assert got["first"]["mpu_buffer"] == 0
    assert stages("--tp", "1", "--pp", "2")["last"]["mpu_buffer"] == 0  # no gather at t = 1
    assert stages("--tp", "2", "--pp", "2", "--no-sp")["last"]["mpu_buffer"] == 0


def test_local_layers_gather_on_every_stage_and_keep_two_workspaces():
    # the local layers' attention is unfused (LocalSpecProvider.core_attention: DotProductAttention): both unfused
    te = stages("--tp", "2", "--pp", "2", "--no-flash-attn")
    local = stages("--tp", "2", "--pp", "2", "--no-flash-attn", "--transformer-impl", "local")
    assert local["first"]["mpu_buffer"] == local["last"]["mpu_buffer"] == 2 * H * S
    assert te["first"]["cublas_workspaces"] == 3 * 32 * 2**20 and local["first"]["cublas_workspaces"] == 2 * 32 * 2**20
    # nothing else changes but the 5 % fragmentation of the tensors counted
    differ = {k for k in te["first"] if te["first"][k] != local["first"][k]}
    assert differ == {"mpu_buffer", "cublas_workspaces", "fragmentation", "total"}
