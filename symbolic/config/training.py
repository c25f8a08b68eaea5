"""Training config shared by symbolic/ and jaxcheck/: parallel sizes, batch, precision, recompute, and its divisibility rules."""
from __future__ import annotations

from dataclasses import asdict, dataclass

from .dtypes import MEGATRON
from .errors import ConfigError
from .shapes import ModelShape

RECOMPUTE = ("none", "selective", "full")
STAGES = ("first", "middle", "last", "only")  # a GPU's place in the pipeline; only: p = 1, one stage holds everything


def stage_rank(stage: str, p):
    """The pipeline rank that stands for a stage of p stages (p an int or a sympy symbol): 0, 1, p - 1, or 0."""
    return {"first": 0, "middle": 1, "last": p - 1, "only": 0}[stage]


def stage_exists(stage: str, p):
    """Whether a GPU of this stage exists with p pipeline stages (p an int or an array): only at p = 1, first and
    last from p = 2, middle from p = 3."""
    return {"only": p == 1, "first": p >= 2, "last": p >= 2, "middle": p >= 3}[stage]


@dataclass(frozen=True)
class Training:
    """One 4D-parallel training job; letters follow the glossary (d, t, p, c, vpp, s, b) plus the global batch."""

    d: int = 1  # data parallel
    t: int = 1  # tensor parallel (sequence parallel uses the same ranks)
    p: int = 1  # pipeline parallel
    c: int = 1  # context parallel
    vpp: int = 1  # virtual pipeline stages per rank (interleaved 1F1B when > 1)
    s: int = 4096  # sequence length
    b: int = 1  # micro batch size
    gbs: int | None = None  # global batch in sequences; None means b * d * p (one full pipeline)
    sp: bool = True  # sequence parallel (Megatron-LM): non-TP regions sharded along s over t
    dist_opt: bool = True  # distributed optimizer (ZeRO-1) sharding master weights and Adam states over d * c
    recompute: str = "none"  # activation recomputation: none | selective | full
    flash_attn: bool = True  # no s x s scores or softmax kept for backward
    weight_bytes: int = MEGATRON["weight_bytes"]  # B_w: bf16 weights
    grad_bytes: int = MEGATRON["grad_bytes"]  # B_g: fp32 main gradients
    opt_bytes: int = MEGATRON["opt_bytes"]  # B_o: fp32 master weights + Adam m + Adam v
    act_bytes: int = MEGATRON["act_bytes"]  # B_a: bf16 activations

    def __post_init__(self):
        for name in ("d", "t", "p", "c", "vpp", "s", "b", "weight_bytes", "grad_bytes", "opt_bytes", "act_bytes"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ConfigError(f"{_FLAG.get(name, name)} must be a positive integer, got {value!r}")
        if self.gbs is not None and (not isinstance(self.gbs, int) or isinstance(self.gbs, bool) or self.gbs <= 0):
            raise ConfigError(f"--gbs must be a positive integer, got {self.gbs!r}")
        if self.recompute not in RECOMPUTE:
            raise ConfigError(f"--recompute must be one of {', '.join(RECOMPUTE)}, got {self.recompute!r}")
        if self.gbs is not None and self.gbs % (self.b * self.d):
            raise ConfigError(
                f"global batch gbs={self.gbs} is not divisible by micro batch x data parallel = {self.b}x{self.d} = {self.b * self.d}"
            )
        if self.c > 1 and self.s % (2 * self.c):
            raise ConfigError(f"sequence length s={self.s} is not divisible by 2 x context parallel = {2 * self.c} (load-balanced causal CP)")
        if self.sp and self.t > 1 and self.s % (self.t * self.c):
            raise ConfigError(
                f"sequence length s={self.s} is not divisible by tensor x context parallel = {self.t * self.c} (sequence parallel)"
            )
        if self.vpp > 1 and self.p == 1:
            raise ConfigError(f"virtual pipeline stages vpp={self.vpp} need pipeline parallel p > 1")
        if self.vpp > 1 and self.m % self.p:
            raise ConfigError(f"interleaved 1F1B needs micro batches m={self.m} divisible by pipeline parallel p={self.p}")

    @property
    def m(self) -> int:
        """Micro batches per step per data-parallel rank: gbs / (b * d)."""
        return self.p if self.gbs is None else self.gbs // (self.b * self.d)

    @property
    def global_batch(self) -> int:
        return self.m * self.b * self.d

    @property
    def world(self) -> int:
        """GPUs (devices) in the job: d * t * p * c."""
        return self.d * self.t * self.p * self.c

    def check(self, shape: ModelShape) -> "Training":
        """Raise a one-line ConfigError if the model cannot be split this way; return self."""
        if shape.a % self.t:
            raise ConfigError(f"tensor parallel t={self.t} does not divide attention heads a={shape.a} of {shape.name}")
        if shape.k % self.t:
            raise ConfigError(f"tensor parallel t={self.t} does not divide KV heads k={shape.k} of {shape.name}")
        if shape.f % self.t:
            raise ConfigError(f"tensor parallel t={self.t} does not divide MLP size f={shape.f} of {shape.name}")
        if shape.L % (self.p * self.vpp):
            raise ConfigError(
                f"pipeline stages p x vpp = {self.p}x{self.vpp} = {self.p * self.vpp} do not divide layers L={shape.L} of {shape.name}"
            )
        return self

    def as_dict(self) -> dict:
        out = asdict(self)
        out["m"] = self.m
        out["gbs"] = self.global_batch
        return out


_FLAG = {"d": "--dp", "t": "--tp", "p": "--pp", "c": "--cp", "vpp": "--vpp", "s": "--seq", "b": "--mbs"}
