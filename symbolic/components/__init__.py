"""Memory components as sympy expressions in bytes per GPU: weights, gradients, optimizer, activations, pipeline ends, overheads."""

from .activations import layer_activation, layer_tensors
from .base import FP32, INT32, INT64, Component, total
from .ends import embedding_input_paper, output_layer, output_tensors, token_ids
from .gradients import gradients
from .optimizer import optimizer
from .overheads import overheads
from .schedule import RANK, in_flight, interleave_factor
from .weights import paper_params, stage_params, weights
from .zero import zero_buffers

__all__ = [
    "FP32",
    "INT32",
    "INT64",
    "Component",
    "total",
    "layer_activation",
    "layer_tensors",
    "embedding_input_paper",
    "output_layer",
    "output_tensors",
    "token_ids",
    "gradients",
    "optimizer",
    "overheads",
    "RANK",
    "in_flight",
    "interleave_factor",
    "paper_params",
    "stage_params",
    "weights",
    "zero_buffers",
]
