"""jax-only knobs of the compiled step; the model shape and the parallel/batch config are symbolic's ModelShape and Training."""
from __future__ import annotations

from dataclasses import dataclass

from symbolic.config.dtypes import FLOATS
from symbolic.config.errors import ConfigError
from symbolic.config.shapes import ModelShape
from symbolic.config.step import FLASH_BLOCK
from symbolic.config.training import Training

ATTENTION = ("allgather",)  # context-parallel attention strategies implemented in jaxcheck.attention


@dataclass(frozen=True)
class JaxOptions:
    """Precision, attention strategy and AdamW hyper-parameters of the jax train step."""

    param_dtype: str = "float32"  # parameters, gradients and Adam moments
    compute_dtype: str = "bfloat16"  # matmul inputs and activations (norms, softmax and logits run in fp32)
    attention: str = "allgather"  # K/V all-gathered over the context axis
    learning_rate: float = 3e-4
    weight_decay: float = 0.1
    rope_theta: float = 500000.0
    donate: bool = True  # donate params and optimizer state to the step (they show up as XLA alias bytes)

    def __post_init__(self):
        for name in ("param_dtype", "compute_dtype"):
            if getattr(self, name) not in FLOATS:
                raise ConfigError(f"{name} must be one of {', '.join(FLOATS)}, got {getattr(self, name)!r}")
        if self.attention not in ATTENTION:
            raise ConfigError(f"attention must be one of {', '.join(ATTENTION)}, got {self.attention!r}")


@dataclass(frozen=True)
class Plan:
    """What one compiled step is built from: the model shape, the training config (symbolic's), and the jax options."""

    shape: ModelShape
    train: Training
    opts: JaxOptions = JaxOptions()

    def check(self) -> "Plan":
        """Training.check plus jaxcheck's own limits, each a one-line ConfigError."""
        self.train.check(self.shape)
        t, v = self.train.t, self.shape.v
        if v % t:
            raise ConfigError(f"tensor parallel t={t} does not divide vocabulary v={v} of {self.shape.name} "
                              f"(jaxcheck shards the embedding and head evenly over tensor; pad v to a multiple of t)")
        if self.train.vpp != 1:
            raise ConfigError(f"jaxcheck compiles a GPipe schedule without virtual stages; got vpp={self.train.vpp}")
        block = min(self.train.s, FLASH_BLOCK)
        if self.train.flash_attn and self.train.s % block:
            raise ConfigError(f"flash attention runs over key blocks of {FLASH_BLOCK}: sequence s={self.train.s} must be "
                              f"a multiple of {FLASH_BLOCK} (or shorter), or pass --no-flash-attn")
        if self.shape.dh % 2:
            raise ConfigError(f"RoPE needs an even head width, got dh={self.shape.dh}")
        return self
