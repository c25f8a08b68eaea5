"""Profile `paper`: Megatron-LM training of a Llama model as modelled by Fujii, Watanabe, Yokota 2024 (arXiv 2411.06465)."""

from __future__ import annotations

import sympy as sp

from ...components import (
    RANK,
    Component,
    embedding_input_paper,
    gradients,
    layer_activation,
    optimizer,
    output_layer,
    overheads,
    stage_params,
    token_ids,
    weights,
    zero_buffers,
)
from ...components import layer_tensors as _layer_tensors
from ..shared import absent
from ..shared import in_flight, layer_tensors  # noqa: F401  (1F1B or interleaved 1F1B; a dense Llama layer)
from ...components.ends import dummy_wgrads, logits_source, native_ce_temporary, recompute_working_set
from ...components.experts import expert_states, experts_params
from ...components.layerwise import layerwise_expert_optimizer, layerwise_optimizer
from ...components.moe import dispatch_buffers, expert_bias_buffers, routing_state
from ...components.mpu import mpu_buffer
from ...components.mtp import mtp_activations, mtp_embedding_params, mtp_moe_layers, mtp_params
from ...components.bf16_layers import bf16_activations, bf16_params
from ...components.fp8 import fp8_weight_cache, fsdp_fp8_transposes
from ...components.zero import fsdp_window, largest_layer, largest_unit
from ...components.graphs import graph_buffers
from ...components.userbuffers import tp_comm_buffers
from ...components.activations import offloaded_tensors
from ...components.offload import cpu_offload_kept, offload_resident
from ...components.recompute_layers import held_layers, working_layers
from ...components.vision import vision_parts
from ...components.weights import (
    default_kinds,
    default_layers,
    end_params,
    head_at_p1,
    kind_cases,
    kind_terms,
    norm_params,
)
from ...config.switches import Switches
from ...config.symbols import h, n_mtp, p, s_p

TITLE = "Megatron-LM as in Fujii et al. 2024"
DESCRIPTION = (
    "bf16 weights (B_w), fp32 main gradients (B_g), fp32 master weights and Adam moments (B_o) sharded over d*c "
    "with the distributed optimizer (ZeRO-1; ZeRO-2 also shards gradients, ZeRO-3 also weights), 1F1B or "
    "interleaved pipeline schedule, Llama layers (RMSNorm, GQA, SwiGLU), and mixtures of experts as Megatron-Core "
    "lays them out (experts over e x t_e ranks, their states over the expert data-parallel group). At ZeRO-1 the "
    "total of a dense model reproduces the published closed form of the most loaded GPU; the stage breakdown places "
    "each tensor where Megatron-LM allocates it, with each stage's own layers, MoE layers and in-flight micro batches."
)


def moe_layer_tensors(sw: Switches) -> list[Component]:
    """The activation tensors one MoE layer keeps for one micro batch (none without experts)."""
    return _layer_tensors(sw, moe=True) if sw.moe else []


def linear_layer_tensors(sw: Switches) -> list[Component]:
    """The activation tensors one Gated DeltaNet layer keeps for one micro batch, with an MoE MLP where the model has
    experts (Qwen3-Next: every layer), else a dense one; none without Gated DeltaNet layers."""
    return _layer_tensors(sw, moe=sw.moe, mixer="gdn") if sw.gdn else []


def mamba_layer_tensors(sw: Switches) -> list[Component]:
    """The activation tensors one Mamba-2 layer keeps for one micro batch, with an MLP unless the model's layers
    are one-part blocks (Nemotron-H: a Mamba-2 mixer alone); none without Mamba-2 layers."""
    return _layer_tensors(sw, mixer="mamba", ffn=not sw.blocks) if sw.mamba else []


