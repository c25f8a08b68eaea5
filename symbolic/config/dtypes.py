"""Bytes per element of each dtype, and the byte widths (B_w, B_g, B_o, B_a) each profile models; no sympy."""
from __future__ import annotations

DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "int32": 4, "int64": 8}
FLOATS = ("float32", "bfloat16", "float16")  # what jaxcheck's parameter and compute dtypes may be
JAX_PARAM_DTYPE, JAX_COMPUTE_DTYPE = "float32", "bfloat16"  # jaxcheck's defaults: fp32 params, bf16 compute

# Megatron-LM bf16 mixed precision (Fujii et al. 2024): bf16 weights, fp32 main gradients, fp32 master weights +
# Adam m, v (3 x 4 bytes), bf16 activations; the Training defaults
MEGATRON = {"weight_bytes": DTYPE_BYTES["bfloat16"], "grad_bytes": DTYPE_BYTES["float32"],
            "opt_bytes": 3 * DTYPE_BYTES["float32"], "act_bytes": DTYPE_BYTES["bfloat16"]}


def jax_widths(param_dtype: str = JAX_PARAM_DTYPE, compute_dtype: str = JAX_COMPUTE_DTYPE) -> dict[str, int]:
    """jaxcheck's step: weights and gradients in the param dtype, AdamW mu + nu (2 x param dtype; the step count is a
    separate int32), activations in the compute dtype."""
    w = DTYPE_BYTES[param_dtype]
    return {"weight_bytes": w, "grad_bytes": w, "opt_bytes": 2 * w, "act_bytes": DTYPE_BYTES[compute_dtype]}


# profile name -> the Training byte widths it models (jax: at jaxcheck's default dtypes, fp32 params, bf16 compute)
WIDTHS: dict[str, dict[str, int]] = {"paper": MEGATRON, "jax": jax_widths()}
