"""The training config shared by symbolic/ and jaxcheck/ (parallel sizes, batch, precision, recompute); the pipeline's stage kinds are config.stages."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from . import layout, precision, rules
from .parallel import ZERO_OPTIMIZER, Parallel, Sharding
from .offload import OFFLOAD_MODULES  # noqa: F401  (OFFLOAD_MODULES: re-exported)
from .shapes import ModelShape
from .training_checks import check_fields, flag
from ..time.cards import DEFAULT_CARD, card
from .recipe_options import CUDA_GRAPH_IMPLS, CUDA_GRAPH_SCOPES, MOE_DISPATCHERS, TRANSFORMER_IMPLS  # noqa: F401


@dataclass(frozen=True)
class Training(Sharding):
    """One 4D-parallel training job; letters follow the glossary (d, t, p, c, vpp, s, b) plus the global batch.

    The fields that keep their flag's name map onto the glossary's letters as glossary.TRAINING_FIELD says: ep is e,
    etp is t_e (etp_size: t where etp is None), moe_capacity is C_f, ac_every is n_ac (n_ac: 1 where None)."""

    d: int = 1  # data parallel
    t: int = 1  # tensor parallel (sequence parallel uses the same ranks)
    p: int = 1  # pipeline parallel
    c: int = 1  # context parallel
    vpp: int = 1  # virtual pipeline stages per rank (interleaved 1F1B when > 1)
    s: int = 4096  # sequence length
    b: int = 1  # micro batch size
    gbs: int | None = None  # global batch in sequences; None means b * d * p (one full pipeline)
    recompute: str = "none"  # activation recomputation: none | selective | full
    sp: bool = True  # sequence parallel (Megatron-LM): non-TP regions sharded along s over t
    flash_attn: bool = True  # no s x s scores or softmax kept for backward
    zero: int = ZERO_OPTIMIZER  # ZeRO stage, one of ZERO_STAGES
    stage_layers: tuple[int, ...] | None = None  # layers of each pipeline rank (all its vpp chunks); None: L/p each
    pipeline_layout: str | None = None  # Megatron-Core --pipeline-model-parallel-layout: each virtual stage's E t m L
    account_embedding: bool = False  # Megatron-Core --account-for-embedding-in-pipeline-split: E a pipeline unit
    account_loss: bool = False  # Megatron-Core --account-for-loss-in-pipeline-split: the loss a pipeline unit
    ep: int = 1  # e: expert parallel, the routed experts of a layer split over ep ranks (Megatron-Core)
    etp: int | None = None  # t_e: expert tensor parallel, each expert split over etp ranks; None: t (Megatron-Core)
    moe_capacity: float = 1.0  # C_f: tokens an expert receives over an even share (capacity factor)
    moe_dispatcher: str = "alltoall"  # Megatron-Core --moe-token-dispatcher-type, one of MOE_DISPATCHERS
    transformer_impl: str = "transformer_engine"  # Megatron-LM --transformer-impl, one of TRANSFORMER_IMPLS
    swiglu_fusion: bool = False  # Megatron-LM --bias-swiglu-fusion (its default with --swiglu): fc1's output alone kept
    srelu_fusion: bool = False  # Megatron-LM --use-fused-weighted-squared-relu: squared-ReLU experts keep fc1's output
    moe_grouped_gemm: bool = False  # Megatron-LM --moe-grouped-gemm: TE GroupedLinear experts, 4 more cuBLAS workspaces
    ac_every: int | None = None  # n_ac: torchtitan's selective per-layer checkpointing, every n-th block (else op)
    zero_init: bool = True  # DeepSpeed ZeRO-3: the model built under deepspeed.zero.Init (its memory-efficient linear)
    grad_accum_fusion: bool = True  # Megatron-LM --gradient-accumulation-fusion (its default): TE's dummy wgrads
    schedule: str = "1f1b"  # pipeline schedule, one of SCHEDULES: 1F1B (Megatron-LM's), or GPipe (jaxcheck only)
    recompute_modules: str = "core_attn"  # what selective recompute reruns, comma-separated RECOMPUTE_MODULES
    fp8: str = "none"  # Megatron-LM --fp8-recipe with Transformer Engine (precision.FP8_RECIPES), or none
    fp8_param_gather: bool = False  # Megatron-LM --fp8-param-gather: the weights kept in FP8 (B_w = 1, MXFP8 1 + 1/32)
    fp8_transpose: bool = True  # TE's Float8Tensors keep a transposed copy: not on Blackwell (precision.FLOAT8_RECIPES)
    compile: bool = False  # torchtitan --compile.enable: each TransformerBlock under torch.compile
    fp8_all_gather: bool = False  # torchtitan --float8.enable_fsdp_float8_all_gather: FSDP2 gathers FP8 weights
    image_tokens: int = 0  # n_v: image tokens per sample through a multimodal model's vision tower (0: text only)
    freeze_vision: bool = False  # the vision tower frozen: its weights alone, no gradients, states or activations
    cuda_graph: str = "none"  # Megatron-LM --cuda-graph-impl, one of CUDA_GRAPH_IMPLS (components.graphs)
    cuda_graph_scope: str = "layer"  # --cuda-graph-modules, "+"-joined CUDA_GRAPH_SCOPES; layer: whole layers
    tp_comm_overlap: bool = False  # Megatron-LM --tp-comm-overlap: Transformer Engine's userbuffers
    ep_overlap: bool = False  # Megatron-LM --overlap-moe-expert-parallel-comm: the combined 1F1B (layout.held_combined)
    native_ce: bool = False  # Megatron-LM --cross-entropy-loss-fusion, impl native: compiled (ends.native_ce_temporary)
    offload_modules: str = (
        ""  # Megatron-Core --offload-modules under --fine-grained-activation-offloading (OFFLOAD_MODULES)
    )
    cpu_offload_layers: int = 0  # Megatron-Core --cpu-offloading-num-layers: TE's layer-level activation offloading
    recompute_num_layers: int = 0  # Megatron-Core --recompute-num-layers under full recompute (0: every layer alone)
    recompute_method: str = "uniform"  # Megatron-Core --recompute-method: uniform (chunks of N) | block (first N)
    # Megatron-LM --first-last-layers-bf16 with --num-layers-at-start-in-bf16 / --num-layers-at-end-in-bf16: the first
    # and last decoder layers built and run outside the FP8/FP4 context (0 and 0: none)
    num_layers_at_start_in_bf16: int = 0
    num_layers_at_end_in_bf16: int = 0
    gpu: str = DEFAULT_CARD  # the card it runs on (time.cards: its compute capability sizes the cuBLAS workspaces)
    # precision and optimizer (config.precision; the defaults are Megatron-LM's bf16 mixed precision, MEGATRON)
    weight_dtype: str = precision.MEGATRON["weight_dtype"]  # B_w: the model's weights as the step computes with them
    grad_dtype: str = precision.MEGATRON["grad_dtype"]  # B_g: the main gradients
    master_weights: bool = precision.MEGATRON["master_weights"]  # an fp32 master copy in the optimizer (part of B_o)
    optimizer: str = precision.MEGATRON["optimizer"]  # adamw | sgd | adamw8bit | muon: the moments (part of B_o)
    moment_dtype: str = precision.MEGATRON["moment_dtype"]  # the moments' dtype (Megatron-Core --exp-avg-dtype)
    act_dtype: str = precision.MEGATRON["act_dtype"]  # B_a: activations
    logits: str = precision.MEGATRON["logits"]  # B_l: what the loss keeps of the logits, fp32 | bf16 | none
    weight_bytes: int = field(init=False)  # B_w, B_g, B_o, B_a, B_l: the byte widths of the choices above
    grad_bytes: int = field(init=False)
    opt_bytes: float = field(init=False)
    act_bytes: int = field(init=False)
    logit_bytes: int = field(init=False)

    def __post_init__(self):
        check_fields(self)  # training_checks.py: every field, one line each; the widths set

    @property
    def chunked(self) -> bool:
        """Whether Megatron-Core places the layers (--pipeline-layout or --account-for-*), chunks of their own sizes."""
        return self.pipeline_layout is not None or self.account_embedding or self.account_loss

    uneven = property(
        lambda self: self.stage_layers is not None or self.chunked,
        doc="Whether the ranks' layers are given (--stage-layers) or placed (chunked), not L/p each.",
    )
    chunks = layout.chunks  # each rank's vpp chunks' layers
    held = layout.held  # where chunked under vpp, each rank's m_r as the interleaved schedule holds its chunks
    held_weighted = layout.held_weighted  # the same with each chunk weighed by its bytes (layers of several kinds)

    @property
    def quant_bytes(self) -> float:
        """B_q: bytes of a GEMM input saved for backward, quantized under --fp8 (B_a without it)."""
        return precision.fp8_bytes(self.fp8, self.act_bytes, self.fp8_param_gather)[0]

    @property
    def cache_bytes(self) -> float:
        """B_c: bytes per weight element of Transformer Engine's cached FP8 weight copies (0 without --fp8)."""
        return precision.fp8_bytes(self.fp8, self.act_bytes, self.fp8_param_gather, self.fp8_transpose)[1]

    @property
    def capability(self) -> tuple[int, int]:
        """The CUDA compute capability of the card it runs on (time.cards.Card.capability)."""
        return card(self.gpu).capability

    @property
    def etp_size(self) -> int:
        """t_e: the expert tensor-parallel size, etp or (Megatron-Core's default) t."""
        return self.t if self.etp is None else self.etp

    @property
    def parallel(self) -> Parallel:
        """The parallel degrees as one value, with the groups they make (config.parallel)."""
        return Parallel(self.d, self.t, self.p, self.c, self.ep, self.etp_size)

    @property
    def edp(self) -> int:
        """Expert data-parallel size (Parallel.edp; the rule table checks that e t_e divides d t c)."""
        return self.parallel.edp

    @property
    def n_ac(self) -> int:
        """n_ac: every n_ac-th block fully checkpointed (--ac-every; 1 when not set, where no expression reads it)."""
        return self.ac_every or 1

    @property
    def m(self) -> int:
        """Micro batches per step per data-parallel rank: gbs / (b * d)."""
        return self.p if self.gbs is None else self.gbs // (self.b * self.d)

    @property
    def global_batch(self) -> int:
        return self.m * self.b * self.d

    @property
    def world(self) -> int:
        """GPUs (devices) in the job: d * t * p * c (Parallel.world)."""
        return self.parallel.world

    def layers(self, L: int) -> tuple[int, ...]:
        """Layers on each pipeline rank: as placed (chunked), stage_layers, or L/p each (the caller checked p | L)."""
        return tuple(map(sum, self.chunks(L))) if self.chunked else self.stage_layers or (L // self.p,) * self.p

    def layer_ranges(self, L: int) -> tuple[tuple[range, ...], ...]:
        """The model layers each pipeline rank holds, as vpp ranges per rank: chunk j of rank r is virtual stage
        j p + r, of layers(L)[r] / vpp layers, the virtual stages in model order (Megatron-LM's interleaving)."""
        sizes = self.chunks(L)
        out, start = [[] for _ in range(self.p)], 0
        for j in range(self.vpp):
            for r in range(self.p):
                out[r].append(range(start, start + sizes[r][j]))
                start += sizes[r][j]
        return tuple(tuple(ranges) for ranges in out)

    def kind_layers(self, shape: ModelShape) -> tuple[dict[str, int], ...]:
        """Each pipeline rank's layers of each kind a stage counts apart (config.kinds: Le_r, Lg_r, Lm_r, Lo_r,
        Ln_r, and the BF16 layers Lb_r, Lbe_r)."""
        from .kinds import counts_in

        bf16 = self.bf16_layers(shape.L)
        return tuple(counts_in(shape, ranges, bf16) for ranges in self.layer_ranges(shape.L))

    def bf16_layers(self, L: int) -> frozenset[int]:
        """The decoder layers (global indices) run outside the FP8 context: 0 .. n_start - 1 and L - n_end .. L - 1
        (megatron-core 0.16.1 fp8_utils.py is_first_last_bf16_layer); none without FP8."""
        if self.fp8 == "none":
            return frozenset()
        start, end = self.num_layers_at_start_in_bf16, self.num_layers_at_end_in_bf16
        return frozenset(i for i in range(L) if i < start or i >= L - end)

    def check(self, shape: ModelShape, scope: str = "all") -> "Training":
        """Raise a one-line ConfigError (BrokenRule) if the model cannot be split this way, by the rules of `scope`
        ("all": every profile; "jax": also jaxcheck's own limits); return self."""
        from ..recipes.registry import select  # the one table: the shared rows and each recipe's

        rules.check(rules.letters(self, shape), select(scope))
        return self

    def flags(self, widths: bool = True, moe: bool = True) -> dict:
        """Every field under its CLI flag name (gbs as given, None for one full pipeline); `widths`: with the byte
        widths; `moe`: with the expert fields (ep, etp, moe_capacity)."""
        return {
            flag(f.name): getattr(self, f.name)
            for f in fields(self)
            if (widths or f.name not in (*precision.FIELDS, *WIDTH_FIELDS, *RECIPE_FIELDS))
            and (moe or f.name not in MOE_FIELDS)
            and not (f.name in RECIPE_FIELDS and getattr(self, f.name) == RECIPE_FIELDS[f.name])
        }

    def as_json(self, shape: ModelShape, widths: bool = True) -> dict:
        """The "config" object of every --json output: "model", each field under its flag name (gbs as used), m;
        the expert fields only for a model with experts (etp as used: t unless given)."""
        out = {"model": shape.name}
        for key, value in self.flags(widths, shape.moe).items():
            if key == "etp":
                value = self.etp_size
            out[key] = self.global_batch if key == "gbs" else list(value) if key == "stage_layers" and value else value
            if key == "gbs":
                out["m"] = self.m
        return out


WIDTH_FIELDS = ("weight_bytes", "grad_bytes", "opt_bytes", "act_bytes", "logit_bytes")  # derived: not arguments
MOE_FIELDS = ("ep", "etp", "moe_capacity")  # what only a model with experts shows in its config
# one trainer's (or jaxcheck's) options: shown (and checked by the rule table) where not at these values
RECIPE_FIELDS = {
    name: getattr(Training, name)  # their defaults: the class attributes dataclass sets
    for name in (
        "ac_every",
        "zero_init",
        "grad_accum_fusion",
        "moe_dispatcher",
        "transformer_impl",
        "swiglu_fusion",
        "srelu_fusion",
        "moe_grouped_gemm",
        "schedule",
        "recompute_modules",
        "fp8",
        "fp8_param_gather",
        "compile",
        "fp8_all_gather",
        "image_tokens",
        "freeze_vision",
        "cuda_graph",
        "cuda_graph_scope",
        "tp_comm_overlap",
        "ep_overlap",
        "native_ce",
        "offload_modules",
        "cpu_offload_layers",
        "recompute_num_layers",
        "recompute_method",
        "num_layers_at_start_in_bf16",
        "num_layers_at_end_in_bf16",
        "pipeline_layout",
        "account_embedding",
        "account_loss",
        "fp8_transpose",
        "gpu",
    )
}


def training_from_json(config: dict) -> Training:
    """The Training of a config keyed by flag names (--json "config", a sweep grid point, argparse's namespace);
    keys that are no Training flag (model, m, param_dtype, ...) are ignored, missing ones take the defaults."""
    return Training(**{f.name: config[flag(f.name)] for f in fields(Training) if f.init and flag(f.name) in config})
