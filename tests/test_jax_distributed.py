"""2 CPU processes x 4 devices under jax.distributed == 1 process x 8 devices: same XLA memory analysis, same loss.

Source of truth: the single-process run of the same SPMD program (SMALL below, d=2 p=2 t=2 c=1, s=64, m=2), made in
this test's process (jaxcheck.distributed.run on the first 8 of its 16 simulated devices, while the pair runs).
Memory analysis must match byte for byte; the loss to rtol 1e-6 (the same program on the same shards, only the
transport of collectives differs: gloo between processes). The check does not depend on the model's size (both
layouts run one program): SMALL, not the tiny preset (h 256, L 8, v 1,024), whose step at XLA:CPU's quickest options
was most of each process's 12 CPU-seconds (the three runs: 37.7 -> 25.5 worker CPU-seconds, 2026-12-07).
"""

import json
import socket
import subprocess
import sys

import pytest

from conftest import skip_if_not_enough_devices

# a Llama config.json of the smallest sizes the layout takes: 4 heads (t = 2), 4 layers (p = 2)
SMALL = {
    "_name_or_path": "t-distributed",
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 176,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_hidden_layers": 4,
    "vocab_size": 256,
    "tie_word_embeddings": False,
}
JOB = ["--dp", "2", "--pp", "2", "--tp", "2", "--cp", "1", "--seq", "64", "--gbs", "4", "--fast-compile"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(config: list[str], extra: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "jaxcheck.distributed", *config, *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _result(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    return json.loads(out.strip().splitlines()[-1])


def test_two_processes_match_one(tmp_path):
    from jaxcheck.distributed import parse, run

    skip_if_not_enough_devices(8)
    model = tmp_path / "config.json"
    model.write_text(json.dumps(SMALL))
    config = ["--model", str(model), *JOB]
    port = _free_port()
    procs = [
        _launch(
            config,
            [
                "--coordinator",
                f"127.0.0.1:{port}",
                "--num-processes",
                "2",
                "--process-id",
                str(i),
                "--local-devices",
                "4",
            ],
        )
        for i in range(2)
    ]
    one = run(parse(config))  # alongside the pair, which waits on its collectives; its mesh the first 8 devices
    two = [_result(p) for p in procs]
    assert one["processes"] == 1 and one["devices"] == 8
    for i, r in enumerate(two):
        assert r["process"] == i and r["processes"] == 2 and r["local_devices"] == 4 and r["devices"] == 8
        assert r["xla"] == one["xla"]
        assert r["arguments"] == one["arguments"]
        assert r["loss"] == pytest.approx(one["loss"], rel=1e-6)
