"""The model's architecture as the formulas see it: the features of a ModelShape that add or drop terms, declared
once (Switches extends it): each switch's default, meaning and how `of` reads it off a shape in one `switch(...)`;
no sympy."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Callable

from .choices import check_choices


def switch(doc: str, read: Callable | None = None, default: bool | str = False):
    """One switch of the expressions' form, declared once: its default, what it is, and how Architecture.of reads it
    off a ModelShape (None: the shape's attribute of the same name, a field or a property)."""
    return field(default=default, metadata={"doc": doc, "read": read})


@dataclass(frozen=True)
class Architecture:
    """Beyond the letters (ModelShape's sizes): what a model has, each a switch of the expressions' form."""

    tied: bool = switch('LM head shares the embedding matrix: one v x h matrix on the p = 1 "only" stage')
    moe: bool = switch("routed experts (E > 0) in L_e of the L layers")
    shared: bool = switch("shared experts of width f_s in every MoE layer", read=lambda shape: shape.f_s > 0)
    shared_gate: bool = switch("a sigmoid gate [h, 1] on the shared experts' output (Qwen2-MoE)")
    latent: bool = switch(
        "a latent MoE (d_l > 0): experts of width d_l in and out between projections [h, d_l], [d_l, h]",
        read=lambda shape: shape.moe_latent > 0,
    )
    qk_norm: str = switch(
        "RMSNorm on Q and K: none, head (over dh, Qwen3), full (over a dh and k dh, OLMoE), weightless (over dh "
        "with no scale, Llama 4)",
        default="none",
    )
    qkv_bias: bool = switch("biases on Q, K, V")
    o_bias: bool = switch("a bias on the output projection")
    mlp_bias: bool = switch("biases on gate, up, down of a dense MLP")
    mlp: str = switch("a dense layer's MLP: swiglu (3 matrices) or gelu (2, GPT)", default="swiglu")
    norm: str = switch("rms (a weight) or layer (a weight and a bias)", default="rms")
    positions: bool = switch("learned absolute position embeddings (s_p rows of h) on the first stage")
    dropout: bool = switch("dropout masks (1 byte each) kept for backward")
    mla: bool = switch("multi-head latent attention (kv_r > 0) in place of GQA")
    q_lora: bool = switch("MLA's queries through a latent of rank q_r (else a plain h x a (dh + d_r) projection)")
    mtp: bool = switch("n_mtp multi-token-prediction modules on the last stage")
    mtp_moe: bool = switch(
        "their layers have routed experts (they repeat the last layer's kind)",
        read=lambda shape: shape.mtp > 0 and shape.mtp_moe,  # mtp_moe alone: the last layer's kind
    )
    mtp_repeated: bool = switch(
        "one module's weights, run at each of the n_mtp depths (--mtp-use-repeated-layer)",
        read=lambda shape: shape.mtp > 1 and shape.mtp_repeated,  # one depth: one module either way
    )
    expert_bias: bool = switch("each MoE layer keeps a [E] routing-score correction bias (a buffer, not trained)")
    sigmoid: bool = switch("sigmoid router scores: the routing and the aux loss each keep their own [T, E]")
    sandwich: bool = switch("a norm after attention and after the MLP too (Gemma): two more weights, two more inputs")
    logit_softcap: bool = switch("soft-capped logits: the tanh output kept beside the logits (Gemma 2)")
    attn_softcap: bool = switch("soft-capped attention scores: kept too by unfused attention (Gemma 2)")
    sinks: bool = switch("a learned sink logit per head (gpt-oss): a parameters per layer, split over t")
    moe_bias: bool = switch("biases on the router and on the routed experts' projections (gpt-oss)")
    dsa: bool = switch("DeepSeek Sparse Attention: a lightning indexer per MLA layer, unfused sparse attention")
    gdn: bool = switch("Gated DeltaNet layers (L_g of the L) in place of softmax attention: a hybrid")
    gdn_repeat: bool = switch(
        "n_gv > n_gk: Megatron-Core repeats the queries and keys to n_gv heads (new tensors)",
        read=lambda shape: shape.gdn and shape.lin_v_heads > shape.lin_k_heads,
    )
    attn_gate: bool = switch("softmax attention's output gated by sigmoid(x W_g) (Qwen3-Next): W_g and two tensors")
    mamba: bool = switch("Mamba-2 layers (L_m of the L) in place of softmax attention (Nemotron-H)")
    blocks: bool = switch("layers of a mixer alone (L_n) or an MLP alone (L_o), each with one norm (Nemotron-H)")
    ssm_conv_bias: bool = switch("a bias on the Mamba-2 convolution")
    narrow_v: bool = switch(
        "GQA value heads d_v wide, narrower than the q/k heads dh: V, its activations, the context and O's input "
        "at d_v (MiMo-V2-Flash's v_head_dim)",
        read=lambda shape: shape.v_dim > 0 and not shape.mla,  # config.swa stores d_v = dh as 0
    )
    swa: bool = switch(
        "L_w sliding-window layers with k_w KV heads of their own (MiMo-V2-Flash): a layer kind (Lw_r)",
        read=lambda shape: bool(shape.swa_layers),
    )
    swa_sinks: bool = switch("a learned sink logit per head [a] in those layers alone (add_swa_attention_sink_bias)")
    vision: bool = switch("a vision tower and projector (P_v parameters) beside the embedding, on the first stage")

    def __post_init__(self):
        check_choices(self)

    @classmethod
    def of(cls, shape) -> "Architecture":
        """A ModelShape's architecture: each switch read as its declaration says, a count (positions, q_lora, mtp)
        as whether it is above 0."""
        read = {f.name: f.metadata["read"](shape) if f.metadata["read"] else getattr(shape, f.name) for f in SWITCHES}
        return cls(**{f.name: bool(read[f.name]) if isinstance(f.default, bool) else read[f.name] for f in SWITCHES})

    def features(self) -> dict:
        """Its fields by name (what Switches.of takes from a shape)."""
        return {f.name: getattr(self, f.name) for f in SWITCHES}


SWITCHES = fields(Architecture)
# the switches a ModelShape has no attribute of the same name for: how each is read off it (the web reader mirrors it)
DERIVED = {f.name: f.metadata["read"] for f in SWITCHES if f.metadata["read"]}
