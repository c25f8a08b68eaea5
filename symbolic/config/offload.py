"""Megatron-Core's fine-grained activation offloading as a training choice: the modules it can offload and the one
check of --offload-modules (what each module's offloading moves: components/offload.py)."""

from __future__ import annotations

from .errors import ConfigError

# the modules whose saved tensors Megatron-Core's fine-grained activation offloading can move to the host
# (megatron-core 0.16.1 transformer_config.py offload_modules; components/offload.py)
OFFLOAD_MODULES = ("attn_norm", "qkv_linear", "core_attn", "attn_proj", "mlp_norm", "expert_fc1", "moe_act")


def offload_modules(value) -> str:
    """--offload-modules as a canonical string: known names, each once, in OFFLOAD_MODULES' order ("" for none);
    attn_proj needs core_attn (megatron-core 0.16.1 TransformerConfig.__post_init__: its input is core_attn's output,
    which core_attn's backward needs)."""
    names = value.split(",") if isinstance(value, str) else list(value) if isinstance(value, (list, tuple)) else None
    names = [name for name in names if name] if names is not None else None
    if names is None or any(name not in OFFLOAD_MODULES for name in names) or len(set(names)) != len(names):
        raise ConfigError(
            f"--offload-modules must be distinct names from {', '.join(OFFLOAD_MODULES)} "
            f"(comma-separated), got {value!r}"
        )
    if "attn_proj" in names and "core_attn" not in names:
        raise ConfigError(
            "--offload-modules attn_proj needs core_attn beside it (Megatron-Core refuses it alone: "
            "attn_proj's input is core_attn's output)"
        )
    return ",".join(name for name in OFFLOAD_MODULES if name in names)
