"""Activations one layer keeps for backward, tensor by tensor, in bytes per GPU for one micro batch (Korthikanti et
al. 2022 section 4 for the GPT layer and the recompute rules; Fujii et al. 2024 for the Llama layer)."""
from __future__ import annotations

from dataclasses import replace

import sympy as sp

from ..config.dtypes import DTYPES
from ..config.switches import Switches
from ..config.symbols import B_a, a, b, dh, f, h, k, k_w, s
from .base import Component, per_gpu_tokens
from .fp8 import quantized
from .offload import offloaded
from .weights import value_width

_MASK = sp.Integer(DTYPES["uint8"])  # dropout masks are one byte per element (Korthikanti et al. 2022)


def _tok(name: str, width: sp.Expr, nbytes: sp.Expr, tp: bool, sw: Switches, doc: str) -> Component:
    """A [s, b, width] tensor of nbytes per element; tp says whether it lives in a tensor-parallel region (split over
    t), else (norm inputs, inputs of the column-parallel projections, dropout masks on the residual stream) it is
    split over t only with sequence parallelism; CP splits s over c."""
    return Component(name, per_gpu_tokens(nbytes * s * b * width, tp, sw), doc)


def _scores(name: str, nbytes: sp.Expr, sw: Switches, doc: str) -> Component:
    """A [b, a, s/c, s] attention-score-shaped tensor: heads split over t, queries over c."""
    return Component(name, per_gpu_tokens(nbytes * a * s * s * b, True, sw), doc)


def _repeated(sw: Switches) -> bool:
    """Whether the attention core keeps K and V repeated to the a query heads: unfused attention does, unless
    selective recompute of core_attn keeps only its inputs, before the repeat."""
    return not (sw.flash_attn or (sw.recompute == "selective" and "core_attn" in sw.modules.split("+")))


def _kv(sw: Switches) -> list[Component]:
    """The keys and values the attention core keeps: k*dh wide with GQA under flash attention; unfused attention
    repeats them to the a query heads first and keeps the copies (Transformer Engine 2.9.0 backends.py
    UnfusedDotProductAttention.forward, megatron-core 0.16.1 transformer/dot_product_attention.py: repeat_interleave,
    whose backward keeps nothing), so a*dh wide; selective recompute of core_attn keeps its inputs, before the repeat."""
    width, why = ((a * dh, "repeated to the a heads, a*dh wide") if _repeated(sw)
                  else (k * dh, "k*dh wide with GQA"))
    return [_tok("k", width, B_a, True, sw, f"keys after RoPE, {why}"),
            _tok("v", width, B_a, True, sw, f"values, {why}")]


def unfused_core(sw: Switches) -> list[Component]:
    """The s x s tensors unfused attention keeps: the fused scaled-masked softmax's output alone (its input, the
    scores Q K^T, is freed: baddbmm keeps Q and K), which P V's bmm keeps too; with attention dropout its one-byte
    mask and the dropped-out probabilities P V reads instead (Korthikanti et al. 2022). Transformer Engine 2.9.0
    pytorch/attention/dot_product_attention/backends.py UnfusedDotProductAttention.forward and softmax.py
    ScaledSoftmax / ScaledMaskedSoftmax (ctx.save_for_backward(softmax_results, scale_t)); megatron-core 0.16.1
    transformer/dot_product_attention.py and fusions/fused_softmax.py (ScaledUpperTriangMaskedSoftmax) alike. Without
    dropout torch's dropout(p=0) returns its input, keeping nothing. PyTorch's softmax, where the fused kernel does not
    take the shape, is refused by the rule table ("unfused attention: the fused softmax")."""
    if not sw.dropout:
        return [_scores("softmax", B_a, sw, "softmax probabilities, the fused softmax's output: kept for its backward "
                        "and by P V's bmm (the scores Q K^T are freed)")]
    return [
        _scores("softmax", B_a, sw, "softmax output, kept for the fused softmax's backward"),
        _scores("softmax_dropout_mask", _MASK, sw, "dropout mask on the attention probabilities"),
        _scores("softmax_dropout_out", B_a, sw, "dropped-out probabilities, kept by P V's bmm"),
    ]


