"""Switches: the discrete choices that change the form of the sympy expressions, derived from a Training; no sympy."""
from __future__ import annotations

from dataclasses import astuple, dataclass

from .errors import ConfigError
from .shapes import MLPS, NORMS, QK_NORMS
from .parallel import ZERO_STAGES, Sharding
from .training import RECOMPUTE, SCHEDULES

BACKENDS = ("gpu", "cpu")  # compilers a compiled-step profile models: XLA:GPU, XLA:CPU


@dataclass(frozen=True)
class Switches(Sharding):
    """What shapes the expressions (everything numeric stays a symbol); `of` derives it from a Training."""

    recompute: str = "none"  # none | selective | full (Korthikanti et al. 2022)
    flash_attn: bool = True  # no s x s scores/softmax kept for backward
    sp: bool = True  # sequence parallel: non-TP regions sharded along s over t
    zero: int = 1  # ZeRO stage: 1 shards optimizer states over d*c (Megatron's distributed optimizer)
    overheads: bool = True  # add the often-neglected buffers (communicators, CUDA context, ...)
    tied: bool = False  # LM head shares the embedding matrix: one v x h matrix on the p = 1 "only" stage
    backend: str = "gpu"  # whose compiled program a compiled-step profile models: gpu (XLA:GPU) or cpu (XLA:CPU)
    # the model's architecture beyond the letters (ModelShape): what adds or drops terms
    moe: bool = False  # routed experts (E > 0) in L_e of the L layers
    shared: bool = False  # shared experts of width f_s in every MoE layer
    shared_gate: bool = False  # a sigmoid gate [h, 1] on the shared experts' output (Qwen2-MoE)
    qk_norm: str = "none"  # RMSNorm on Q and K: none, head (over dh, Qwen3), full (over a dh and k dh, OLMoE)
    qkv_bias: bool = False  # biases on Q, K, V
    o_bias: bool = False  # a bias on the output projection
    mlp_bias: bool = False  # biases on gate, up, down of a dense MLP
    mlp: str = "swiglu"  # a dense layer's MLP: swiglu (3 matrices) or gelu (2, GPT)
    norm: str = "rms"  # rms (a weight) or layer (a weight and a bias)
    positions: bool = False  # learned absolute position embeddings (s_p rows of h) on the first stage
    dropout: bool = False  # dropout masks (1 byte each) kept for backward
    ac_every: bool = False  # torchtitan's per-layer selective checkpointing (every n_ac-th block), not op-level
    zero_init: bool = True  # DeepSpeed ZeRO-3 with zero.Init; False: every gathered weight stays to its backward
    grad_accum_fusion: bool = True  # Megatron-LM's gradient accumulation fusion: persistent dummy wgrad buffers
    schedule: str = "1f1b"  # pipeline schedule (Training.schedule): 1f1b, or gpipe (the jax profile only)
    modules: str = "core_attn"  # what selective recompute reruns, "+"-joined (Training.recompute_modules)
    mla: bool = False  # multi-head latent attention (kv_r > 0) in place of GQA
    q_lora: bool = False  # MLA's queries through a latent of rank q_r (else a plain h x a (dh + d_r) projection)
    mtp: bool = False  # n_mtp multi-token-prediction modules on the last stage
    mtp_moe: bool = False  # their layers have routed experts (they repeat the last layer's kind)
    expert_bias: bool = False  # each MoE layer keeps a [E] routing-score correction bias (a buffer, not trained)
    sigmoid: bool = False  # sigmoid router scores: the routing and the aux loss each keep their own [T, E]

    def __post_init__(self):
        if self.recompute not in RECOMPUTE:
            raise ConfigError(f"recompute must be one of {', '.join(RECOMPUTE)}, got {self.recompute!r}")
        if self.backend not in BACKENDS:
            raise ConfigError(f"backend must be one of {', '.join(BACKENDS)}, got {self.backend!r}")
        if isinstance(self.zero, bool) or self.zero not in ZERO_STAGES:
            raise ConfigError(f"zero must be one of {', '.join(map(str, ZERO_STAGES))}, got {self.zero!r}")
        if self.qk_norm not in QK_NORMS:
            raise ConfigError(f"qk_norm must be one of {', '.join(QK_NORMS)}, got {self.qk_norm!r}")
        if self.schedule not in SCHEDULES:
            raise ConfigError(f"schedule must be one of {', '.join(SCHEDULES)}, got {self.schedule!r}")
        if self.mlp not in MLPS or self.norm not in NORMS:
            raise ConfigError(f"mlp must be one of {', '.join(MLPS)} and norm one of {', '.join(NORMS)}, got "
                              f"{self.mlp!r}, {self.norm!r}")

    @classmethod
    def of(cls, training, overheads: bool = True, tied: bool = False, backend: str = "gpu",
           shape=None) -> "Switches":
        """The switches of a Training (its recompute, flash_attn, sp, zero), with the overheads, tied and backend;
        given the ModelShape, also its architecture (tied, experts, biases, q/k norms) from it."""
        arch = {} if shape is None else architecture(shape)
        return cls(recompute=training.recompute, flash_attn=training.flash_attn, sp=training.sp, zero=training.zero,
                   overheads=overheads, tied=arch.pop("tied", tied), backend=backend,
                   ac_every=getattr(training, "ac_every", None) is not None,
                   zero_init=getattr(training, "zero_init", True),
                   grad_accum_fusion=getattr(training, "grad_accum_fusion", True),
                   schedule=getattr(training, "schedule", "1f1b"),
                   modules=getattr(training, "recompute_modules", "core_attn").replace(",", "+"), **arch)

    def tag(self) -> str:
        """Every field's value in order, booleans as 0/1, joined by '-': a file-name-safe name of these switches."""
        return "-".join(str(int(x)) if isinstance(x, bool) else str(x) for x in astuple(self))


def architecture(shape) -> dict:
    """The switch fields a ModelShape sets: tied, and whether it has experts, shared experts (and their gate), q/k
    norms, biases; its MLP and norm kinds, learned positions and dropout; MLA (with a query latent), multi-token
    prediction (with experts) and the experts' score-correction bias."""
    return {"tied": shape.tied, "moe": shape.moe, "shared": shape.f_s > 0, "shared_gate": shape.shared_gate,
            "qk_norm": shape.qk_norm, "qkv_bias": shape.qkv_bias, "o_bias": shape.o_bias, "mlp_bias": shape.mlp_bias,
            "mlp": shape.mlp, "norm": shape.norm, "positions": shape.positions > 0, "dropout": shape.dropout,
            "mla": shape.mla, "q_lora": shape.q_lora > 0, "mtp": shape.mtp > 0, "mtp_moe": shape.mtp > 0 and shape.mtp_moe,
            "expert_bias": shape.expert_bias, "sigmoid": shape.sigmoid}
