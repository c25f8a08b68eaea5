"""The train state as abstract, sharded pytrees: params, AdamW state and batch, with their NamedShardings."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import optax
from flax import nnx
from jax.sharding import NamedSharding, PartitionSpec as P

from symbolic.config.parallel import ZERO_SHARDS

from .mesh import mesh_shape
from .model.causal_lm import STACK_AXES, STACKS, CausalLM, param_axes
from .model.rules import layer_zero_spec, partition_spec, zero1_spec, zero_group
from .spec import StepSpec
from .step import make_optimizer

GROUPS = ("params", "optimizer", "batch")  # the train step's argument pytrees, in order
# besides the arguments' shardings, Built.shardings holds "grads" (where the step keeps the gradients) and "compute"
# (the parameters' layout when a layer runs: ZeRO-3 all-gathers its sharded parameters into it)


def layouts(names: tuple[str | None, ...], shape: tuple[int, ...], zero: int, sizes: dict) -> dict[str, P]:
    """One parameter's PartitionSpec per layout. compute: its logical axes (matrices and vocabulary over tensor,
    stacked layers over pipe, routed experts over expert). sharded: that plus the parameter's ZeRO group within one
    layer (layer_zero_spec; rules.zero_group: data x expert x context for a dense parameter, the expert data-parallel
    group for a routed expert's). params: compute, or sharded with ZeRO-3; grads: compute, or sharded with ZeRO-2/3;
    optimizer: compute (ZeRO-0), the group on dimension 0 or later (ZeRO-1, as the distributed optimizer), or sharded
    (ZeRO-2/3, where the gradients are)."""
    compute, group = partition_spec(names), zero_group(names)
    stacked = sum(1 for name in names[: len(STACK_AXES)] if name in STACK_AXES)
    sharded = layer_zero_spec(compute, shape, sizes, skip=stacked, group=group)
    optimizer = {0: compute, 1: zero1_spec(compute, shape, sizes, group)}.get(zero, sharded)
    return {
        "compute": compute,
        "params": sharded if "weights" in ZERO_SHARDS[zero] else compute,
        "grads": sharded if "gradients" in ZERO_SHARDS[zero] else compute,
        "optimizer": optimizer,
    }


@dataclass
class Built:
    """Everything the step is compiled from: graph definitions, abstract arguments (with shardings) per group."""

    spec: StepSpec
    mesh: jax.sharding.Mesh
    graphdef: nnx.GraphDef
    stack_graphdefs: dict  # stack name (llama.STACKS, model order) -> the graph definition of one of its blocks
    abstract: dict  # group -> pytree of jax.ShapeDtypeStruct carrying shardings
    shardings: dict  # group -> pytree of NamedSharding

    @property
    def args(self) -> tuple:
        return tuple(self.abstract[g] for g in GROUPS)

    @property
    def block_graphdef(self) -> nnx.GraphDef:
        """The graph definition of a block of the main stack ("blocks": every layer, or the MoE ones)."""
        return self.stack_graphdefs["blocks"]


def _nest(pairs) -> dict:
    out: dict = {}
    for path, leaf in pairs:
        node = out
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = leaf
    return out


def _with_sharding(tree, shardings):
    return jax.tree.map(lambda x, s: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s), tree, shardings)


def build(spec: StepSpec, mesh: jax.sharding.Mesh) -> Built:
    """Abstract model (nothing allocated) -> abstract sharded params, optimizer state and batch.

    Params are a pure nested dict of arrays (nnx.merge(graphdef, params) rebuilds the CausalLM); each leaf's sharding
    comes from its logical axes (jaxcheck.model.rules) and the ZeRO stage (`layouts`): params, AdamW mu and nu, and
    the gradients the step keeps; batch tokens and targets are [m, d*b, s] int32."""
    model = nnx.eval_shape(lambda: CausalLM(spec, nnx.Rngs(0)))
    graphdef, state = nnx.split(model)
    stack_graphdefs = {name: nnx.split(getattr(model, name))[0] for name in STACKS if hasattr(model, name)}
    flat = list(nnx.to_flat_state(state))
    params = _nest((path, jax.ShapeDtypeStruct(v.get_value().shape, v.get_value().dtype)) for path, v in flat)
    sizes = mesh_shape(spec.train)
    specs = [(path, layouts(param_axes(v), v.get_value().shape, spec.train.zero, sizes)) for path, v in flat]
    pspecs, ospecs = (_nest((path, x[layout]) for path, x in specs) for layout in ("params", "optimizer"))
    opt_state = jax.eval_shape(make_optimizer(spec).init, params)
    opt_specs = optax.tree_map_params(
        make_optimizer(spec),
        lambda _, s: s,
        opt_state,
        ospecs,
        transform_non_params=lambda _: P(),
        is_leaf=lambda x: isinstance(x, P),
    )
    tr = spec.train
    tokens = jax.ShapeDtypeStruct((tr.m, tr.d * tr.b, tr.s), jnp.int32)
    batch = {"tokens": tokens, "targets": tokens}
    bspec = partition_spec(("micro", "batch", "seq"))
    named = lambda tree: jax.tree.map(lambda s: NamedSharding(mesh, s), tree, is_leaf=lambda x: isinstance(x, P))
    shardings = {
        "params": named(pspecs),
        "optimizer": named(opt_specs),
        "batch": {"tokens": NamedSharding(mesh, bspec), "targets": NamedSharding(mesh, bspec)},
        **{layout: named(_nest((path, x[layout]) for path, x in specs)) for layout in ("grads", "compute")},
    }
    abstract = {
        "params": _with_sharding(params, shardings["params"]),
        "optimizer": _with_sharding(opt_state, shardings["optimizer"]),
        "batch": _with_sharding(batch, shardings["batch"]),
    }
    return Built(spec, mesh, graphdef, stack_graphdefs, abstract, shardings)


def shard_bytes(x: jax.ShapeDtypeStruct) -> int:
    """Bytes of one device's shard of x, from its sharding."""
    n = 1
    for dim in x.sharding.shard_shape(x.shape):
        n *= dim
    return n * jnp.dtype(x.dtype).itemsize


def argument_bytes(built: Built) -> dict[str, int]:
    """Per-device argument bytes by group (params / optimizer / batch), from the shardings alone."""
    return {g: sum(shard_bytes(x) for x in jax.tree.leaves(built.abstract[g])) for g in GROUPS}


def param_count(built: Built) -> int:
    """Whole-model parameter count from the abstract params (must equal ModelShape.param_count)."""
    total = 0
    for x in jax.tree.leaves(built.abstract["params"]):
        n = 1
        for dim in x.shape:
            n *= dim
        total += n
    return total


def init_state(built: Built, seed: int = 0) -> tuple[dict, object]:
    """Real params and AdamW state, created directly in their shardings (jit with out_shardings)."""
    spec = built.spec
    params = jax.jit(
        lambda: nnx.state(CausalLM(spec, nnx.Rngs(seed))).to_pure_dict(), out_shardings=built.shardings["params"]
    )()
    opt_state = jax.jit(make_optimizer(spec).init, out_shardings=built.shardings["optimizer"])(params)
    return params, opt_state


def synthetic_batch(built: Built, seed: int = 1) -> dict:
    """A fixed random batch [m, d*b, s]; targets are the tokens shifted left by one (last target wraps around)."""
    tokens_abs = built.abstract["batch"]["tokens"]
    v = built.spec.shape.v

    def make():
        tokens = jax.random.randint(jax.random.key(seed), tokens_abs.shape, 0, v, dtype=jnp.int32)
        return {"tokens": tokens, "targets": jnp.roll(tokens, -1, axis=-1)}

    return jax.jit(make, out_shardings=built.shardings["batch"])()