def _activations(micro: sp.Expr, layers: sp.Expr, moe_layers: sp.Expr, sw: Switches, kinds: dict) -> Component:
    """Per-layer tensors of the stage's layers, each of its kind: dense or MoE, and a hybrid's Gated DeltaNet,
    Mamba-2, MLP-alone and mixer-alone layers keeping their parts' tensors in place of a dense layer's
    (weights.kind_terms)."""
    per_layer = layers * layer_activation(sw)
    if sw.cpu_offload:  # a dense model at p = 1 (the rules): N of its layers keep their small tensors alone
        per_layer = (layers - sw.cpu_offload) * layer_activation(sw) + sw.cpu_offload * cpu_offload_kept(
            _layer_tensors(sw)
        )
    if sw.rc_layers:  # full recompute of N layers (the rules: a dense model, vpp = 1)
        per_layer = held_layers(sw, layers, layer_activation)
    if sw.moe:
        per_layer = (layers - moe_layers) * layer_activation(sw) + moe_layers * layer_activation(sw, moe=True)
    per_layer += kind_terms(sw, lambda mixer, ffn: layer_activation(sw, mixer=mixer, ffn=ffn), kinds)
    per_layer += bf16_activations(sw, kinds)  # the Lb_r layers run outside FP8 (--first-last-layers-bf16)
    offloaded = f"; {sw.cpu_offload} of them offloaded to the host but their small tensors (--cpu-offload-layers)"
    rc = f"; --recompute-num-layers {sw.rc_layers}"
    held = (", hybrid kinds" if kinds else "") + (rc if sw.rc_layers else "") + (offloaded if sw.cpu_offload else "")
    return Component(
        "activations",
        micro * per_layer,
        f"per-layer tensors x the stage's layers (dense and MoE{held}) x its in-flight micro batches (1F1B; "
        f"{sw.recompute} recompute)",
    )


def _states(
    stage: str, layers: sp.Expr, moe_layers: sp.Expr, sw: Switches, kinds: dict | None = None, ends: sp.Expr | int = 0
) -> tuple[list[Component], sp.Expr]:
    """Weights, gradients and optimizer states of a stage (its routed experts apart), and its parameters; the head's
    stage also holds the multi-token-prediction modules (and their MoE layers' experts); `ends`: end parameters
    besides the stage's own (the head the paper's first stage holds at p = 1)."""
    mtp = stage in ("last", "only")
    params = (
        stage_params(stage, sw, layers, moe_layers, kinds)
        + (mtp_params(sw) if mtp else 0)
        + (mtp_embedding_params(sw) if stage == "last" else 0)
        + ends
    )
    moe_layers = moe_layers + (mtp_moe_layers(sw) if mtp else 0)
    experts = expert_states(moe_layers, sw)
    everything = params + (moe_layers * experts_params(sw) if sw.moe else 0)
    cache = fp8_weight_cache(
        everything
        - end_params(stage, sw)
        - ends
        - (mtp_embedding_params(sw) if stage == "last" else 0)
        - bf16_params(sw, kinds),
        sw,
    )  # the layers' weights, no ends, none of the BF16 layers
    if sw.fsdp_fp8:  # Megatron-FSDP's FP8 parameters: the transposes of what is gathered alone
        gathered = fsdp_window(
            largest_unit(stage, sw, layers, moe_layers, kinds), largest_layer(sw, layers, moe_layers, kinds), everything
        )
        cache = fsdp_fp8_transposes(gathered, sw)
    adam = _muon_adam(stage, layers, sw) + (ends if sw.muon else 0)  # the head a p = 1 GPU holds: AdamW's too
    states = optimizer(params, sw, adam)
    if sw.layerwise:  # whole parameters dealt to the ranks (the rules leave MTP out of Muon)
        states = layerwise_optimizer(stage, layers, moe_layers, sw, at_p1=bool(ends))
        experts = [*experts[:2], layerwise_expert_optimizer(moe_layers, sw)] if experts else []
    return [weights(params, sw), gradients(params, sw), states, *experts, *cache], everything


def _muon_adam(stage: str, layers: sp.Expr, sw: Switches) -> sp.Expr:
    """Muon's AdamW part of a stage: the word embedding and LM head (is_embedding_or_output_parameter, megatron-core
    0.16.1 language_module.py) and the 1-D norms; learned positions are a 2-D weight left to Muon (none without)."""
    if not sw.muon:
        return sp.Integer(0)
    positions = s_p * h if sw.positions and stage in ("first", "only") else 0
    return end_params(stage, sw) - positions + layers * norm_params(sw)


