"""CPU activation offload in step time (symbolic/time/offload.py): the exposed copies against a step-by-step
simulation of TE 2.20.2's DefaultOffloadSynchronizer (one copy stream; exact), and the one-line refusal where
CARDS.tsv has no host-device bandwidth for the card."""

import pytest

from symbolic.config.errors import ConfigError
from symbolic.config.shapes import PRESETS as MODELS
from symbolic.config.training import Training
from symbolic.time import offload
from symbolic.time.evaluate import step_time
from symbolic.time.systems import SYSTEMS


def _simulated_stall(n: int, layers: int, copy: float, fwd: float) -> float:
    """Layer i's copy starts when layer i's forward is done and the stream is free; the compute stream waits for it
    at the start of layer L - N + i's forward (TE's release_activation_forward_gpu_memory)."""
    clock, stream, stall, done = 0.0, 0.0, 0.0, {}
    for layer in range(layers):
        i = layer - (layers - n)
        if 0 <= i < n and done[i] > clock:
            stall += done[i] - clock
            clock = done[i]
        clock += fwd
        if layer < n:
            stream = max(stream, clock) + copy
            done[layer] = stream
    return stall


@pytest.mark.parametrize(
    "n,layers,copy,fwd", [(2, 4, 3.0, 1.0), (40, 80, 0.5, 1.0), (20, 80, 5.0, 1.0), (3, 9, 2.5, 0.7)]
)
def test_exposed_copies_match_the_synchronizer(n, layers, copy, fwd):
    expr = offload.exposed("fwd").expr
    got = float(expr.subs({offload.N_off: n, offload.L_off: layers, offload.T_c: copy, offload.T_f: fwd}))
    assert got == pytest.approx(_simulated_stall(n, layers, copy, fwd), abs=1e-12)


def test_refused_without_a_host_link_and_timed_with_one(monkeypatch):
    shape = MODELS["llama3-8b"]
    job = Training(d=8, s=4096, b=1, gbs=64, cpu_offload_layers=16)
    with pytest.raises(ConfigError, match="no host-device bandwidth for h100-80gb"):
        step_time(shape, job, SYSTEMS["dgx-h100"])
    monkeypatch.setitem(offload.HOST_LINK, "h100-80gb", 1.0)  # 1 GB/s: every copy exposed but the last one's overlap
    out = step_time(shape, job, SYSTEMS["dgx-h100"])["breakdown"]
    copy = offload.layer_offloaded_bytes(shape, job) / 1e9
    per_layer = (out["T_lin"] + out["T_attn"]) / job.m / 32
    by_hand = sum(max(0, 16 * copy - 30 * share * per_layer) for share in (1 / 3, 2 / 3))
    assert out["T_off"] == pytest.approx(job.m * by_hand, rel=1e-9)
