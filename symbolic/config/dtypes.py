"""Bytes per element of each dtype, and the precision choices (config.precision) each profile models; no sympy."""
from __future__ import annotations

DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "int32": 4, "int64": 8}
FLOATS = ("float32", "bfloat16", "float16")  # what jaxcheck's parameter and compute dtypes may be
JAX_PARAM_DTYPE, JAX_COMPUTE_DTYPE = "float32", "bfloat16"  # jaxcheck's defaults: fp32 params, bf16 compute
SHORT = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}  # jax's dtype names -> config.precision's

# Megatron-LM bf16 mixed precision (Fujii et al. 2024): bf16 weights, fp32 main gradients, fp32 master weights +
# Adam m, v (3 x 4 bytes), bf16 activations, fp32 logits for the loss; the Training defaults
MEGATRON = {"weight_dtype": "bf16", "grad_dtype": "fp32", "master_weights": True, "optimizer": "adamw",
            "moment_dtype": "fp32", "act_dtype": "bf16", "logits": "fp32"}


def jax_widths(param_dtype: str = JAX_PARAM_DTYPE, compute_dtype: str = JAX_COMPUTE_DTYPE) -> dict:
    """jaxcheck's step as precision choices: weights, gradients and AdamW mu + nu in the param dtype (no separate
    master copy; the step count is a separate int32), activations in the compute dtype, fp32 logits for the loss."""
    w = SHORT[param_dtype]
    return {"weight_dtype": w, "grad_dtype": w, "master_weights": False, "optimizer": "adamw", "moment_dtype": w,
            "act_dtype": SHORT[compute_dtype], "logits": "fp32"}


# profile name -> the precision choices it models by default (jax: jaxcheck's default dtypes, fp32 params, bf16
# compute); the recipes' own in their profile modules' PRECISION
WIDTHS: dict[str, dict] = {"paper": MEGATRON, "jax": jax_widths()}
