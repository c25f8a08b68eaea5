"""Switches: the discrete choices that change the form of the sympy expressions, derived from a Training and the
model's Architecture; no sympy."""

from __future__ import annotations

from dataclasses import astuple, dataclass, field, fields
from typing import Callable

from .architecture import Architecture
from .choices import one_of
from .parallel import ZERO_STAGES, Sharding
from .training import Training
from .training_checks import RECOMPUTE, SCHEDULES

BACKENDS = ("gpu", "cpu")  # compilers a compiled-step profile models: XLA:GPU, XLA:CPU


def recompute_layers(training) -> dict:
    """Switches.rc_layers and rc_block of a Training: Megatron-Core's --recompute-num-layers N under full recompute
    with its method; uniform N = 1 (and 0) is every layer alone, mem4d's plain full recompute."""
    n, block = training.recompute_num_layers, training.recompute_method == "block"
    if training.recompute != "full" or n == 0 or (n == 1 and not block):
        return {}
    return {"rc_layers": n, "rc_block": block}


def trained(read: Callable[[Training], object], doc: str):
    """A switch of the training's choices, declared once: how Switches.of reads it off a Training, its default that
    reading of Training's defaults (never restated here), and what it is."""
    return field(default=read(Training()), metadata={"doc": doc, "training": read})


