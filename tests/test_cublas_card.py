"""The cuBLAS workspaces follow the card --gpu names: its compute capability (time/cards.py, declared once) sizes
Transformer Engine's (transformer-engine 2.9.0 pytorch/module/base.py:77-82 get_cublas_workspace_size_bytes: 32 MiB
from major 9, 4 MiB before) and PyTorch's default (aten/src/ATen/cuda/CublasHandlePool.cpp parseChosenWorkspaceSize:
32 MiB on major 9, 10 and 12, 4096 KiB x 2 + 16 KiB x 8 before; Megatron-LM's tests set CUBLAS_WORKSPACE_CONFIG
:4096:8, 32 MiB on any card). Exact byte counts; the capabilities checked against jaxcheck/targets' protos."""

import json
import re
from pathlib import Path

import pytest

from symbolic.cli.entry import main
from symbolic.components.overheads import overheads
from symbolic.components.userbuffers import tp_comm_buffers
from symbolic.config.errors import ConfigError
from symbolic.config.switches import Switches
from symbolic.config.symbols import t
from symbolic.config.training import Training
from symbolic.time.cards import CARDS

TARGETS = Path(__file__).resolve().parents[1] / "jaxcheck" / "targets"
MiB = 2**20


def _parts(sw: Switches, **kw) -> dict:
    return {p.name: p.expr for p in overheads(1, 1, sw, **kw)}


def test_the_cards_capability_is_the_one_its_xla_target_declares():
    for path in sorted(TARGETS.glob("*.txtpb")):
        block = re.search(r"cuda_compute_capability \{([^}]*)\}", path.read_text()).group(1)
        major, minor = (int(re.search(rf"{k}: (\d+)", block).group(1)) if k in block else 0 for k in ("major", "minor"))
        assert CARDS[path.stem].capability == (major, minor), path.stem


def test_below_sm90_transformer_engines_workspaces_are_4_mib():
    a100, h100 = Switches.of(Training(gpu="a100-80gb")), Switches.of(Training())
    assert (a100.sm90, h100.sm90, Switches.of(Training(gpu="b300-288gb")).sm90) == (False, True, True)
    moe = dict(moe=True, grouped_gemm=True)
    assert _parts(Switches(**moe, sm90=False))["cublas_workspaces"] == 2 * 32 * MiB + 4 * MiB
    assert _parts(Switches(**moe, sm90=False))["grouped_gemm_workspaces"] == 4 * 4 * MiB
    assert _parts(Switches(**moe))["cublas_workspaces"] == 3 * 32 * MiB
    assert _parts(Switches(**moe))["grouped_gemm_workspaces"] == 4 * 32 * MiB
    assert _parts(Switches(sm90=False), workspaces=2)["cublas_workspaces"] == 2 * 32 * MiB  # local: :4096:8
    titan = _parts(Switches(sm90=False), workspaces=2, megatron=False)["cublas_workspaces"]
    assert titan == 2 * (4096 * 1024 * 2 + 16 * 1024 * 8)  # PyTorch's default, no CUBLAS_WORKSPACE_CONFIG
    assert _parts(Switches(), workspaces=2, megatron=False)["cublas_workspaces"] == 2 * 32 * MiB


def test_userbuffers_widen_the_cards_workspace():
    def widened(sm90: bool) -> int:
        parts = {p.name: p.expr for p in tp_comm_buffers(Switches(tp_comm_overlap=True, sm90=sm90))}
        return int(parts["tp_comm_workspace"].subs(t, 2))

    assert widened(True) == 3 * (32 * MiB + 1024) - 32 * MiB
    assert widened(False) == 3 * 4 * MiB - 4 * MiB


def test_estimate_follows_gpu_and_systems_card(capsys):
    def workspaces(*flags) -> dict:
        assert (
            main(["estimate", "--model", "tiny-moe", "--ep", "2", "--dp", "2", "--moe-grouped-gemm", *flags, "--json"])
            == 0
        )
        out = json.loads(capsys.readouterr().out)
        return {k: v for k, v in out["bytes"].items() if "workspaces" in k} | {"gpu": out["config"].get("gpu")}

    assert workspaces() == {"cublas_workspaces": 96 * MiB, "grouped_gemm_workspaces": 128 * MiB, "gpu": None}
    a100 = {"cublas_workspaces": 68 * MiB, "grouped_gemm_workspaces": 16 * MiB, "gpu": "a100-80gb"}
    assert workspaces("--gpu", "a100-80gb") == a100
    assert workspaces("--system", "dgx-a100") == a100


def test_an_unknown_card_is_one_line():
    with pytest.raises(ConfigError, match="--gpu must be one of"):
        Training(gpu="a100")


def test_plan_follows_the_systems_card():
    """plan --system (the step-time ranking's) names the card every row runs on; without it, the default card."""
    import importlib

    from symbolic.cli.parser import Parser
    from symbolic.config.hfconfig import resolve_model
    from symbolic.plan.result import reference

    plan = importlib.import_module("symbolic.cli.plan")
    parser = Parser(prog="mem4d plan")
    plan.add_arguments(parser)
    for extra, gpu in (([], "h100-80gb"), (["--system", "dgx-a100"], "a100-80gb")):
        args = parser.parse_args(["--model", "tiny", "--gpus", "4", "--seq", "64", "--gbs", "8", *extra])
        assert reference(plan._cluster(args, resolve_model("tiny")), "paper").gpu == gpu
