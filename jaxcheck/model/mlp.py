"""The SwiGLU MLP (a dense layer's, and the shared experts' of an MoE layer), GPT's GeLU MLP, and the weight
initialiser every module uses: a normal(0, std) parameter tagged with its logical axes (jaxcheck.model.rules)."""

from __future__ import annotations

import jax
from flax import nnx
from jax.ad_checkpoint import checkpoint_name

from .rules import constrain
from .weightops import cast_einsum

DENSE_NAMES = ("gate", "up", "swiglu")  # checkpoint names of a dense layer's SwiGLU tensors
GELU_NAMES = ("fc1", "gelu")  # checkpoint names of a GeLU MLP's tensors


def param(rngs: nnx.Rngs, shape: tuple[int, ...], axes: tuple[str | None, ...], std: float, dtype) -> nnx.Param:
    """A normal(0, std) weight tagged with its logical axes."""
    return nnx.Param((std * jax.random.normal(rngs.params(), shape)).astype(dtype), axes=axes)


class MLP(nnx.Module):
    """SwiGLU: column-parallel gate and up [h, f], row-parallel down [f, h] (f: the dense width, or the shared
    experts' f_s); `names`: the checkpoint names of its gate, up and SwiGLU product; GeGLU (GeLU's tanh
    approximation of the gate, gelu_pytorch_tanh) in a Gemma model (the shape's sandwich norms). bias: biases on
    gate and up [f] (split over t with their columns) and on down [h] (replicated: a row-parallel bias), as a dense
    layer with the shape's mlp_bias has them."""

    def __init__(
        self,
        plan,
        rngs: nnx.Rngs,
        width: int | None = None,
        names: tuple[str, str, str] = DENSE_NAMES,
        bias: bool = False,
    ):
        h, f, dt = plan.shape.h, plan.shape.f if width is None else width, plan.opts.param_dtype
        self.names, self.bias, self.geglu = names, bias, plan.shape.sandwich
        self.gate = param(rngs, (h, f), ("embed", "mlp"), h**-0.5, dt)
        self.up = param(rngs, (h, f), ("embed", "mlp"), h**-0.5, dt)
        self.down = param(rngs, (f, h), ("mlp", "embed"), f**-0.5, dt)
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
        act = checkpoint_name((jax.nn.gelu(gate, approximate=True) if self.geglu else jax.nn.silu(gate)) * up, act_name)
        y = cast_einsum("bsf,fh->bsh", None, act, self.down[...])
        return y + self.down_bias[...].astype(y.dtype) if self.bias else y


class GeluMLP(nnx.Module):
    """GPT's MLP: column-parallel fc1 [h, f] with its bias [f] (split over t), GeLU (the tanh approximation, GPT-2's
    gelu_new and Megatron-LM's fused bias_gelu), row-parallel fc2 [f, h] with its bias [h] (replicated); without the
    shape's mlp_bias, no biases."""

    def __init__(self, plan, rngs: nnx.Rngs):
        h, f, dt = plan.shape.h, plan.shape.f, plan.opts.param_dtype
        self.bias = plan.shape.mlp_bias
        self.fc1 = param(rngs, (h, f), ("embed", "mlp"), h**-0.5, dt)
        self.fc2 = param(rngs, (f, h), ("mlp", "embed"), f**-0.5, dt)
        if self.bias:
            self.fc1_bias = param(rngs, (f,), ("mlp",), 0.1, dt)
            self.fc2_bias = param(rngs, (h,), ("norm",), 0.1, dt)

    def __call__(self, x_BxSxH: jax.Array) -> jax.Array:
        y = cast_einsum("bsh,hf->bsf", None, x_BxSxH, self.fc1[...])
        y = y + self.fc1_bias[...].astype(y.dtype) if self.bias else y
        fc1 = checkpoint_name(constrain(y, ("batch", "seq", "mlp")), GELU_NAMES[0])
        act = checkpoint_name(jax.nn.gelu(fc1, approximate=True), GELU_NAMES[1])
        y = cast_einsum("bsf,fh->bsh", None, act, self.fc2[...])
        return y + self.fc2_bias[...].astype(y.dtype) if self.bias else y


def dense_mlp(plan, rngs: nnx.Rngs) -> nnx.Module:
    """A dense layer's MLP: GeLU where the shape's mlp is "gelu", else SwiGLU (with the shape's MLP biases)."""
    return GeluMLP(plan, rngs) if plan.shape.mlp == "gelu" else MLP(plan, rngs, bias=plan.shape.mlp_bias)
