"""The values of the trainers' own options mem4d models (Training's recipe fields): what each accepts, with the
trainer's code it is read from; no sympy."""

from __future__ import annotations

# Megatron-Core's token dispatchers mem4d models (transformer/moe/token_dispatcher.py, megatron-core 0.16.1):
# MoEAlltoAllTokenDispatcher, MoEAllGatherTokenDispatcher (Megatron-LM's default) and MoEFlexTokenDispatcher with
# DeepEP (deepep: components/moe_flex.py); flex with HybridEP is not
MOE_DISPATCHERS = ("alltoall", "allgather", "deepep")
# Megatron-LM's layer implementations mem4d models: Transformer Engine's, and Megatron-Core's own (the local spec:
# tensor_parallel/layers.py linears, DotProductAttention, SequentialMLP experts; models/gpt/gpt_layer_specs.py)
TRANSFORMER_IMPLS = ("transformer_engine", "local")
# Megatron-LM --cuda-graph-impl values modelled: transformer_engine (per-layer graphs, megatron-core 0.16.1
# cuda_graphs.py TECudaGraphHelper); local (CudaGraphManager, full_iteration) is refused by the reader
CUDA_GRAPH_IMPLS = ("none", "transformer_engine")
CUDA_GRAPH_SCOPES = ("layer", "attn", "mlp", "moe", "moe_router", "moe_preprocess")  # megatron-core CudaGraphScope