@dataclass(frozen=True)
class Switches(Architecture, Sharding):
    """What shapes the expressions (everything numeric stays a symbol): the model's Architecture (its fields) and
    the training choices below; `of` derives it from a Training and a ModelShape."""

    recompute: str = trained(lambda t: t.recompute, "none | selective | full (Korthikanti et al. 2022)")
    flash_attn: bool = trained(lambda t: t.flash_attn, "no s x s scores/softmax kept for backward")
    sp: bool = trained(lambda t: t.sp, "sequence parallel: non-TP regions sharded along s over t")
    zero: int = trained(lambda t: t.zero, "ZeRO stage (config.parallel.ZERO_SHARDS: what it shards over d*c)")
    overheads: bool = True  # add the often-neglected buffers (communicators, CUDA context, ...)
    backend: str = "gpu"  # whose compiled program a compiled-step profile models: gpu (XLA:GPU) or cpu (XLA:CPU)
    ac_every: bool = trained(
        lambda t: t.ac_every is not None,
        "torchtitan's per-layer selective checkpointing (every n_ac-th block), not op-level",
    )
    zero_init: bool = trained(
        lambda t: t.zero_init, "DeepSpeed ZeRO-3 with zero.Init; False: every gathered weight stays to its backward"
    )
    grad_accum_fusion: bool = trained(
        lambda t: t.grad_accum_fusion, "Megatron-LM's gradient accumulation fusion: persistent dummy wgrad buffers"
    )
    dispatcher: str = trained(lambda t: t.moe_dispatcher, "Megatron-Core's MoE token dispatcher")
    local: bool = trained(
        lambda t: t.transformer_impl == "local", "Megatron-LM --transformer-impl local: Megatron-Core's own layers"
    )
    swiglu_fusion: bool = trained(lambda t: t.swiglu_fusion, "Megatron-Core's fused SwiGLU: no SiLU(gate) kept")
    srelu_fusion: bool = trained(lambda t: t.srelu_fusion, "its fused weighted squared ReLU of the experts")
    grouped_gemm: bool = trained(lambda t: t.moe_grouped_gemm, "the experts as Transformer Engine's GroupedLinear")
    sm90: bool = trained(
        lambda t: t.capability >= (9, 0),
        "the card's compute capability is 9.0 or later (Hopper, Blackwell): cuBLAS workspaces of 32 MiB (--gpu)",
    )
    muon: bool = trained(
        lambda t: t.optimizer == "muon", "Megatron-Core's Muon: its 2-D layer weights B_o, the rest ADAM_BYTES"
    )
    schedule: str = trained(lambda t: t.schedule, "pipeline schedule: 1f1b, or gpipe (the jax profile only)")
    modules: str = trained(
        lambda t: t.recompute_modules.replace(",", "+"), 'what selective recompute reruns, "+"-joined'
    )
    fp8: bool = trained(
        lambda t: t.fp8 != "none",
        "FP8: Transformer Engine's under megatron (GEMM inputs saved quantized, B_q; FP8 weight copies), torchao's "
        "Float8 under torchtitan (what its compiled blocks save)",
    )
    compiled: bool = trained(lambda t: t.compile, "torchtitan's blocks under torch.compile: what the partitioner saves")
    fp8_rows: bool = trained(
        lambda t: t.fp8 == "rowwise", "torchao's rowwise Float8 recipe: per-row fp32 scales among saved tensors"
    )
    fp8_gather: bool = trained(lambda t: t.fp8_all_gather, "torchao's FSDP2 Float8 all-gather: FP8 gathered weights")
    frozen_vision: bool = trained(lambda t: t.freeze_vision, "the vision tower frozen: its weights alone")
    cuda_graph: bool = trained(
        lambda t: t.cuda_graph != "none", "Transformer Engine's per-layer CUDA graphs: static inputs"
    )
    graph_scope: str = trained(lambda t: t.cuda_graph_scope, "what they capture")
    tp_comm_overlap: bool = trained(lambda t: t.tp_comm_overlap, "Transformer Engine's userbuffers")
    offload: str = trained(
        lambda t: t.offload_modules.replace(",", "+"),
        'Megatron-Core\'s fine-grained activation offloading, "+"-joined modules',
    )
    cpu_offload: int = trained(
        lambda t: t.cpu_offload_layers, "layers whose activations TE's layer-level offloading moves"
    )
    rc_layers: int = trained(
        lambda t: recompute_layers(t).get("rc_layers", 0),
        "full recompute's --recompute-num-layers N (0: every layer alone, uniform N = 1)",
    )
    rc_block: bool = trained(
        lambda t: recompute_layers(t).get("rc_block", False),
        "--recompute-method block: the first rc_layers layers of a stage, the rest keep everything",
    )
    fsdp_fp8: bool = trained(
        lambda t: t.zero == 3 and t.fp8_param_gather and t.fp8 != "none",
        "Megatron-FSDP (ZeRO-3) with FP8 parameters: their transposes discarded after each module",
    )
    native_ce: bool = trained(
        lambda t: t.native_ce, "Megatron-Core's compiled fused cross entropy: its backward's temporary"
    )
    bf16_layers: bool = trained(
        lambda t: t.fp8 != "none" and t.num_layers_at_start_in_bf16 + t.num_layers_at_end_in_bf16 > 0,
        "FP8 with first/last layers in BF16 (--first-last-layers-bf16): Lb_r, Lbe_r of a stage",
    )

    def __post_init__(self):
        for name, allowed in (
            ("recompute", RECOMPUTE),
            ("backend", BACKENDS),
            ("zero", ZERO_STAGES),
            ("schedule", SCHEDULES),
        ):
            one_of(name, getattr(self, name), allowed)

    @classmethod
    def of(cls, training, overheads: bool = True, tied: bool = False, backend: str = "gpu", shape=None) -> "Switches":
        """The switches of a Training (each `trained` switch read as declared), with the overheads, tied and
        backend; given the ModelShape, also its Architecture (tied included) from it."""
        arch = {} if shape is None else Architecture.of(shape).features()
        return cls(
            **{f.name: f.metadata["training"](training) for f in fields(cls) if "training" in f.metadata},
            overheads=overheads,
            tied=arch.pop("tied", tied),
            backend=backend,
            **arch,
        )

    @property
    def layerwise(self) -> bool:
        """Muon with the distributed optimizer: Megatron-Core's layer-wise distributed optimizer (whole parameters
        dealt to the data-parallel ranks, components.layerwise)."""
        return self.muon and self.dist_opt

    def shown(self) -> dict:
        """The fields as formula --json shows them: only those that differ from their default, so a new switch with a
        default changes no output (a reader takes Switches' defaults for the absent ones)."""
        return {name: value for name, value in vars(self).items() if value != self.__dataclass_fields__[name].default}

    def tag(self) -> str:
        """Every field's value in order, booleans as 0/1, joined by '-': a file-name-safe name of these switches."""
        return "-".join(str(int(x)) if isinstance(x, bool) else str(x) for x in astuple(self))
