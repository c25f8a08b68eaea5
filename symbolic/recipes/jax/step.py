"""Facts of jaxcheck's train step that the `jax` profile, the rule table and jaxcheck itself read from here."""

from __future__ import annotations

from ...config.dtypes import JAX_NAMES

PARAM_DTYPE, COMPUTE_DTYPE = "float32", "bfloat16"  # jaxcheck's defaults: fp32 params, bf16 compute

FLASH_BLOCK = 128  # keys per block of jaxcheck's flash attention: min(s, FLASH_BLOCK); s must be a multiple of it

# the checkpoint names (jaxcheck.model.causal_lm, .attention) that the selective remat policy saves; the attention core is
# recomputed. K and V are saved as attention reads them, all-gathered over context: saving them before the gather,
# XLA:GPU merged the backward's re-gather with the forward's and stacked the gathered K and V anyway (dumps of
# grids/holdout.toml, c = 2 and 4, at 2e81ea2), so the policy names what the compiled program holds.
# An MoE layer (jaxcheck.model.moe, .dispatch) saves all of its MLP too: the normed input, the router's softmax,
# top-k and weights (the top-k's indices are recomputed from the softmax), the routing slots, the experts' dispatched
# input and SwiGLU tensors, their combined outputs, and the shared experts' input, SwiGLU tensors, output and sigmoid
# gate (no all-to-all runs again in the backward).
# Multi-head latent attention (jaxcheck.model.mla) saves its query and key/value latents [q_r], [kv_r] before their
# RMSNorms, besides q, the gathered K and V (the RoPE key repeated per head) and the output: the backward of the
# up-projections and norms then reruns only the norms (elementwise); saving the normed latents instead (as many
# bytes) would rerun the down-projections from attn_in to get the norms' inputs. The RoPE key [d_r] is not saved:
# RoPE, its broadcast over heads and the concatenation are linear and need no residual.
# Gated attention (Qwen3-Next, Qwen3.5) saves its gate projection and the gated output, Wo's input, as Megatron-Core
# keeps both. A Gated DeltaNet layer (jaxcheck.model.gdn) saves the rule's inputs (q and k l2-normed, v after the
# convolution, the decay g, beta), the gate z, the rule's output and the gated norm's output, out_proj's input: the
# backward reruns the projections, convolutions and l2norms (elementwise, and matmuls from the saved attn_in), never
# the rule's forward (its custom VJP recomputes the chunks once, in its backward).
SELECTIVE_SAVED = (
    "attn_norm_in",
    "attn_in",
    "q_latent",
    "kv_latent",
    "q",
    "k_gathered",
    "v_gathered",
    "attn_out",
    "attn_gate",
    "attn_gated",
    "gdn_q",
    "gdn_k",
    "gdn_v",
    "gdn_z",
    "gdn_beta",
    "gdn_g",
    "gdn_out",
    "gdn_gated",
    "mlp_norm_in",
    "mlp_in",
    "attn_proj",
    "mlp_proj",
    "gate",
    "up",
    "swiglu",
    "fc1",
    "gelu",
    "moe_in",
    "router_probs",
    "router_topk",
    "router_weights",
    "moe_slots",
    "moe_dispatched",
    "moe_gate",
    "moe_up",
    "moe_swiglu",
    "moe_expert_out",
    "shared_in",
    "shared_gate",
    "shared_up",
    "shared_swiglu",
    "shared_out",
    "shared_sigmoid",
)


def jax_widths(param_dtype: str = PARAM_DTYPE, compute_dtype: str = COMPUTE_DTYPE) -> dict:
    """jaxcheck's step as precision choices: weights, gradients and AdamW mu + nu in the param dtype (no separate
    master copy; the step count is a separate int32), activations in the compute dtype, fp32 logits for the loss."""
    w = JAX_NAMES[param_dtype]
    return {
        "weight_dtype": w,
        "grad_dtype": w,
        "master_weights": False,
        "optimizer": "adamw",
        "moment_dtype": w,
        "act_dtype": JAX_NAMES[compute_dtype],
        "logits": "fp32",
    }
