"""The SwiGLU MLP (a dense layer's, and the shared experts' of an MoE layer) and the weight initialiser every module
uses: a normal(0, std) parameter tagged with its logical axes (jaxcheck.model.rules)."""
from __future__ import annotations

import jax
from flax import nnx
from jax.ad_checkpoint import checkpoint_name

from .rules import constrain
from .weightops import cast_einsum

DENSE_NAMES = ("gate", "up", "swiglu")  # checkpoint names of a dense layer's SwiGLU tensors


def param(rngs: nnx.Rngs, shape: tuple[int, ...], axes: tuple[str | None, ...], std: float, dtype) -> nnx.Param:
    """A normal(0, std) weight tagged with its logical axes."""
    return nnx.Param((std * jax.random.normal(rngs.params(), shape)).astype(dtype), axes=axes)


class MLP(nnx.Module):
    """SwiGLU: column-parallel gate and up [h, f], row-parallel down [f, h] (f: the dense width, or the shared
    experts' f_s); `names`: the checkpoint names of its gate, up and SwiGLU product. bias: biases on gate and up [f]
    (split over t with their columns) and on down [h] (replicated: a row-parallel bias), as a dense layer with the
    shape's mlp_bias has them."""

    def __init__(self, plan, rngs: nnx.Rngs, width: int | None = None, names: tuple[str, str, str] = DENSE_NAMES,
                 bias: bool = False):
        h, f, dt = plan.shape.h, plan.shape.f if width is None else width, plan.opts.param_dtype
        self.names, self.bias = names, bias
        self.gate = param(rngs, (h, f), ("embed", "mlp"), h ** -0.5, dt)
        self.up = param(rngs, (h, f), ("embed", "mlp"), h ** -0.5, dt)
        self.down = param(rngs, (f, h), ("mlp", "embed"), f ** -0.5, dt)
        if bias:
            self.gate_bias = param(rngs, (f,), ("mlp",), 0.1, dt)
            self.up_bias = param(rngs, (f,), ("mlp",), 0.1, dt)
            self.down_bias = param(rngs, (h,), ("norm",), 0.1, dt)

    def _project(self, x_BxSxH: jax.Array, name: str) -> jax.Array:
        """x W (+ b) of the gate or up projection [b, s, f], columns over t."""
        y = cast_einsum("bsh,hf->bsf", None, x_BxSxH, getattr(self, name)[...])
        return y + getattr(self, name + "_bias")[...].astype(y.dtype) if self.bias else y

    def __call__(self, x_BxSxH: jax.Array) -> jax.Array:
        axes, (gate_name, up_name, act_name) = ("batch", "seq", "mlp"), self.names
        gate = checkpoint_name(constrain(self._project(x_BxSxH, "gate"), axes), gate_name)
        up = checkpoint_name(constrain(self._project(x_BxSxH, "up"), axes), up_name)
        act = checkpoint_name(jax.nn.silu(gate) * up, act_name)
        y = cast_einsum("bsf,fh->bsh", None, act, self.down[...])
        return y + self.down_bias[...].astype(y.dtype) if self.bias else y
