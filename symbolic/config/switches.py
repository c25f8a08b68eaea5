"""Switches: the discrete choices that change the form of the sympy expressions, derived from a Training and the
model's Architecture; no sympy."""

from __future__ import annotations

from dataclasses import astuple, dataclass

from .architecture import Architecture
from .choices import one_of
from .parallel import ZERO_STAGES, Sharding
from .training_checks import RECOMPUTE, SCHEDULES

BACKENDS = ("gpu", "cpu")  # compilers a compiled-step profile models: XLA:GPU, XLA:CPU
# switches formula --json shows only where they differ from their default (added after the recorded outputs)
QUIET = (
    "cuda_graph",
    "graph_scope",
    "tp_comm_overlap",
    "latent",
    "offload",
    "cpu_offload",
    "narrow_v",
    "swa",
    "swa_sinks",
    "srelu_fusion",
    "mtp_repeated",
    "native_ce",
    "bf16_layers",
)


@dataclass(frozen=True)
class Switches(Architecture, Sharding):
    """What shapes the expressions (everything numeric stays a symbol): the model's Architecture (its fields) and
    the training choices below; `of` derives it from a Training and a ModelShape."""

    recompute: str = "none"  # none | selective | full (Korthikanti et al. 2022)
    flash_attn: bool = True  # no s x s scores/softmax kept for backward
    sp: bool = True  # sequence parallel: non-TP regions sharded along s over t
    zero: int = 1  # ZeRO stage (config.parallel.ZERO_SHARDS: what it shards over d*c)
    overheads: bool = True  # add the often-neglected buffers (communicators, CUDA context, ...)
    backend: str = "gpu"  # whose compiled program a compiled-step profile models: gpu (XLA:GPU) or cpu (XLA:CPU)
    ac_every: bool = False  # torchtitan's per-layer selective checkpointing (every n_ac-th block), not op-level
    zero_init: bool = True  # DeepSpeed ZeRO-3 with zero.Init; False: every gathered weight stays to its backward
    grad_accum_fusion: bool = True  # Megatron-LM's gradient accumulation fusion: persistent dummy wgrad buffers
    dispatcher: str = "alltoall"  # Megatron-Core's MoE token dispatcher (Training.moe_dispatcher)
    local: bool = False  # Megatron-LM --transformer-impl local (Training.transformer_impl): Megatron-Core's own layers
    swiglu_fusion: bool = False  # Megatron-Core's fused SwiGLU (Training.swiglu_fusion): no SiLU(gate) kept
    srelu_fusion: bool = False  # its fused weighted squared ReLU of the experts (Training.srelu_fusion)
    muon: bool = False  # Megatron-Core's Muon (Training.optimizer): its 2-D layer weights B_o, the rest ADAM_BYTES
    schedule: str = "1f1b"  # pipeline schedule (Training.schedule): 1f1b, or gpipe (the jax profile only)
    modules: str = "core_attn"  # what selective recompute reruns, "+"-joined (Training.recompute_modules)
    fp8: bool = False  # FP8 (Training.fp8): Transformer Engine's under megatron (GEMM inputs saved quantized, B_q; FP8
    # weight copies), torchao's Float8 under torchtitan (what its compiled blocks save)
    compiled: bool = False  # torchtitan's blocks under torch.compile (Training.compile): what the partitioner saves
    fp8_rows: bool = False  # torchao's rowwise Float8 recipe (--fp8 rowwise): per-row fp32 scales among saved tensors
    fp8_gather: bool = False  # torchao's FSDP2 Float8 all-gather (Training.fp8_all_gather): FP8 gathered weights
    frozen_vision: bool = False  # the vision tower frozen (Training.freeze_vision): its weights alone
    cuda_graph: bool = False  # Transformer Engine's per-layer CUDA graphs (Training.cuda_graph): static inputs
    graph_scope: str = "layer"  # what they capture (Training.cuda_graph_scope)
    tp_comm_overlap: bool = False  # Transformer Engine's userbuffers (Training.tp_comm_overlap)
    offload: str = ""  # Megatron-Core's fine-grained activation offloading (Training.offload_modules), "+"-joined
    cpu_offload: int = 0  # layers whose activations TE's layer-level offloading moves (Training.cpu_offload_layers)
    native_ce: bool = (
        False  # Megatron-Core's compiled fused cross entropy (Training.native_ce): its backward's temporary
    )
    bf16_layers: bool = False  # FP8 with first/last layers in BF16 (Training.bf16_layers): Lb_r, Lbe_r of a stage

    def __post_init__(self):
        super().__post_init__()
        for name, allowed in (
            ("recompute", RECOMPUTE),
            ("backend", BACKENDS),
            ("zero", ZERO_STAGES),
            ("schedule", SCHEDULES),
        ):
            one_of(name, getattr(self, name), allowed)

    @classmethod
    def of(cls, training, overheads: bool = True, tied: bool = False, backend: str = "gpu", shape=None) -> "Switches":
        """The switches of a Training (its recompute, flash_attn, sp, zero, recipe options), with the overheads,
        tied and backend; given the ModelShape, also its Architecture (tied included) from it."""
        arch = {} if shape is None else Architecture.of(shape).features()
        return cls(
            recompute=training.recompute,
            flash_attn=training.flash_attn,
            sp=training.sp,
            zero=training.zero,
            overheads=overheads,
            tied=arch.pop("tied", tied),
            backend=backend,
            ac_every=training.ac_every is not None,
            zero_init=training.zero_init,
            grad_accum_fusion=training.grad_accum_fusion,
            dispatcher=training.moe_dispatcher,
            local=training.transformer_impl == "local",
            swiglu_fusion=training.swiglu_fusion,
            srelu_fusion=training.srelu_fusion,
            muon=training.optimizer == "muon",
            schedule=training.schedule,
            modules=training.recompute_modules.replace(",", "+"),
            fp8=training.fp8 != "none",
            compiled=training.compile,
            fp8_rows=training.fp8 == "rowwise",
            fp8_gather=training.fp8_all_gather,
            frozen_vision=training.freeze_vision,
            cuda_graph=training.cuda_graph != "none",
            graph_scope=training.cuda_graph_scope,
            tp_comm_overlap=training.tp_comm_overlap,
            offload=training.offload_modules.replace(",", "+"),
            cpu_offload=training.cpu_offload_layers,
            native_ce=training.native_ce,
            bf16_layers=training.fp8 != "none"
            and training.num_layers_at_start_in_bf16 + training.num_layers_at_end_in_bf16 > 0,
            **arch,
        )

    @property
    def layerwise(self) -> bool:
        """Muon with the distributed optimizer: Megatron-Core's layer-wise distributed optimizer (whole parameters
        dealt to the data-parallel ranks, components.layerwise)."""
        return self.muon and self.dist_opt

    def shown(self) -> dict:
        """The fields as formula --json shows them: those of QUIET only where they differ from their default (options
        added later leave the outputs of runs without them as they were)."""
        return {
            name: value
            for name, value in vars(self).items()
            if name not in QUIET or value != self.__dataclass_fields__[name].default
        }

    def tag(self) -> str:
        """Every field's value in order, booleans as 0/1, joined by '-': a file-name-safe name of these switches."""
        return "-".join(str(int(x)) if isinstance(x, bool) else str(x) for x in astuple(self))