def _moe_buffers(moe_layers: sp.Expr, sw: Switches) -> list[Component]:
    """The MoE dispatch buffers where the stage has MoE layers, and every MoE layer's routing state."""
    return (
        [part._replace(expr=sp.Piecewise((part.expr, moe_layers > 0), (0, True))) for part in dispatch_buffers(sw)]
        + routing_state(moe_layers, sw)
        + expert_bias_buffers(moe_layers, sw)
    )


def _working_set(sw: Switches, moe_layers: sp.Expr, layers: sp.Expr, kinds: dict) -> Component:
    """Full recompute's working set: a dense layer's, or where the stage has MoE layers the larger of the two kinds;
    in a hybrid the largest of the kinds of mixer and MLP the stage holds (weights.kind_cases)."""
    dense = recompute_working_set(sw)
    if sw.rc_layers:  # full recompute of N layers (the rules: a dense model, vpp = 1)
        return dense._replace(expr=working_layers(sw, layers) * dense.expr)
    if not kinds:
        if not sw.moe:
            return dense
        moe = recompute_working_set(sw, moe=True).expr
        return dense._replace(expr=sp.Piecewise((sp.Max(dense.expr, moe), moe_layers > 0), (dense.expr, True)))
    return dense._replace(
        expr=sp.Max(
            *(
                sp.Piecewise((recompute_working_set(sw, moe, mixer, ffn).expr, held), (0, True))
                for moe, mixer, ffn, held in kind_cases(sw, layers, moe_layers, kinds)
            )
        )
    )


def _offload_resident(sw: Switches, moe_layers: sp.Expr) -> list[Component]:
    """Fine-grained activation offloading's GPU-resident layers (components.offload), sized by a dense layer's
    offloaded tensors, or where the stage has MoE layers the larger kind's; with sliding-window layers of their own
    KV heads (Lw_r) the larger of the two attentions' (an upper bound where the stage has none); none without
    --offload-modules."""
    if not sw.offload:
        return []
    mixers = ("attention", "swa") if sw.swa else ("attention",)
    per_layer = sp.Max(*(offloaded_tensors(sw, mixer=mixer) for mixer in mixers))
    if sw.moe:
        per_layer = sp.Piecewise(
            (sp.Max(per_layer, *(offloaded_tensors(sw, moe=True, mixer=mixer) for mixer in mixers)), moe_layers > 0),
            (per_layer, True),
        )
    return [offload_resident(per_layer)]


def _with_overheads(parts: list[Component], params: sp.Expr, sw: Switches) -> list[Component]:
    """The overheads; the local implementation's GEMMs are PyTorch's alone: two cuBLAS workspaces, not three."""
    if not sw.overheads:
        return parts
    return parts + overheads(params, sp.Add(*(part.expr for part in parts)), sw, workspaces=2 if sw.local else 3)


def components(sw: Switches) -> list[Component]:
    """Most loaded GPU as the paper counts it, faithful to the published closed form: the first stage's weights,
    gradients and optimizer states (at p = 1 with the head it holds there, which the published form omits), min(m, p) in-flight micro batches of L/p layers, the embedding input counted as
    8*s*b*h bytes per micro batch (Megatron-LM holds 8*s*b bytes of ids) and the last stage's output layer and fp32
    logits on top (Megatron-LM places them on the last stage). The total ignores `tied` (the closed form charges one
    v x h matrix either way). With experts the stage holds L_e/p of its L/p layers as MoE layers (the average; the
    exact stages place each MoE layer where it is)."""
    layers, moe_layers = default_layers("first")
    kinds = default_kinds("first", sw)
    micro = in_flight(RANK["first"])
    # at p = 1 the first stage is the only one and holds the final norm and LM head too (the published form leaves
    # them out there, so its weights fell short of the exact stage's by B_w (h + h v / t))
    states, params = _states("first", layers, moe_layers, sw, kinds, head_at_p1(sw))
    parts = [
        *states,
        _activations(micro, layers, moe_layers, sw, kinds),
        embedding_input_paper(micro, sw),
        output_layer(sw),
        *zero_buffers("first", sw, layers, moe_layers, kinds, params),
        *_moe_buffers(moe_layers, sw),
        *_mtp_on_top(sw),
        *vision_parts("first", micro, sw),
        *graph_buffers(sw, micro, layers, moe_layers),
        *_offload_resident(sw, moe_layers),
    ]
    return _with_overheads(parts, params, sw) + tp_comm_buffers(sw)  # outside the pool: no fragmentation of theirs


