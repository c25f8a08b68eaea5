"""The values of the model features that take one of a few named values (features.py names each on its line, and
ModelShape refuses any other), and the one check of every named choice, one_of: a model's, a Training's and
Switches' options alike."""

from __future__ import annotations

from .errors import ConfigError

# no q/k norm; RMSNorm over each head's dh (Qwen3); over a*dh and k*dh (OLMoE); a weightless RMSNorm over each head's dh
# (Llama 4's Llama4TextWeightlessRMSNorm: the same saved inputs, no parameter)
QK_NORMS = ("none", "head", "full", "weightless")
# gate, up, down h x f (Llama); fc1, fc2 h x f with GeLU between (GPT, Megatron-LM's default); fc1, fc2 with a squared
# ReLU between (Nemotron-H's relu2: GeLU's two matrices and two saved tensors)
MLPS = ("swiglu", "gelu", "relu2")
NORMS = ("rms", "layer")  # RMSNorm (a weight of h); LayerNorm (a weight and a bias of h each: GPT)


def one_of(label: str, value, allowed: tuple) -> None:
    """Raise a one-line ConfigError naming `label` unless value is one of allowed (a bool never stands for 0 or 1):
    the one check of every named choice, a model's and a Training's or Switches' options alike."""
    if isinstance(value, bool) or value not in allowed:
        raise ConfigError(f"{label} must be one of {', '.join(map(str, allowed))}, got {value!r}")
