"""The model's architecture as the formulas see it: the features of a ModelShape that add or drop terms, declared
once (Switches extends it; `of` reads each off a shape by its name); no sympy."""

from __future__ import annotations

from dataclasses import dataclass, fields

from .choices import check_choices


@dataclass(frozen=True)
class Architecture:
    """Beyond the letters (ModelShape's sizes): what a model has, each a switch of the expressions' form."""

    tied: bool = False  # LM head shares the embedding matrix: one v x h matrix on the p = 1 "only" stage
    moe: bool = False  # routed experts (E > 0) in L_e of the L layers
    shared: bool = False  # shared experts of width f_s in every MoE layer
    shared_gate: bool = False  # a sigmoid gate [h, 1] on the shared experts' output (Qwen2-MoE)
    latent: bool = (
        False  # a latent MoE (d_l > 0): experts of width d_l in and out between projections [h, d_l], [d_l, h]
    )
    qk_norm: str = "none"  # RMSNorm on Q and K: none, head (over dh, Qwen3), full (over a dh and k dh, OLMoE),
    # weightless (over dh with no scale, Llama 4)
    qkv_bias: bool = False  # biases on Q, K, V
    o_bias: bool = False  # a bias on the output projection
    mlp_bias: bool = False  # biases on gate, up, down of a dense MLP
    mlp: str = "swiglu"  # a dense layer's MLP: swiglu (3 matrices) or gelu (2, GPT)
    norm: str = "rms"  # rms (a weight) or layer (a weight and a bias)
    positions: bool = False  # learned absolute position embeddings (s_p rows of h) on the first stage
    dropout: bool = False  # dropout masks (1 byte each) kept for backward
    mla: bool = False  # multi-head latent attention (kv_r > 0) in place of GQA
    q_lora: bool = False  # MLA's queries through a latent of rank q_r (else a plain h x a (dh + d_r) projection)
    mtp: bool = False  # n_mtp multi-token-prediction modules on the last stage
    mtp_moe: bool = False  # their layers have routed experts (they repeat the last layer's kind)
    mtp_repeated: bool = False  # one module's weights, run at each of the n_mtp depths (--mtp-use-repeated-layer)
    expert_bias: bool = False  # each MoE layer keeps a [E] routing-score correction bias (a buffer, not trained)
    sigmoid: bool = False  # sigmoid router scores: the routing and the aux loss each keep their own [T, E]
    sandwich: bool = False  # a norm after attention and after the MLP too (Gemma): two more weights, two more inputs
    logit_softcap: bool = False  # soft-capped logits: the tanh output kept beside the logits (Gemma 2)
    attn_softcap: bool = False  # soft-capped attention scores: kept too by unfused attention (Gemma 2)
    sinks: bool = False  # a learned sink logit per head (gpt-oss): a parameters per layer, split over t
    moe_bias: bool = False  # biases on the router and on the routed experts' projections (gpt-oss)
    dsa: bool = False  # DeepSeek Sparse Attention: a lightning indexer per MLA layer, unfused sparse attention
    gdn: bool = False  # Gated DeltaNet layers (L_g of the L) in place of softmax attention: a hybrid
    gdn_repeat: bool = False  # n_gv > n_gk: Megatron-Core repeats the queries and keys to n_gv heads (new tensors)
    attn_gate: bool = False  # softmax attention's output gated by sigmoid(x W_g) (Qwen3-Next): W_g and two tensors
    mamba: bool = False  # Mamba-2 layers (L_m of the L) in place of softmax attention (Nemotron-H)
    blocks: bool = False  # layers of a mixer alone (L_n) or an MLP alone (L_o), each with one norm (Nemotron-H)
    ssm_conv_bias: bool = False  # a bias on the Mamba-2 convolution
    narrow_v: bool = False  # GQA value heads d_v wide, narrower than the q/k heads dh: V, its activations, the context
    # and O's input at d_v (MiMo-V2-Flash's v_head_dim)
    swa: bool = False  # L_w sliding-window layers with k_w KV heads of their own (MiMo-V2-Flash): a layer kind (Lw_r)
    swa_sinks: bool = False  # a learned sink logit per head [a] in those layers alone (add_swa_attention_sink_bias)
    vision: bool = False  # a vision tower and projector (P_v parameters) beside the embedding, on the first stage

    def __post_init__(self):
        check_choices(self)

    @classmethod
    def of(cls, shape) -> "Architecture":
        """A ModelShape's architecture: each field the shape's attribute (field or property) of its name, a count
        (positions, q_lora, mtp) as whether it is above 0, or DERIVED's reading where the shape has no such name."""
        read = {
            f.name: DERIVED[f.name](shape) if f.name in DERIVED else getattr(shape, f.name)
            for f in fields(Architecture)
        }
        return cls(
            **{
                f.name: bool(read[f.name]) if isinstance(f.default, bool) else read[f.name]
                for f in fields(Architecture)
            }
        )

    def features(self) -> dict:
        """Its fields by name (what Switches.of takes from a shape)."""
        return {f.name: getattr(self, f.name) for f in fields(Architecture)}


# the switches a ModelShape has no attribute of the same name for: how each is read off it
DERIVED = {
    "shared": lambda shape: shape.f_s > 0,
    "latent": lambda shape: shape.moe_latent > 0,
    "mtp_moe": lambda shape: shape.mtp > 0 and shape.mtp_moe,  # mtp_moe alone: the last layer's kind
    "mtp_repeated": lambda shape: shape.mtp > 1 and shape.mtp_repeated,  # one depth: one module either way
    "gdn_repeat": lambda shape: shape.gdn and shape.lin_v_heads > shape.lin_k_heads,
    "narrow_v": lambda shape: shape.v_dim > 0 and not shape.mla,  # config.swa stores d_v = dh as 0
    "swa": lambda shape: bool(shape.swa_layers),
}
