"""A ModelShape's checks of its routed experts and their routing (ModelShape.__post_init__ runs them in its order)."""

from __future__ import annotations

from .bounds import positive as _positive
from .errors import ConfigError


def check_routing(shape) -> None:
    """Expert biases, sinks beside MLA, the router's switches and group-limited routing, each against E."""
    if shape.moe_bias and not shape.E:
        raise ConfigError(f"model {shape.name!r}: moe_bias describes routed experts' biases, but E=0")
    if shape.sinks and shape.mla:
        raise ConfigError(f"model {shape.name!r}: attention sinks with multi-head latent attention are not modelled")
    if (shape.expert_bias or shape.sigmoid or shape.sparsemixer) and not shape.E:
        raise ConfigError(f"model {shape.name!r}: expert_bias, sigmoid, sparsemixer need experts, but E=0")
    _positive(shape.name, "groups", shape.groups, zero=True)
    _positive(shape.name, "group_topk", shape.group_topk, zero=True)
    if (shape.groups or shape.group_topk) and not (
        shape.E
        and shape.groups > 1
        and shape.E % shape.groups == 0
        and 1 <= shape.group_topk < shape.groups
        and shape.group_topk <= shape.k_e <= shape.group_topk * (shape.E // shape.groups)
    ):
        raise ConfigError(
            f"model {shape.name!r}: group-limited routing needs the E routed experts in groups > 1 "
            f"equal groups and 1 <= group_topk < groups with group_topk <= k_e <= group_topk E / "
            f"groups, got E={shape.E}, k_e={shape.k_e}, groups={shape.groups}, "
            f"group_topk={shape.group_topk}"
        )


def check_experts(shape) -> None:
    """The latent MoE, the experts' activation and biases, the dense layers (sorted in place) and the expert letters against E."""
    _positive(shape.name, "moe_latent", shape.moe_latent, zero=True)
    if shape.moe_latent and not shape.E:
        raise ConfigError(f"model {shape.name!r}: moe_latent describes routed experts' width, but E=0")
    if shape.E and shape.mlp != "swiglu" and shape.moe_bias:
        raise ConfigError(f"model {shape.name!r}: GeLU and squared-ReLU experts are modelled without expert biases")
    if shape.moe_latent and (shape.moe_bias or shape.shared_gate):
        raise ConfigError(f"model {shape.name!r}: a latent MoE is modelled without expert biases and a shared gate")
    dense = tuple(shape.dense_layers)
    if any(not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < shape.L for i in dense) or len(
        set(dense)
    ) != len(dense):
        raise ConfigError(
            f"model {shape.name!r}: dense_layers must be distinct layer indices below L={shape.L}, got {list(dense)}"
        )
    object.__setattr__(shape, "dense_layers", tuple(sorted(dense)))
    if shape.E:
        if not 1 <= shape.k_e <= shape.E or not shape.f_e:
            raise ConfigError(
                f"model {shape.name!r}: an MoE model needs 1 <= k_e <= E experts per token and an "
                f"expert width f_e, got E={shape.E}, k_e={shape.k_e}, f_e={shape.f_e}"
            )
        if len(dense) == shape.L:
            raise ConfigError(
                f"model {shape.name!r}: every layer is dense (dense_layers), so E={shape.E} experts "
                "are never used: give E=0"
            )
        if shape.mlp_bias:
            raise ConfigError(f"model {shape.name!r}: MLP biases in an MoE model are not modelled")
    elif shape.k_e or shape.f_e or shape.f_s or shape.shared_gate or dense:
        raise ConfigError(
            f"model {shape.name!r}: k_e, f_e, f_s, shared_gate and dense_layers describe experts, "
            "but E=0 (a dense model)"
        )
