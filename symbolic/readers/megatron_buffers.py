"""A Megatron-LM run's arguments for the buffers beside its step and its offloading: Transformer Engine's CUDA graphs
(--cuda-graph-impl, --cuda-graph-modules), --tp-comm-overlap, fine-grained and layer-level activation offloading,
under mem4d's flag names (megatron/training/arguments.py @ d98e8a64, Megatron-Core 0.16.1's TransformerConfig)."""

from __future__ import annotations

from ..config.offload import OFFLOAD_MODULES
from ..config.training import CUDA_GRAPH_IMPLS, CUDA_GRAPH_SCOPES
from .megatron_table import Args


def graph_flags(args: Args) -> dict:
    """--cuda-graph-impl transformer_engine with its --cuda-graph-modules (or the deprecated --cuda-graph-scope), and
    --tp-comm-overlap (components.graphs, components.userbuffers)."""
    impl = args.get("cuda_graph_impl") or "none"
    given = [dest for dest in ("cuda_graph_modules", "cuda_graph_scope_deprecated") if args.given(dest)]
    scopes = list(args.get(given[0]) or []) if given else []
    out = {"tp_comm_overlap": bool(args.get("tp_comm_overlap"))}
    if impl not in CUDA_GRAPH_IMPLS:
        args.refuse(
            "cuda_graph_impl",
            "Megatron-Core's own graphs (CudaGraphManager, full_iteration) are not modelled; "
            "transformer_engine's per-layer graphs are",
        )
        return out
    unknown = [scope for scope in scopes if scope not in CUDA_GRAPH_SCOPES]
    if unknown:
        args.refuse("cuda_graph_modules", f"{', '.join(unknown)}: mem4d models {', '.join(CUDA_GRAPH_SCOPES[1:])}")
    elif scopes and impl == "none":
        args.refuse("cuda_graph_modules", "without --cuda-graph-impl it does nothing (contradicting)")
    return {**out, "cuda_graph": impl, "cuda_graph_scope": ",".join(scopes) or "layer"}


def offload_flags(args: Args) -> dict:
    """--fine-grained-activation-offloading with --offload-modules (TransformerConfig asserts the list non-empty and
    known, and refuses it beside --cpu-offloading); the modules alone do nothing."""
    modules = list(args.get("offload_modules")) if args.given("offload_modules") else []
    if not args.get("fine_grained_activation_offloading"):
        if modules:
            args.refuse(
                "offload_modules", "without --fine-grained-activation-offloading it does nothing (contradicting)"
            )
        return {}
    unknown = [m for m in modules if m not in OFFLOAD_MODULES]
    if not modules:
        args.refuse(
            "fine_grained_activation_offloading",
            "without --offload-modules Megatron-Core refuses it (TransformerConfig asserts a non-empty list)",
        )
    elif unknown:
        args.refuse("offload_modules", f"{', '.join(unknown)}: Megatron-Core offloads {', '.join(OFFLOAD_MODULES)}")
    if not modules or unknown:
        return {}
    return {"offload_modules": ",".join(modules)}


def cpu_offload_flags(args: Args) -> dict:
    """--cpu-offloading-num-layers N (Megatron-LM turns cpu_offloading on with N > 0): Transformer Engine's
    layer-level activation offloading of N layers (TransformerConfig's own checks: the rule table's)."""
    layers = args.get("cpu_offloading_num_layers") or 0
    if layers < 0:
        args.refuse("cpu_offloading_num_layers", "must be 0 or more")
    return {"cpu_offload_layers": layers} if layers > 0 else {}
