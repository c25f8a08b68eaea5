"""Activations one layer keeps for backward, tensor by tensor, in bytes per GPU for one micro batch (Korthikanti et
al. 2022 section 4 for the GPT layer and the recompute rules; Fujii et al. 2024 for the Llama layer)."""

from __future__ import annotations

from dataclasses import replace

import sympy as sp

from ..config.switches import Switches
from ..config.symbols import B_a, f, h, k_w, s
from .attention import attention_tensors
from .base import Component
from .layer_shapes import block_output, tok
from .fp8 import quantized
from .offload import offloaded


def mlp_tensors(sw: Switches) -> list[Component]:
    """Dense MLP block: norm-2 input, MLP input, and SwiGLU's gate, up, SiLU(gate), down input (Fujii et al. 2024;
    with Megatron-Core's fused SwiGLU, --swiglu-fusion, no SiLU(gate): megatron-core 0.16.1 fusions/fused_bias_swiglu.py
    SwiGLUFunction and BiasSwiGLUFunction save their input, fc1's gate and up, alone), GPT's GeLU input and output
    (Korthikanti et al. 2022) or the squared ReLU's two (Nemotron-H); with dropout the mask after the MLP."""
    parts = [
        tok("norm2_input", h, B_a, False, sw, "input of the second norm (residual stream after attention)"),
        tok("mlp_input", h, B_a, False, sw, "normed input of the first MLP matrices"),
    ]
    if sw.mlp == "swiglu":
        parts += [
            tok(
                "gate",
                f,
                B_a,
                True,
                sw,
                "gate projection output, input of SiLU (of GeLU in Gemma's GeGLU: the same tensors)",
            ),
            tok("up", f, B_a, True, sw, "up projection output"),
            *(
                []
                if sw.swiglu_fusion
                else [tok("swiglu", f, B_a, True, sw, "SiLU(gate), the SwiGLU product's first factor")]
            ),
            tok("down_input", f, B_a, True, sw, "SiLU(gate) * up, input of the down projection"),
        ]
    elif sw.mlp == "relu2":  # Megatron-Core's squared_relu: relu keeps its output, which pow(2) reads too
        parts += [
            tok("relu_output", f, B_a, True, sw, "relu(fc1 output), kept by relu's and the square's backward"),
            tok("down_input", f, B_a, True, sw, "relu(x)^2 = fc2 input (Nemotron-H's relu2)"),
        ]
    else:
        parts += [
            tok("gelu_input", f, B_a, True, sw, "fc1 output, input of GeLU"),
            tok("down_input", f, B_a, True, sw, "GeLU output = fc2 input"),
        ]
    return parts + block_output(sw, "mlp", "down projection", "post-feedforward", "the MLP")


def _is_attention_core(part: Component) -> bool:
    """The s x s terms that selective recompute drops (Korthikanti et al. 2022, section 5)."""
    return part.expr.has(s**2) or part.name in (
        "scores",
        "softmax",
        "softmax_dropout_mask",
        "softmax_dropout_out",
        "softcap_tanh",
    )


GPT = {"mlp": "gelu", "dropout": True}  # Korthikanti et al. 2022's GPT layer (with MHA: the caller's a = k)


# what each of Megatron-Core's --recompute-modules (beyond core_attn) makes selective recompute drop, by tensor name:
# the two RMSNorms' outputs (their inputs stay), MLA's up-projection outputs and normed latents (jaxcheck and
# Megatron-Core's checkpoint keeps the latents before their norms and the RoPE key), the routed experts' activation
RECOMPUTED = {
    "layernorm": ("qkv_input", "mlp_input"),
    "mla_up_proj": ("q", "k", "v", "q_latent_normed", "kv_latent_normed"),
    "moe_act": ("expert_fc2_input", "expert_act_output", "expert_fc1_clamped"),
}


def _recomputed_by(sw: Switches, moe: bool = False) -> set[str]:
    """The tensor names selective recompute's modules drop (none under another policy)."""
    modules = sw.modules.split("+") if sw.recompute == "selective" else []
    return {name for module in modules for name in RECOMPUTED.get(module, ())} | set(_mlp_recomputed(sw, moe))


def _mlp_recomputed(sw: Switches, moe: bool) -> tuple[str, ...]:
    """--recompute-modules mlp: a dense layer's MLP under tensor_parallel.checkpoint (megatron-core 0.16.1
    transformer_layer.py recompute_mlp; an MoE layer's is left alone), which keeps its input alone: the residual
    stream where Transformer Engine fuses the norm into fc1 (pre_mlp_layernorm an IdentityOp), the normed input
    beside it with the local spec's own norm; the dropout after the MLP stays outside it."""
    if moe or sw.recompute != "selective" or "mlp" not in sw.modules.split("+"):
        return ()
    kept = {"norm2_input", "mlp_dropout_mask", "post_mlp_norm_input"} | ({"mlp_input"} if sw.local else set())
    return tuple(part.name for part in mlp_tensors(sw) if part.name not in kept)


