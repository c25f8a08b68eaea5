"""jax-only knobs of the compiled step; the model shape and the parallel/batch config are symbolic's ModelShape and Training."""

from __future__ import annotations

from dataclasses import dataclass, replace

from symbolic.config.dtypes import FLOATS
from symbolic.recipes.jax.step import COMPUTE_DTYPE as JAX_COMPUTE_DTYPE, PARAM_DTYPE as JAX_PARAM_DTYPE, jax_widths
from symbolic.config.errors import ConfigError
from symbolic.config.parallel import NO_ZERO
from symbolic.config.shapes import ModelShape
from symbolic.config.training import Training
from symbolic.recipes.registry import JAX_PROFILE

ATTENTION = ("allgather",)  # context-parallel attention strategies implemented in jaxcheck.model.attention
DEFAULT_TRAINING = Training(zero=NO_ZERO)  # what mem4d compile and sweep grids start from: Training's defaults, no ZeRO


@dataclass(frozen=True)
class JaxOptions:
    """Precision, attention strategy and AdamW hyper-parameters of the jax train step."""

    param_dtype: str = JAX_PARAM_DTYPE  # parameters, gradients and Adam moments
    compute_dtype: str = JAX_COMPUTE_DTYPE  # matmul inputs and activations (norms, softmax and logits run in fp32)
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
class StepSpec:
    """What one compiled step is built from: the model shape, the training config (symbolic's), and the jax options."""

    shape: ModelShape
    train: Training
    opts: JaxOptions = JaxOptions()

    def check(self) -> "StepSpec":
        """Training.check of the configuration, then with jaxcheck's own limits (the rule table's "jax" scope) on
        each program it compiles as (stages): one-line ConfigError; self."""
        jax_training(self.train, self.opts).check(self.shape)
        for _, spec in self.stages():
            jax_training(spec.train, spec.opts).check(spec.shape, JAX_PROFILE)
        return self

    def stages(self) -> tuple[tuple[tuple[int, ...], "StepSpec"], ...]:
        """(ranks, spec) per program to compile: (all ranks, self) unless the pipeline's stages hold different layers
        (jaxcheck.stages: one program per stage kind, every stage holding those ranks' layers, even stages)."""
        from .stages import stage_programs

        return tuple(
            (ranks, self if (shape, train) == (self.shape, self.train) else replace(self, shape=shape, train=train))
            for ranks, shape, train in stage_programs(self.shape, self.train)
        )

    def as_json(self, widths: bool = False) -> dict:
        """The "config" of compile/verify --json: the Training under its flag names (`widths`: with the byte widths
        of the step's dtypes, what the `jax` profile is evaluated with) and the two dtypes."""
        return {
            **jax_training(self.train, self.opts).as_json(self.shape, widths),
            "schedule": self.train.schedule,
            "param_dtype": self.opts.param_dtype,
            "compute_dtype": self.opts.compute_dtype,
        }


def jax_training(training: Training, opts: JaxOptions) -> Training:
    """The Training with the precision of the jax step's dtypes: what the `jax` profile is evaluated with."""
    return replace(training, **jax_widths(opts.param_dtype, opts.compute_dtype))
