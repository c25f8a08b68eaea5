"""The model's architecture as the formulas see it: the features of a ModelShape that add or drop terms (Switches
extends it). A feature read unchanged is its own switch, on its line of features.py (`switch=True`); a switch read
another way, or off a property, is one `switch(...)` here with its default, meaning and how `of` reads it; no sympy."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Callable

from .features import FEATURES


def switch(doc: str, read: Callable | None = None, default: bool | str = False, after: str | None = None):
    """One switch of the expressions' form, declared once: its default, what it is, how Architecture.of reads it off a
    ModelShape (None: the shape's attribute of the same name, a field or a property), and the switch it follows
    (None: the one declared before it in Architecture's body)."""
    return field(default=default, metadata={"doc": doc, "read": read, "after": after})


def _feature_switch(f) -> tuple[str, object]:
    """A feature's switch (features.feature's `switch=True`): a named choice as itself, anything else as a bool."""
    typed = "str" if isinstance(f.default, str) else "bool"
    return typed, switch(
        f.metadata["doc"], default=f.default if typed == "str" or isinstance(f.default, bool) else False
    )


def with_features(cls):
    """cls as a frozen dataclass of the features' switches (`switch=True`) in the features' order, with its own
    switches each put after the one its `after` names, then a feature's switch with an `after` (qk_norm) after that
    one: the order of the expressions' cache names (Switches.tag), which a new switch must not reorder."""
    switches = [f for f in FEATURES if f.metadata["switch"]]
    made = {f.name: _feature_switch(f) for f in switches}
    order = [f.name for f in switches if not f.metadata["after"]]
    placed, previous = [], None
    for name, typed in cls.__annotations__.items():  # its own switches, in its body's order
        made[name] = (typed, getattr(cls, name))
        placed.append((name, made[name][1].metadata["after"] or previous))
        previous = name
    placed += [(f.name, f.metadata["after"]) for f in switches if f.metadata["after"]]
    for name, after in placed:
        order.insert(order.index(after) + 1, name)
    cls.__annotations__ = {name: made[name][0] for name in order}
    for name in order:
        setattr(cls, name, made[name][1])
    return dataclass(frozen=True)(cls)


@with_features
class Architecture:
    """Beyond the letters (ModelShape's sizes): what a model has, each a switch of the expressions' form; the named
    choices (qk_norm, mlp, norm) as ModelShape checked them."""

    moe: bool = switch("routed experts (E > 0) in L_e of the L layers", after="tied")
    shared: bool = switch("shared experts of width f_s in every MoE layer", read=lambda shape: shape.f_s > 0)
    latent: bool = switch(
        "a latent MoE (d_l > 0): experts of width d_l in and out between projections [h, d_l], [d_l, h]",
        read=lambda shape: shape.moe_latent > 0,
        after="shared_gate",
    )
    mla: bool = switch("multi-head latent attention (kv_r > 0) in place of GQA", after="dropout")
    mtp_moe: bool = switch(
        "their layers have routed experts (they repeat the last layer's kind)",
        read=lambda shape: shape.mtp > 0 and shape.mtp_moe,  # mtp_moe alone: the last layer's kind
        after="mtp",
    )
    mtp_repeated: bool = switch(
        "one module's weights, run at each of the n_mtp depths (--mtp-use-repeated-layer)",
        read=lambda shape: shape.mtp > 1 and shape.mtp_repeated,  # one depth: one module either way
    )
    dsa: bool = switch(
        "DeepSeek Sparse Attention: a lightning indexer per MLA layer, unfused sparse attention", after="moe_bias"
    )
    gdn: bool = switch("Gated DeltaNet layers (L_g of the L) in place of softmax attention: a hybrid")
    gdn_repeat: bool = switch(
        "n_gv > n_gk: Megatron-Core repeats the queries and keys to n_gv heads (new tensors)",
        read=lambda shape: shape.gdn and shape.lin_v_heads > shape.lin_k_heads,
    )
    mamba: bool = switch("Mamba-2 layers (L_m of the L) in place of softmax attention (Nemotron-H)", after="attn_gate")
    blocks: bool = switch("layers of a mixer alone (L_n) or an MLP alone (L_o), each with one norm (Nemotron-H)")
    narrow_v: bool = switch(
        "GQA value heads d_v wide, narrower than the q/k heads dh: V, its activations, the context and O's input "
        "at d_v (MiMo-V2-Flash's v_head_dim)",
        read=lambda shape: shape.v_dim > 0 and not shape.mla,  # config.swa stores d_v = dh as 0
        after="ssm_conv_bias",
    )
    swa: bool = switch(
        "L_w sliding-window layers with k_w KV heads of their own (MiMo-V2-Flash): a layer kind (Lw_r)",
        read=lambda shape: bool(shape.swa_layers),
    )

    @classmethod
    def of(cls, shape) -> "Architecture":
        """A ModelShape's architecture: each switch read as its declaration says, a count (positions, q_lora, mtp)
        as whether it is above 0."""
        read = {f.name: f.metadata["read"](shape) if f.metadata["read"] else getattr(shape, f.name) for f in SWITCHES}
        return cls(**{f.name: bool(read[f.name]) if isinstance(f.default, bool) else read[f.name] for f in SWITCHES})

    def features(self) -> dict:
        """Its fields by name (what Switches.of takes from a shape)."""
        return {f.name: getattr(self, f.name) for f in SWITCHES}


SWITCHES = fields(Architecture)
# the switches a ModelShape has no attribute of the same name for: how each is read off it (the web reader mirrors it)
DERIVED = {f.name: f.metadata["read"] for f in SWITCHES if f.metadata["read"]}
