"""Megatron-Core's all-gather token dispatcher (--moe-dispatcher allgather) and GeLU routed experts, closed forms
against hand counts on a tiny shape.

Source of truth: megatron-core 0.16.1 transformer/moe/token_dispatcher.py (MoEAllGatherTokenDispatcher: the gather
over etp x ep into the global "mpu" buffer, local_map, local_probs, the permute's indices) and experts.py
(TEGroupedMLP's unfused gelu(fc1) * probs). Exact: bytes are integers here, no tolerance."""

import contextlib
import io
import json

import pytest

from symbolic.cli.entry import main
from symbolic.config.errors import ConfigError
from symbolic.config.shapes import ModelShape

# tiny-moe with the sizes below: T = s b / (t c) = 256 * 1 / 2 = 128 routed tokens per GPU
H, E_, K_E, F_E, L = 256, 8, 2, 176, 8
ARGS = ["--model", "tiny-moe", "--tp", "2", "--ep", "2", "--dp", "2", "--seq", "256", "--json"]


def estimate(*extra: str) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["estimate", *ARGS, *extra]) == 0
    return json.loads(out.getvalue())


def test_allgather_buffers_by_hand():
    """t_e = t = 2, e = 2: N = T t_e e = 512 gathered rows, R = k_e T t_e = 512 rows for the local experts."""
    T, N, R, B = 128, 128 * 2 * 2, 2 * 128 * 2, 2
    report = estimate("--moe-dispatcher", "allgather")
    got, only = report["bytes"], report["stages"][0]["bytes"]  # p = 1: the one stage holds the head
    # the persistent global buffer: the gathered tokens [N, h], more than the LM head's gathered [s b, h] = [256, h]
    assert only["mpu_buffer"] == B * H * max(N, 256)
    assert got["moe_dispatch"] == B * H * (R + N)  # expert output rows and their unpermute into N rows
    # per MoE layer: bool local map [N, E/e], local probs [R] (bf16) and int64 permutation [R]
    assert got["moe_routing_state"] == L * (N * E_ // 2 + (B + 8) * R)
    alltoall = estimate()["bytes"]
    assert estimate()["stages"][0]["bytes"]["mpu_buffer"] == B * H * 256  # the LM head's sequence-parallel gather
    assert alltoall["moe_dispatch"] == B * H * (K_E * T + 2 * R)  # the all-to-all's, unchanged


def test_allgather_saved_permute_tensors_by_hand():
    """What a layer keeps for backward changes only in the permute: int64 indices [R] and the masked_select's
    input and bool mask [E/e, N] in place of the all-to-all's int64 [T, E + k_e]."""
    T, N, R, B = 128, 512, 512, 2
    gather, a2a = estimate("--moe-dispatcher", "allgather"), estimate()
    delta = gather["bytes"]["activations"] - a2a["bytes"]["activations"]
    per_layer = 8 * R + (B + 1) * N * E_ // 2 - 8 * T * (E_ + K_E)
    assert delta == L * per_layer  # p = 1: one micro batch in flight, L MoE layers


def test_allgather_only_under_megatron():
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        assert main(["estimate", *ARGS, "--recipe", "torchtitan", "--moe-dispatcher", "allgather"]) == 2
    assert "--moe-dispatcher allgather is Megatron-Core's" in err.getvalue()


def _gelu_moe(**extra) -> ModelShape:
    return ModelShape("gelu-moe", h=64, f=256, a=4, k=4, L=2, v=128, E=4, k_e=2, f_e=96, mlp="gelu", **extra)


def test_gelu_expert_parameters_and_tensors_by_hand():
    """A GeLU expert is fc1 [h, f_e] and fc2 [f_e, h] (no gate): 2 h f_e; its layer keeps the received rows
    [R, h], fc1's output, gelu's output, the probs [R, 1] and fc2's input ([R, f_e / t_e] each)."""
    from symbolic.components.moe_experts import expert_tensors
    from symbolic.config.switches import Switches
    from symbolic.config.symbols import B_a, C_f, b, c, f_e, h, k_e, s, t, t_e

    shape = _gelu_moe()
    assert shape.expert_count == 2 * 64 * 96
    parts = {p.name: p.expr for p in expert_tensors(Switches(mlp="gelu", moe=True))}
    R = C_f * k_e * s * b / (t * c) * t_e
    assert set(parts) == {"expert_input", "expert_fc1_output", "expert_act_output", "expert_probs", "expert_fc2_input"}
    total = sum(parts.values())
    assert (total - B_a * R * (h + 3 * f_e / t_e + 1)).simplify() == 0


def test_gelu_shared_experts_keep_fc1_output_and_gelu_output():
    """A GeLU shared expert beside GeLU routed experts (megatron-core 0.16.1 SharedExpertMLP, MLP.forward without
    bias_activation_fusion, as --disable-bias-linear leaves it): F.gelu keeps fc1's output and fc2 keeps its input,
    [s b / c, f_s / t] each, for the s b / c tokens gathered over t (exact, symbolic); expert biases stay refused."""
    from symbolic.components.moe import shared_tensors
    from symbolic.config.switches import Switches
    from symbolic.config.symbols import B_a, b, c, f_s, s, t

    assert _gelu_moe(f_s=64).f_s == 64
    parts = {p.name: p.expr for p in shared_tensors(Switches(mlp="gelu", moe=True, shared=True))}
    assert set(parts) == {"shared_fc1_output", "shared_fc2_input"}
    assert (sum(parts.values()) - 2 * B_a * s * b / c * f_s / t).simplify() == 0
    with pytest.raises(ConfigError, match="modelled without expert biases"):
        _gelu_moe(moe_bias=True)