# a layer's token mixer: softmax attention, Gated DeltaNet, Mamba-2, none, a sliding-window layer's own KV heads
MIXERS = ("attention", "gdn", "mamba", "none", "swa")


def mixer_tensors(sw: Switches, mixer: str = "attention") -> list[Component]:
    """The token mixer's tensors: softmax attention's, a sliding-window layer's with its k_w KV heads (swa), a Gated
    DeltaNet's (components.gdn), a Mamba-2 mixer's (components.mamba), or none (a layer of an MLP alone)."""
    if mixer == "gdn":
        from .gdn import gdn_tensors

        return gdn_tensors(sw)
    if mixer == "mamba":
        from .mamba import mamba_tensors

        return mamba_tensors(sw)
    if mixer == "swa":
        return attention_tensors(sw, k_w)
    return attention_tensors(sw) if mixer == "attention" else []


def _block_tensors(sw: Switches, moe: bool, mixer: str, ffn: bool) -> list[Component]:
    """A layer's tensors before any recompute: its mixer's, then its MLP's or MoE's (none without an MLP)."""
    from .moe import moe_tensors

    return mixer_tensors(sw, mixer) + ((moe_tensors(sw) if moe else mlp_tensors(sw)) if ffn else [])


def layer_tensors(
    sw: Switches, gpt: bool = False, moe: bool = False, mixer: str = "attention", ffn: bool = True
) -> list[Component]:
    """What one layer (a dense one, or with `moe` an MoE layer; its `mixer` one of MIXERS; without `ffn` no MLP; with
    `gpt` Korthikanti et al.'s GPT layer, a GeLU MLP with dropout) keeps per micro batch under the recompute policy:
    none keeps all; selective drops the attention core (s x s terms) and what its other modules rerun (RECOMPUTED;
    with mla_up_proj it keeps the RoPE key instead); full keeps only the layer input (Korthikanti et al. 2022)."""
    sw = replace(sw, **GPT) if gpt else sw
    return offloaded(_saved_tensors(sw, moe, mixer, ffn), sw, moe)[0]


def offloaded_tensors(sw: Switches, moe: bool = False, mixer: str = "attention", ffn: bool = True) -> sp.Expr:
    """Bytes of one layer's saved tensors that fine-grained activation offloading moves to the host for one micro
    batch (components.offload; 0 without --offload-modules)."""
    return sp.Add(*(part.expr for part in offloaded(_saved_tensors(sw, moe, mixer, ffn), sw, moe)[1]))


def _saved_tensors(sw: Switches, moe: bool, mixer: str, ffn: bool) -> list[Component]:
    """What one layer saves for backward under the recompute policy, before any offloading."""
    parts = quantized(_block_tensors(sw, moe, mixer, ffn), sw, moe)
    if sw.recompute == "selective":
        core = "core_attn" in sw.modules.split("+")
        dropped = _recomputed_by(sw, moe)
        kept = [part for part in parts if not (core and _is_attention_core(part)) and part.name not in dropped]
        if sw.mla and "mla_up_proj" in sw.modules.split("+"):
            from .mla import rope_key

            kept.append(rope_key(sw))
        return kept
    if sw.recompute == "full":
        return [tok("layer_input", h, B_a, False, sw, "layer input, the only tensor kept under full recompute")]
    return parts


def recomputed_tensors(sw: Switches, moe: bool = False, mixer: str = "attention", ffn: bool = True) -> sp.Expr:
    """Bytes of what selective recompute's modules (beyond core_attn) rerun for one layer in its backward, live while
    that layer's backward runs: the tensors layer_tensors drops by name (0 under another policy)."""
    dropped = _recomputed_by(sw, moe)
    if not dropped:
        return sp.Integer(0)
    parts = quantized(_block_tensors(sw, moe, mixer, ffn), sw, moe)
    return sp.Add(*(part.expr for part in parts if part.name in dropped))


def layer_activation(
    sw: Switches, gpt: bool = False, moe: bool = False, mixer: str = "attention", ffn: bool = True
) -> sp.Expr:
    """Bytes one layer (with `moe`, an MoE layer; its `mixer`; without `ffn`, no MLP) keeps for one micro batch on
    one GPU."""
    return sp.Add(*(part.expr for part in layer_tensors(sw, gpt, moe, mixer, ffn)))
