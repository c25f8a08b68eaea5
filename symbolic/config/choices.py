"""The model features that take one of a few named values, declared once with the values they accept; ModelShape and
Architecture check them with the one function here, and Training and Switches their options with its one_of."""

from __future__ import annotations

from .errors import ConfigError

CHOICES = {
    # no q/k norm; RMSNorm over each head's dh (Qwen3); over a*dh and k*dh (OLMoE); a weightless RMSNorm over each
    # head's dh (Llama 4's Llama4TextWeightlessRMSNorm: the same saved inputs, no parameter)
    "qk_norm": ("none", "head", "full", "weightless"),
    # gate, up, down h x f (Llama); fc1, fc2 h x f with GeLU between (GPT, Megatron-LM's default); fc1, fc2 with a
    # squared ReLU between (Nemotron-H's relu2: GeLU's two matrices and two saved tensors)
    "mlp": ("swiglu", "gelu", "relu2"),
    "norm": ("rms", "layer"),  # RMSNorm (a weight of h); LayerNorm (a weight and a bias of h each: GPT)
}
QK_NORMS, MLPS, NORMS = CHOICES["qk_norm"], CHOICES["mlp"], CHOICES["norm"]


def one_of(label: str, value, allowed: tuple) -> None:
    """Raise a one-line ConfigError naming `label` unless value is one of allowed (a bool never stands for 0 or 1):
    the one check of every named choice, a model's here and a Training's or Switches' options alike."""
    if isinstance(value, bool) or value not in allowed:
        raise ConfigError(f"{label} must be one of {', '.join(map(str, allowed))}, got {value!r}")


def check_choices(obj, prefix: str = "") -> None:
    """Raise a one-line ConfigError (after `prefix`) naming the first of CHOICES whose value obj does not accept."""
    for field, allowed in CHOICES.items():
        one_of(prefix + field, getattr(obj, field), allowed)
