"""Transformer Engine's per-layer CUDA graphs and its TP-comm-overlap userbuffers, by hand on a tiny dense model.

Source of truth: megatron-core 0.16.1 transformer/cuda_graphs.py (TECudaGraphHelper: a bf16 hidden-states input
[s / (t c), b, h] per graphed layer and micro batch in flight, TransformerLayer.get_layer_static_inputs' bool mask
[b, 1, s / c, s] when attention is graphed) and transformer-engine 2.9.0 pytorch/graph.py (one shared static output
gradient) and module/base.py initialize_ub (12 buffers of [s b / c, h]: 8 uint8 under FP8, the rest bf16; the cuBLAS
workspace tripled); Megatron-LM's reader classification. Exact bytes."""

import contextlib
import io
import json
from pathlib import Path

import pytest
import sympy as sp

from symbolic.cli.entry import main
from symbolic.components.graphs import graph_buffers
from symbolic.components.userbuffers import tp_comm_buffers
from symbolic.config.switches import Switches
from symbolic.config.symbols import b, c, h, s, t

H, S = 256, 512  # the tiny preset: h = 256, 8 layers (4 a stage at p = 2); s = 512, b = 1, c = 1
MEASURED = Path(__file__).resolve().parents[2] / "shared" / "data" / "measured" / "megatron"
AT = {s: S, b: 1, c: 1, h: H, t: 2}


def test_the_whole_estimate_holds_both_where_megatron_allocates_them():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert (
            main(
                [
                    "estimate",
                    "--model",
                    "tiny",
                    "--seq",
                    str(S),
                    "--tp",
                    "2",
                    "--pp",
                    "2",
                    "--gbs",
                    "8",
                    "--json",
                    "--cuda-graph",
                    "transformer_engine",
                    "--tp-comm-overlap",
                ]
            )
            == 0
        )
    report = json.loads(out.getvalue())
    got = {st["stage"]: st["bytes"] for st in report["stages"]}
    hidden, mask = 2 * S // 2 * H, S * S  # bf16 [s / t, 1, h] with SP; bool [1, 1, s, s]
    # the first of p = 2 stages: 2 micro batches in flight, L / p = 4 layers; the last: 1 and 4
    assert got["first"]["cuda_graph_static_inputs"] == 2 * 4 * (hidden + mask) + hidden
    assert got["last"]["cuda_graph_static_inputs"] == 1 * 4 * (hidden + mask) + hidden
    assert got["first"]["tp_comm_buffers"] == got["last"]["tp_comm_buffers"] == 12 * 2 * S * H  # bf16, no FP8
    assert got["first"]["tp_comm_workspace"] == 3 * (32 * 2**20 + 1024) - 32 * 2**20
    # registered by userbuffers, outside PyTorch's pool: device bytes, not allocated ones
    memory = report["rank"]["memory"]
    assert memory["device_bytes"] - memory["reserved_bytes"] >= got[report["rank"]["stage"]]["tp_comm_buffers"]


def test_the_scope_picks_the_graphed_layers_and_the_mask():
    micro, layers, moe_layers = sp.Integer(2), sp.Integer(4), sp.Integer(3)
    hidden = 2 * S // 2 * H

    def static(scope: str) -> int:
        sw = Switches(cuda_graph=True, graph_scope=scope, moe=True)
        return int(graph_buffers(sw, micro, layers, moe_layers)[0].expr.subs(AT))

    assert static("attn") == static("layer") == 2 * 4 * (hidden + S * S) + hidden
    assert static("moe_router+moe_preprocess") == 2 * 3 * hidden + hidden  # the MoE layers, no attention: no mask
    assert static("mlp") == 2 * 1 * hidden + hidden  # the dense layer
    assert graph_buffers(Switches(), micro, layers, moe_layers) == []


def test_userbuffers_under_fp8_and_at_t_1():
    fp8 = tp_comm_buffers(Switches(tp_comm_overlap=True, fp8=True))[0].expr
    assert fp8.subs(AT) == (8 * 1 + 4 * 2) * S * H  # the 8 all-gather buffers in uint8
    assert fp8.subs({**AT, t: 1}) == 0  # no TP communication to overlap
    assert tp_comm_buffers(Switches()) == []


def test_the_reader_takes_te_graphs_and_refuses_local_ones(tmp_path):
    case = MEASURED / "moe__gpt3_moe_mcore_te_tp4_ep2_etp2_pp2_scoped_cudagraph.model_config.yaml"
    if not case.exists():
        pytest.skip(f"reference data absent: {case}")
    from symbolic.readers.megatron import collect
    from symbolic.readers.megatron_buffers import graph_flags

    args = collect(case)
    assert graph_flags(args) == {
        "tp_comm_overlap": False,
        "cuda_graph": "transformer_engine",
        "cuda_graph_scope": "attn,mlp,moe_router,moe_preprocess",
    }
    assert not [p for p in args.problems if "cuda-graph" in p]
    local = tmp_path / "local.yaml"
    local.write_text(case.read_text().replace("--cuda-graph-impl: transformer_engine", "--cuda-graph-impl: local"))
    args = collect(local)
    graph_flags(args)
    assert any(p.startswith("--cuda-graph-impl local (Megatron-Core's own graphs") for p in args.problems)