def attention_tensors(sw: Switches, kv: sp.Expr = k) -> list[Component]:
    """Attention block: norm-1 input, QKV input, Q, K, V (a*dh and kv*dh wide; kv the layer's KV heads: k, or a
    sliding-window layer's k_w; V and the attention output value_width wide), the q/k norms' inputs where the model
    has them, attention output; without flash the softmax's output (and, with dropout, its mask and the dropped-out
    probabilities: unfused_core); with dropout the mask after the output projection (Korthikanti et al. 2022); multi-head latent
    attention's tensors where the model has it (components.mla), with DeepSeek Sparse Attention's in place of its
    q, k, v (components.dsa)."""
    if sw.mla and sw.dsa:
        from .dsa import dsa_tensors
        from .mla import mla_tensors

        return [part for part in mla_tensors(sw) if part.name not in ("q", "k", "v")] + dsa_tensors(sw)
    if sw.mla:
        from .mla import mla_tensors

        return mla_tensors(sw) + ([] if sw.flash_attn else unfused_core(sw))
    parts = [
        _tok("norm1_input", h, B_a, False, sw, "input of the first norm (the residual stream)"),
        _tok("qkv_input", h, B_a, False, sw, "normed input of the QKV projection (kept sharded with SP, re-gathered in backward)"),
    ]
    if sw.qk_norm != "none":
        parts += [
            _tok("q_norm_input", a * dh, B_a, True, sw, "queries before their RMSNorm (Megatron-Core qk_layernorm, "
                 "Qwen3, OLMoE), kept for the norm's backward"),
            _tok("k_norm_input", kv * dh, B_a, True, sw, "keys before their RMSNorm, kept for the norm's backward"),
        ]
    parts += [_tok("q", a * dh, B_a, True, sw, "queries after RoPE, a*dh wide, input of the attention core")]
    parts += _narrow_v(sw, kv) if sw.narrow_v or kv != k else [
        *_kv(sw),
        _tok("attn_out", a * dh, B_a, True, sw, "attention output = input of the output projection, a*dh wide"),
    ]
    if sw.attn_gate:  # Megatron-Core 0.16.1 Attention._apply_output_gate, under torch.compile (jit_fuser)
        parts[-1] = parts[-1]._replace(doc="attention output, kept by the attention core and the gate's product")
        parts += [
            _tok("attn_gate", a * dh, B_a, True, sw, "the output gate [s, b, a dh] (linear_qkv's gate slice), a factor "
                 "of attn_out * sigmoid(gate) (sigmoid recomputed by the compiled product)"),
            _tok("gated_attn_out", a * dh, B_a, True, sw, "attn_out * sigmoid(gate) in bf16, input of the output "
                 "projection"),
        ]
    if not sw.flash_attn:
        parts += unfused_core(sw)
    if sw.attn_softcap and not sw.flash_attn:
        parts.append(_scores("softcap_tanh", B_a, sw, "tanh(scores / cap) of soft-capped scores, kept for tanh's "
                             "backward by unfused attention (Gemma 2; flash kernels cap inside their tiles)"))
    return parts + _block_output(sw, "attn", "output projection", "post-attention", "the output projection")


def _narrow_v(sw: Switches, kv: sp.Expr) -> list[Component]:
    """K, V and the context of GQA attention whose value heads are value_width wide (d_v: MiMo-V2-Flash's v_head_dim)
    with `kv` KV heads (k, or a sliding-window layer's k_w), as Transformer Engine's fused attention keeps them for
    backward (transformer-engine 2.9.0 FusedAttnFunc saves q, k, v and its output; megatron-core 0.16.1
    TEDotProductAttention takes k_channels / v_channels, as its MLA passes v_head_dim); unfused attention keeps them
    repeated to the a query heads (_kv)."""
    dv, heads, letter, why = ((value_width(sw), a, "a", "repeated to the a query heads") if _repeated(sw) else
                              (value_width(sw), kv, "kv", "kv the layer's KV heads (k, or a sliding-window layer's k_w)"))
    return [
        _tok("k", heads * dh, B_a, True, sw, f"keys after RoPE [s, b, {letter} dh], {why}"),
        _tok("v", heads * dv, B_a, True, sw, f"values [s, b, {letter} d_v], v_proj's output at the value heads' width"),
        _tok("attn_out", a * dv, B_a, True, sw, "attention output (context) [s, b, a d_v], kept by the fused "
             "attention's backward and input of the output projection"),
    ]


