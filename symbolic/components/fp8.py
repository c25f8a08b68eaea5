"""What Transformer Engine's FP8 training adds and changes, as Megatron-LM runs it (--fp8-format hybrid --fp8-recipe
delayed|tensorwise|blockwise|mxfp8, or NVFP4: --fp4-format e2m1, the same tensors at its widths; TE 2.20.2 transformer_engine/pytorch/module/linear.py, layernorm_linear.py,
grouped_linear.py and base.py): each GEMM input a linear saves for its weight gradient is saved quantized (B_q bytes
an element, scales included), and each linear's FP8 weight copies are cached across micro batches (B_c bytes a
weight, config.precision.FP8_RECIPES). Attention itself stays in bf16 (no --fp8-dot-product-attention), as do the
norms, the activation functions' inputs, the router and the output layer (Megatron-Core builds it without TE).
Latent attention (megatron-core 0.16.1 gpt_layer_specs.py: a separate TENorm, then TELinear down-projections and
TELayerNormColumnParallelLinear up-projections with --qk-layernorm) saves one quantized copy of the normed input per
down-projection and its up-projections' ln_out quantized (TE 2.20.2 module/linear.py: the own quantized input is
saved with columnwise usage alone)."""

from __future__ import annotations

import sympy as sp

from ..config.switches import Switches
from ..config.symbols import B_a, B_c, B_q
from .base import Component

# the saved tensors that are a TE linear's input and nothing else's: the fused norm's output fed to QKV and (dense)
# to fc1 (TELayerNormColumnParallelLinear quantizes it inside), fc2's input (the SwiGLU product, freed once fc2 has
# its FP8 copy), the routed experts' permuted tokens and fc2 inputs (TE GroupedLinear), the shared experts' fc2 input
QUANTIZED = ("qkv_input", "mlp_input", "down_input", "expert_input", "expert_fc2_input", "shared_fc2_input")
# latent attention's: the up-projections' ln_out (TELayerNormColumnParallelLinear quantizes it inside); its normed
# input is fed to two TELinears (q_a or q, and kv_a), each quantizing and saving its own copy (mla_down_inputs)
QUANTIZED_MLA = ("q_latent_normed", "kv_latent_normed")


def quantized(parts: list[Component], sw: Switches, moe: bool = False) -> list[Component]:
    """A layer's tensors under FP8: each QUANTIZED one at B_q bytes an element (an MoE layer's mlp_input stays bf16:
    the router and the token dispatcher read it too), and the output projection's own FP8 copy of the attention
    output beside the bf16 one flash attention keeps for its backward; unchanged without FP8."""
    if not sw.fp8:
        return parts
    out = []
    for part in parts:
        if sw.mla and part.name == "qkv_input":
            out += mla_down_inputs(part)
            continue
        if part.name in QUANTIZED + QUANTIZED_MLA and not (moe and part.name == "mlp_input"):
            part = part._replace(
                expr=part.expr.xreplace({B_a: B_q}),
                doc=part.doc + "; FP8: saved quantized, B_q bytes an element (TE linear)",
            )
        out.append(part)
        if part.name == "attn_out":
            out.append(
                part._replace(
                    name="proj_input_fp8",
                    expr=part.expr.xreplace({B_a: B_q}),
                    doc="the output projection's FP8 copy of the attention output, B_q bytes an "
                    "element (TERowParallelLinear saves its quantized input; flash attention keeps "
                    "the bf16 one)",
                )
            )
    return out


def mla_down_inputs(part: Component) -> list[Component]:
    """Latent attention under FP8: the normed input of the down-projections as the two TELinears save it, each its
    own quantized copy at B_q bytes an element (megatron-core 0.16.1 multi_latent_attention.py linear_q_down_proj or
    linear_q_proj, and linear_kv_down_proj; TE 2.20.2 module/linear.py saved_inputmat): the bf16 norm output itself
    is freed (TENorm keeps its input)."""
    expr = part.expr.xreplace({B_a: B_q})
    return [
        Component(
            "q_down_input_fp8",
            expr,
            "the query down-projection's (or q projection's) FP8 copy of the "
            "normed input, B_q bytes an element (TELinear saves its quantized input)",
        ),
        Component(
            "kv_down_input_fp8",
            expr,
            "the key/value down-projection's FP8 copy of the normed input, B_q "
            "bytes an element (TELinear saves its quantized input)",
        ),
    ]


def fp8_weight_cache(params: sp.Expr, sw: Switches) -> list[Component]:
    """The FP8 copies of the stage's layer weights TE caches for the step, B_c bytes a weight (row-wise for forward,
    column-wise for the input gradient; with --fp8-param-gather the weights are the row-wise copy): none without
    FP8. `params` counts every layer parameter held, norms and biases too (an upper bound by them: they are not
    quantized)."""
    if not sw.fp8:
        return []
    return [
        Component(
            "fp8_weight_cache",
            B_c * params,
            "Transformer Engine's FP8 weight copies (module "
            "_fp8_workspaces, kept across micro batches), B_c bytes per layer weight",
        )
    ]


def fsdp_fp8_transposes(gathered: sp.Expr, sw: Switches) -> list[Component]:
    """Megatron-FSDP with FP8 parameters (--fp8-param-gather, optim_grads_params): the weights are Float8Tensors
    whose transposed copy Megatron-FSDP discards after each module's forward and backward (megatron-core 0.16.1
    megatron_fsdp/megatron_fsdp.py:538-544 and 980-991, keep_fp8_transpose_cache False, Megatron-Bridge's default):
    B_c bytes per parameter of the weights gathered at once (`gathered`, components.zero.fsdp_window), not of the
    stage."""
    if not sw.fp8:
        return []
    return [
        Component(
            "fp8_weight_cache",
            B_c * gathered,
            "FP8 transposes of the weights Megatron-FSDP holds gathered, B_c bytes per parameter (discarded after "
            "each module: keep_fp8_transpose_cache False)",
        )
    ]
