"""CUDA graphs of Megatron-Core's layers captured by Transformer Engine (Megatron-LM --cuda-graph-impl
transformer_engine, --cuda-graph-modules): megatron-core 0.16.1 transformer/cuda_graphs.py TECudaGraphHelper
(_layer_is_graphable, _get_sample_arguments, _get_cuda_graph_input_data) and transformer-engine 2.9.0 pytorch/graph.py
make_graphed_callables with _reuse_graph_input_output_buffers (megatron passes it from TE 2.7). Each graphed layer gets
one forward and one backward graph per micro batch of the 1F1B order, all in one graph memory pool; the captures
allocate what the same layers' eager steps allocate (their saved tensors: the activations counted already, held in the
pool rather than PyTorch's general one), and beside them the static inputs the graphs read their arguments from."""

from __future__ import annotations

import sympy as sp

from ..config.dtypes import DTYPES
from ..config.switches import Switches
from ..config.symbols import b, c, h, s
from .base import Component, per_gpu_tokens

BF16 = sp.Integer(DTYPES["bf16"])  # GraphableMegatronModule.get_layer_static_inputs: hidden_states in torch.bfloat16
MOE_SCOPES = {"moe", "moe_router", "moe_preprocess"}


def graphed_layers(sw: Switches, layers: sp.Expr, moe_layers: sp.Expr) -> sp.Expr:
    """The stage's layers with graphs (_layer_is_graphable): every layer without a scope ("layer") or with attn (every
    TransformerLayer has attention), else the MoE layers under a moe scope and the dense ones under mlp."""
    scopes = set(sw.graph_scope.split("+"))
    if scopes & {"layer", "attn"}:
        return layers
    return (moe_layers if scopes & MOE_SCOPES else 0) + (layers - moe_layers if "mlp" in scopes else 0)


def graph_buffers(sw: Switches, micro: sp.Expr, layers: sp.Expr, moe_layers: sp.Expr) -> list[Component]:
    """The graphs' static inputs on a stage (none without --cuda-graph-impl transformer_engine): per graphed layer and
    micro batch in flight (a sample's buffers are reused once its backward is captured: the 1F1B in-flight count),
    the bf16 hidden states [s / (t c) with SP, b, h] and, with attention in the graph, the bool causal mask
    [b, 1, s / c, s] (TransformerLayer.get_layer_static_inputs); plus the one static gradient of the outputs shared
    by every graph of that signature (graph.py static_grad_outputs_dict)."""
    if not sw.cuda_graph:
        return []
    hidden = BF16 * per_gpu_tokens(s * b, False, sw) * h
    scopes = set(sw.graph_scope.split("+"))
    mask = b * s * s / c if scopes & {"layer", "attn"} else 0
    return [
        Component(
            "cuda_graph_static_inputs",
            micro * graphed_layers(sw, layers, moe_layers) * (hidden + mask) + hidden,
            "Transformer Engine's CUDA graphs (make_graphed_callables): each graphed layer's static "
            "bf16 hidden-state input"
            + (" and bool causal mask [b, 1, s / c, s]" if mask else "")
            + " per micro batch in flight, and one static output gradient (megatron-core 0.16.1 "
            "cuda_graphs.py, transformer-engine 2.9.0 graph.py)",
        )
    ]