def mlp_tensors(sw: Switches) -> list[Component]:
    """Dense MLP block: norm-2 input, MLP input, and SwiGLU's gate, up, SiLU(gate), down input (Fujii et al. 2024;
    with Megatron-Core's fused SwiGLU, --swiglu-fusion, no SiLU(gate): megatron-core 0.16.1 fusions/fused_bias_swiglu.py
    SwiGLUFunction and BiasSwiGLUFunction save their input, fc1's gate and up, alone), GPT's GeLU input and output
    (Korthikanti et al. 2022) or the squared ReLU's two (Nemotron-H); with dropout the mask after the MLP."""
    parts = [
        _tok("norm2_input", h, B_a, False, sw, "input of the second norm (residual stream after attention)"),
        _tok("mlp_input", h, B_a, False, sw, "normed input of the first MLP matrices"),
    ]
    if sw.mlp == "swiglu":
        parts += [
            _tok("gate", f, B_a, True, sw, "gate projection output, input of SiLU (of GeLU in Gemma's GeGLU: the "
                 "same tensors)"),
            _tok("up", f, B_a, True, sw, "up projection output"),
            *([] if sw.swiglu_fusion else [_tok("swiglu", f, B_a, True, sw, "SiLU(gate), the SwiGLU product's "
                                                    "first factor")]),
            _tok("down_input", f, B_a, True, sw, "SiLU(gate) * up, input of the down projection"),
        ]
    elif sw.mlp == "relu2":  # Megatron-Core's squared_relu: relu keeps its output, which pow(2) reads too
        parts += [
            _tok("relu_output", f, B_a, True, sw, "relu(fc1 output), kept by relu's and the square's backward"),
            _tok("down_input", f, B_a, True, sw, "relu(x)^2 = fc2 input (Nemotron-H's relu2)"),
        ]
    else:
        parts += [
            _tok("gelu_input", f, B_a, True, sw, "fc1 output, input of GeLU"),
            _tok("down_input", f, B_a, True, sw, "GeLU output = fc2 input"),
        ]
    return parts + _block_output(sw, "mlp", "down projection", "post-feedforward", "the MLP")


def _block_output(sw: Switches, block: str, projection: str, norm: str, after: str) -> list[Component]:
    """What a block keeps of its [s, b, h] output: with Gemma's sandwich norms the post-norm's input, with dropout
    the mask (one byte per element, Korthikanti et al. 2022)."""
    parts = []
    if sw.sandwich:
        parts.append(_tok(f"post_{block}_norm_input", h, B_a, False, sw, f"{projection}'s output, input of the "
                          f"{norm} norm (Gemma's sandwich norms)"))
    if sw.dropout:
        parts.append(_tok(f"{block}_dropout_mask", h, _MASK, False, sw, f"dropout mask after {after}"))
    return parts


def _is_attention_core(part: Component) -> bool:
    """The s x s terms that selective recompute drops (Korthikanti et al. 2022, section 5)."""
    return part.expr.has(s**2) or part.name in ("scores", "softmax", "softmax_dropout_mask", "softmax_dropout_out",
                                                 "softcap_tanh")


GPT = {"mlp": "gelu", "dropout": True}  # Korthikanti et al. 2022's GPT layer (with MHA: the caller's a = k)


# what each of Megatron-Core's --recompute-modules (beyond core_attn) makes selective recompute drop, by tensor name:
# the two RMSNorms' outputs (their inputs stay), MLA's up-projection outputs and normed latents (jaxcheck and
# Megatron-Core's checkpoint keeps the latents before their norms and the RoPE key), the routed experts' activation
RECOMPUTED = {"layernorm": ("qkv_input", "mlp_input"),
              "mla_up_proj": ("q", "k", "v", "q_latent_normed", "kv_latent_normed"),
              "moe_act": ("expert_fc2_input", "expert_act_output", "expert_fc1_clamped")}


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


def layer_tensors(sw: Switches, gpt: bool = False, moe: bool = False, mixer: str = "attention",
                  ffn: bool = True) -> list[Component]:
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
        return [_tok("layer_input", h, B_a, False, sw, "layer input, the only tensor kept under full recompute")]
    return parts


def recomputed_tensors(sw: Switches, moe: bool = False, mixer: str = "attention", ffn: bool = True) -> sp.Expr:
    """Bytes of what selective recompute's modules (beyond core_attn) rerun for one layer in its backward, live while
    that layer's backward runs: the tensors layer_tensors drops by name (0 under another policy)."""
    dropped = _recomputed_by(sw, moe)
    if not dropped:
        return sp.Integer(0)
    parts = quantized(_block_tensors(sw, moe, mixer, ffn), sw, moe)
    return sp.Add(*(part.expr for part in parts if part.name in dropped))


def layer_activation(sw: Switches, gpt: bool = False, moe: bool = False, mixer: str = "attention",
                     ffn: bool = True) -> sp.Expr:
    """Bytes one layer (with `moe`, an MoE layer; its `mixer`; without `ffn`, no MLP) keeps for one micro batch on
    one GPU."""
    return sp.Add(*(part.expr for part in layer_tensors(sw, gpt, moe, mixer, ffn)))
