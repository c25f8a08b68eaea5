"""2 CPU processes x 4 devices under jax.distributed == 1 process x 8 devices: same XLA memory analysis, same loss.

Source of truth: the single-process run of the same SPMD program (tiny preset, d=2 p=2 t=2 c=1, s=64, m=2). Memory
analysis must match byte for byte; the loss to rtol 1e-6 (the same program on the same shards, only the transport of
collectives differs: gloo between processes).
"""
import json
import socket
import subprocess
import sys

import pytest

CONFIG = ["--model", "tiny", "--dp", "2", "--pp", "2", "--tp", "2", "--cp", "1", "--seq", "64", "--gbs", "4",
          "--fast-compile"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(extra: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "jaxcheck.distributed", *CONFIG, *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _result(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    return json.loads(out.strip().splitlines()[-1])


def test_two_processes_match_one():
    port = _free_port()
    procs = [_launch(["--coordinator", f"127.0.0.1:{port}", "--num-processes", "2", "--process-id", str(i),
                      "--local-devices", "4"]) for i in range(2)]
    single = _launch(["--local-devices", "8"])  # alongside the pair, which waits on its collectives
    one = _result(single)
    two = [_result(p) for p in procs]
    assert one["processes"] == 1 and one["local_devices"] == 8
    for i, r in enumerate(two):
        assert r["process"] == i and r["processes"] == 2 and r["local_devices"] == 4 and r["devices"] == 8
        assert r["xla"] == one["xla"]
        assert r["arguments"] == one["arguments"]
        assert r["loss"] == pytest.approx(one["loss"], rel=1e-6)
