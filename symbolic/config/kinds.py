"""The layer kinds a pipeline stage counts apart, each a stage input beside its L_r layers: Le_r MoE layers (of an MoE
model with dense layers), Lg_r Gated DeltaNet and Lm_r Mamba-2 layers (of a hybrid), Lo_r layers of an MLP alone and
Ln_r layers of a mixer alone (Nemotron-H's blocks), Lw_r sliding-window layers with KV heads of their own
(MiMo-V2-Flash). A stage's count of each is read off the model's layers (prefix sums over its layer indices), or is
the even share L_e / L, L_g / L, ... of its layers. Beside them, a training choice: Lb_r layers run in BF16 under FP8
(--first-last-layers-bf16, Training.bf16_layers) and Lbe_r MoE layers among them, counted off the rank's layers (no
even share: 0 where the layers are not placed)."""

from __future__ import annotations

import numpy as np

# stage input -> model count
KINDS = {"Le_r": "L_e", "Lg_r": "L_g", "Lm_r": "L_m", "Lo_r": "L_o", "Ln_r": "L_n", "Lw_r": "L_w"}
BF16 = ("Lb_r", "Lbe_r")  # the BF16 layers of a rank and the MoE layers among them (Training.bf16_layers)
STAGE_KINDS = (*KINDS, *BF16)  # every count a stage takes beside L_r and m_r
_LAYERS = {
    "Lg_r": "linear_layers",
    "Lm_r": "mamba_layers",
    "Lo_r": "mixerless_layers",
    "Ln_r": "mlpless_layers",
    "Lw_r": "swa_layers",
}


def _member(shape, name: str, i: int) -> bool:
    """Whether layer i (0-based) is of the kind `name`."""
    return shape.is_moe_layer(i) if name == "Le_r" else i in getattr(shape, _LAYERS[name])


def present(sw) -> tuple[str, ...]:
    """The kinds beyond Le_r whose counts the switches' expressions take (a model without them: none)."""
    return (
        (("Lg_r",) if sw.gdn else ())
        + (("Lm_r",) if sw.mamba else ())
        + (("Lo_r", "Ln_r") if sw.blocks else ())
        + (("Lw_r",) if sw.swa else ())
        + (BF16 if sw.bf16_layers else ())
    )


def mixed(shape) -> bool:
    """Whether the model's layers are of more than one kind (dense and MoE, softmax attention and Gated DeltaNet or
    Mamba-2, one-part blocks, sliding-window layers of their own KV heads): then stages of equal layer counts may
    differ."""
    return (
        (shape.moe and bool(shape.dense_layers)) or shape.gdn or shape.mamba or shape.blocks or bool(shape.swa_layers)
    )


def prefixes(shape) -> dict[str, np.ndarray]:
    """For each kind, [L + 1] prefix sums: entry i counts the layers of that kind among layers 0 .. i - 1."""
    return {
        name: np.concatenate([[0], np.cumsum([_member(shape, name, i) for i in range(shape.L)])]).astype(np.float64)
        for name in KINDS
    }


def counts_in(shape, ranges, bf16: frozenset = frozenset()) -> dict[str, int]:
    """Each kind's layers among the given ranges of layer indices (a rank's vpp chunks), and of them those in `bf16`
    (Lb_r) and its MoE ones (Lbe_r)."""
    held = [i for x in ranges for i in x]
    return {
        **{name: sum(1 for i in held if _member(shape, name, i)) for name in KINDS},
        "Lb_r": sum(1 for i in held if i in bf16),
        "Lbe_r": sum(1 for i in held if i in bf16 and shape.is_moe_layer(i)),
    }


def shares(arrays: dict, layers) -> dict[str, np.ndarray]:
    """Each kind's even share of `layers` layers: layers x L_e / L and layers x L_g / L (from the estimator's inputs)."""
    L = np.asarray(arrays["L"])
    return {name: np.asarray(layers) * np.asarray(arrays[total]) / L for name, total in KINDS.items()}
