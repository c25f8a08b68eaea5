"""Megatron-Core's fine-grained activation offloading (--fine-grained-activation-offloading --offload-modules ...,
megatron-core 0.16.1 pipeline_parallel/fine_grained_activation_offload.py): each named module's forward runs under
saved-tensor hooks that copy every tensor it saves for backward, of at least min_offloaded_tensor_size elements, to
pinned host memory and free it on the GPU (ChunkOffloadHandler.tensor_need_offloading_checker, bulk_offload_group);
its backward reloads a layer's groups one group ahead of use (bulk_reload, on_group_start_backward). After the first
iteration one group of each module name, in the last layer of the micro batch whose backward comes first, is not
offloaded (PipelineOffloadManager.post_warmup_callback, the offload margin; should_bulk_offload keeps the last stage's
last layer alike): a layer's worth stays, and another is reloaded ahead, at the peak (offload_resident)."""

from __future__ import annotations

import sympy as sp

from ..config.switches import Switches
from ..config.symbols import B_a, B_q
from .base import Component

# Megatron-Core's --min-offloaded-tensor-size default (TransformerConfig.min_offloaded_tensor_size): elements
MIN_OFFLOADED = 1024 * 1024


def offloaded_names(sw: Switches, moe: bool) -> set[str]:
    """The saved tensors (by mem4d's names) that the offload modules' forwards save, each module as megatron-core
    0.16.1 wraps it: attn_norm the input norm where it is a module of its own (TENorm before latent attention; fused
    into linear_qkv otherwise, an IdentityOp: transformer_layer.py offload_attn_norm); qkv_linear
    get_query_key_value_tensors (the fused norm's input and output, the q/k norms' inputs; latent attention's
    down-projection inputs, latents and RoPE key); core_attn the attention core's q, k, v and unfused scores;
    attn_proj linear_proj's input (attention.py requires core_attn with it, so flash attention's own copy of its
    output goes too); mlp_norm the pre-MLP norm where it is a module (an MoE layer's TENorm); expert_fc1 the grouped
    fc1's input; moe_act the activation's inputs (experts.py bias_act_func under the moe_act context)."""
    modules = set(sw.offload.split("+")) if sw.offload else set()
    names = set()
    if "attn_norm" in modules and (sw.mla or sw.local):
        names.add("norm1_input")
    if "qkv_linear" in modules:
        names |= {
            "qkv_input",
            "q_down_input_fp8",
            "kv_down_input_fp8",
            "q_latent",
            "q_latent_normed",
            "kv_latent",
            "kv_latent_normed",
            "k_rope",
            "q_norm_input",
            "k_norm_input",
        }
        if not (sw.mla or sw.local):
            names.add("norm1_input")  # TELayerNormColumnParallelLinear keeps the norm's input inside linear_qkv
    if "core_attn" in modules:
        names |= {"q", "k", "v", "scores", "softmax"}
    if "attn_proj" in modules:
        names |= {"attn_out", "proj_input_fp8"}
    if "mlp_norm" in modules and (moe or sw.local):
        names.add("norm2_input")
    if "expert_fc1" in modules and moe:
        names.add("expert_input")
    if "moe_act" in modules and moe:
        names |= {"expert_fc1_output", "expert_act_output", "expert_probs", "expert_fc1_clamped"}
    return names


def _elements(part: Component) -> sp.Expr:
    """A saved tensor's elements on one GPU: its bytes at one byte an element."""
    return part.expr.xreplace({B_a: 1, B_q: 1})


def offloaded(parts: list[Component], sw: Switches, moe: bool = False) -> tuple[list[Component], list[Component]]:
    """A layer's saved tensors split into what stays on the GPU and what goes to the host: a tensor of an offload
    module goes when it has at least MIN_OFFLOADED elements (a Piecewise on its size), stays otherwise."""
    names = offloaded_names(sw, moe)
    if not names:
        return parts, []
    kept, gone = [], []
    for part in parts:
        if part.name not in names:
            kept.append(part)
            continue
        large = sp.Ge(_elements(part), MIN_OFFLOADED)
        kept.append(
            part._replace(
                expr=sp.Piecewise((0, large), (part.expr, True)),
                doc=part.doc + "; offloaded to the host when of at least 2^20 elements",
            )
        )
        gone.append(part._replace(expr=sp.Piecewise((part.expr, large), (0, True))))
    return kept, gone


def offload_resident(per_layer: sp.Expr) -> Component:
    """Fine-grained offloading's tensors on the GPU at the peak: two layers' worth of one micro batch's offloaded
    tensors (`per_layer`, the stage's largest layer kind): the last layer's groups the offload margin keeps, and the
    groups bulk_reload brings back one ahead of their backward."""
    return Component(
        "offload_resident",
        2 * per_layer,
        "two layers of one micro batch's offloaded tensors on the "
        "GPU: the groups the offload margin keeps and those reloaded ahead of their backward (megatron-core "
        "0.16.1 fine_grained_activation_offload.py post_warmup_callback, bulk_reload)",
    )


# Transformer Engine's layer-level offloading keeps a saved tensor of fewer elements on the GPU (TE 2.20.2
# pytorch/cpu_offload.py OffloadableLayerState._check_if_offload: 256 x 1024)
MIN_CPU_OFFLOADED = 256 * 1024


def cpu_offload_kept(parts: list[Component]) -> sp.Expr:
    """Bytes of one layer's saved tensors that Transformer Engine's layer-level offloading leaves on the GPU (those of
    fewer than MIN_CPU_OFFLOADED elements); the rest of the first N layers' tensors go to the host, and the
    DefaultOffloadSynchronizer releases and reloads them so that L - N layers' worth is on the GPU at once (TE 2.20.2
    pytorch/cpu_offload.py, _init_offload_synchronization_dicts; megatron-core 0.16.1 transformer_block.py
    get_cpu_offload_context with --cpu-offloading-num-layers N)."""
    return sp.Add(*(sp.Piecewise((0, sp.Ge(_elements(part), MIN_CPU_OFFLOADED)), (part.expr, True)) for part in parts))