def _mtp_on_top(sw: Switches) -> list[Component]:
    """The multi-token-prediction modules charged on top of the first stage, as the closed form charges the output
    layer: their states (with the embedding's copy they need when p > 1) and one micro batch of their tensors (the
    last stage's 1F1B count); none without them."""
    if not sw.mtp:
        return []
    params = mtp_params(sw) + sp.Piecewise((mtp_embedding_params(sw), p > 1), (0, True))
    experts = expert_states(mtp_moe_layers(sw), sw)
    return [
        weights(params, sw)._replace(name="mtp_weights"),
        gradients(params, sw)._replace(name="mtp_gradients"),
        optimizer(params, sw)._replace(name="mtp_optimizer"),
        *(part._replace(name="mtp_" + part.name) for part in experts),
        mtp_activations(sp.Integer(1), sw),
    ]


def stage_components(
    sw: Switches,
    stage: str,
    layers: sp.Expr | None = None,
    micro: sp.Expr | None = None,
    moe_layers: sp.Expr | None = None,
    kinds: dict | None = None,
) -> list[Component]:
    """Exact breakdown of one GPU of a pipeline stage (first, middle, last, or only at p = 1) holding `layers` layers
    (default L/p, L on the only stage), `moe_layers` of them MoE layers (default L_e/p, L_e on the only stage) and
    `micro` in-flight micro batches (default: the 1F1B count of the stage's representative rank, RANK), each tensor
    where Megatron-LM allocates it, with the two the closed form leaves out: the bf16 logits beside their fp32 copy
    on the head's stage, full recompute's working set; with tied embeddings the p = 1 stage holds one v x h matrix
    instead of two."""
    default = default_layers(stage)
    layers = default[0] if layers is None else layers
    moe_layers = default[1] if moe_layers is None else moe_layers
    kinds = default_kinds(stage, sw) if kinds is None else kinds
    micro = in_flight(RANK[stage]) if micro is None else micro
    states, params = _states(stage, layers, moe_layers, sw, kinds)
    has_embedding = stage in ("first", "only")
    has_head = stage in ("last", "only")
    ids = token_ids(micro) if has_embedding else absent("embedding_input")
    mtp = [mtp_activations(micro, sw) if has_head else absent("mtp_activations")] if sw.mtp else []
    head = output_layer(sw) if has_head else absent("output_layer")
    extra = ([logits_source(sw), *native_ce_temporary(sw)] if has_head else []) + [dummy_wgrads(sw, has_head)]
    buffered = moe_layers + (mtp_moe_layers(sw) if has_head else 0)
    parts = [
        *states,
        _activations(micro, layers, moe_layers, sw, kinds),
        ids,
        head,
        *extra,
        *mtp,
        *zero_buffers(stage, sw, layers, moe_layers, kinds, params),
        *_moe_buffers(buffered, sw),
        mpu_buffer(sw, has_head, buffered),
        _working_set(sw, buffered, layers + (1 if sw.mtp and has_head else 0), kinds),
        *vision_parts(stage, micro, sw),
        *graph_buffers(sw, micro, layers + (n_mtp if sw.mtp and has_head else 0), buffered),
        *_offload_resident(sw, buffered),
    ]
    return _with_overheads(parts, params, sw) + tp_comm_buffers(sw)
