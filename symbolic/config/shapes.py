"""Model shape: a frozen config shared by symbolic/ and jaxcheck/, and its presets (config.json files: hfconfig)."""

from __future__ import annotations

from dataclasses import dataclass, fields

from .bounds import MAX_SIZE, positive as _positive  # noqa: F401  (MAX_SIZE: hfkeys reads it here)
from .choices import check_choices
from .counts import ParameterCounts
from .blocks import check_blocks
from .errors import ConfigError
from .experts import check_experts, check_routing
from .gemma4 import check_gemma4
from .hybrid import check_hybrid
from .layer_kinds import LayerKinds
from .latent import check_latent
from .swa import check_swa
from .vision import Tower


@dataclass(frozen=True)
class ModelShape(ParameterCounts, LayerKinds):
    """A Llama-family decoder: RMSNorm, RoPE, GQA attention of a heads dh wide, and in each layer a SwiGLU MLP of
    width f or a mixture of experts (E routed SwiGLU experts of width f_e, k_e per token, shared experts of width f_s
    in all); untied LM head by default. A GPT-style model (Megatron-LM's GPT, Korthikanti et al. 2022) sets mlp gelu,
    norm layer, its learned absolute position embeddings s_p and dropout. Letters as in the glossary."""

    name: str
    h: int  # hidden size
    f: int  # SwiGLU intermediate size of a dense layer
    a: int  # attention heads
    k: int  # key/value heads
    L: int  # layers
    v: int  # vocabulary
    tied: bool = False  # LM head shares the embedding matrix
    head_dim: int | None = None  # dh, per-head width; None means h // a
    E: int = 0  # routed experts of an MoE layer (0: a dense model)
    k_e: int = 0  # routed experts per token (top-k)
    f_e: int = 0  # SwiGLU width of one routed expert
    f_s: int = 0  # SwiGLU width of the shared experts in all (0: none)
    shared_gate: bool = False  # a sigmoid gate [h, 1] scales the shared experts' output (Qwen2-MoE)
    dense_layers: tuple[int, ...] = ()  # indices of the layers of an MoE model that have a dense MLP of width f
    # (in a hybrid of one-part blocks, Nemotron-H, also its layers of a mixer alone: no MLP, and no experts)
    moe_latent: int = 0  # d_l: the routed experts' width in and out, projected from and to h (0: h; Nemotron 3 Super)
    qkv_bias: bool = False  # biases on the Q, K, V projections (Qwen2, Llama's attention_bias)
    o_bias: bool = False  # a bias on the output projection (Llama's attention_bias)
    mlp_bias: bool = False  # biases on gate, up and down of a dense MLP (Llama's mlp_bias)
    qk_norm: str = "none"  # one of choices.QK_NORMS
    mlp: str = "swiglu"  # one of choices.MLPS
    norm: str = "rms"  # one of choices.NORMS
    positions: int = 0  # s_p: rows of learned absolute position embeddings (0: rotary embeddings, no parameters)
    dropout: bool = False  # dropout on the attention probabilities and after the attention and MLP blocks
    # multi-head latent attention (DeepSeek-V2/V3, Kimi K2) when kv_lora > 0: head_dim is then the no-RoPE part of a
    # query/key head (qk_nope_head_dim), and k = a (every head has its own decompressed key and value)
    q_lora: int = 0  # q_r: rank of the query latent (q_lora_rank; 0: a plain query projection h -> a (dh + d_r))
    kv_lora: int = 0  # kv_r: rank of the key/value latent (kv_lora_rank; 0: no MLA)
    rope_dim: int = 0  # d_r: the decoupled RoPE part of a query/key head, one RoPE key shared by all heads
    v_dim: int = 0  # d_v: width of a value head (v_head_dim; with GQA, 0: dh, else V and O at d_v: MiMo-V2-Flash)
    mtp: int = 0  # multi-token-prediction modules after the last layer (num_nextn_predict_layers, DeepSeek-V3)
    mtp_repeated: bool = False  # one MTP module run at each of the mtp depths (Megatron-Core --mtp-use-repeated-layer)
    # DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5) when index_heads > 0: beside MLA with a query latent, a lightning
    # indexer in every layer scores every key for each query and the attention reads the top index_topk of them
    index_heads: int = 0  # n_i: the indexer's heads (index_n_heads)
    index_dim: int = 0  # d_i: the indexer's head width (index_head_dim; its last d_r are rotated)
    index_topk: int = 0  # k_i: keys each query attends to (index_topk)
    expert_bias: bool = False  # a [E] routing-score correction bias in each MoE layer (e_score_correction_bias)
    sigmoid: bool = False  # the router scores experts with a sigmoid, not a softmax (DeepSeek-V3's scoring_func)
    sparsemixer: bool = False  # phimoe's router: 2 experts Gumbel-sampled, SparseMixer's gradient (PhimoeTopKRouter)
    head_bias: bool = False  # a bias [v] on the LM head (phimoe's lm_head_bias)
    # group-limited routing (DeepSeek-V3): k_e experts from the best group_topk of `groups` groups; allocates nothing
    groups: int = 0  # expert groups (n_group)
    group_topk: int = 0  # the groups a token's experts may come from (topk_group)
    sandwich: bool = False  # a norm after attention and after the MLP too: 4 per layer (Gemma 2 and 3)
    logit_softcap: bool = False  # logits soft-capped, cap tanh(logits / cap) (Gemma 2's final_logit_softcapping)
    attn_softcap: bool = False  # attention scores soft-capped the same way (Gemma 2's attn_logit_softcapping)
    sinks: bool = False  # a learned sink logit per head [a] in each layer's softmax (gpt-oss)
    moe_bias: bool = False  # biases on the router [E] and on each expert's gate-up [2 f_e] and down [h] (gpt-oss)
    # Gated DeltaNet hybrids (Qwen3-Next, Qwen3.5): the layers in linear_layers hold a Gated DeltaNet, a chunked
    # linear-attention recurrence, in place of softmax attention; the other layers softmax attention
    linear_layers: tuple[int, ...] = ()  # indices of the Gated DeltaNet layers (layer_types "linear_attention")
    lin_k_heads: int = 0  # n_gk: query/key heads of a Gated DeltaNet layer (linear_num_key_heads)
    lin_v_heads: int = 0  # n_gv: value heads (linear_num_value_heads), a multiple of n_gk
    lin_k_dim: int = 0  # d_gk: query/key head width (linear_key_head_dim)
    lin_v_dim: int = 0  # d_gv: value head width (linear_value_head_dim)
    conv_width: int = (
        0  # K_c: a Gated DeltaNet or Mamba-2 causal depthwise convolution's width (linear_conv_kernel_dim)
    )
    attn_gate: bool = False  # softmax attention's output scaled by sigmoid(x W_g), W_g [h, a dh] (Qwen3-Next)
    # Mamba-2 hybrids (Nemotron-H): the layers in mamba_layers hold a Mamba-2 mixer in place of attention; a block
    # may hold a mixer alone (mlpless_layers) or an MLP alone (mixerless_layers), each with its one norm
    mamba_layers: tuple[int, ...] = ()  # indices of the Mamba-2 layers (Nemotron-H's "M")
    mixerless_layers: tuple[int, ...] = ()  # layers of an MLP alone, no token mixer (Nemotron-H's "-")
    mlpless_layers: tuple[int, ...] = ()  # layers of a token mixer alone, no MLP (Nemotron-H's "M" and "*")
    ssm_heads: int = 0  # n_m: a Mamba-2 layer's heads (mamba_num_heads)
    ssm_head_dim: int = 0  # d_m: a Mamba-2 head's width (mamba_head_dim)
    ssm_state: int = 0  # d_s: the SSM state size (ssm_state_size)
    ssm_groups: int = 0  # g_m: the groups sharing B and C (n_groups)
    ssm_conv_bias: bool = False  # a bias on the Mamba-2 convolution (use_conv_bias); its width is K_c (conv_width)
    swa_layers: tuple[int, ...] = ()  # layers whose attention has its own swa_k KV heads (MiMo-V2-Flash's SWA ones)
    swa_k: int = 0  # k_w: the KV heads of the swa_layers (swa_num_key_value_heads; config.swa checks the three)
    swa_sinks: bool = False  # a learned sink logit per head [a] in the swa_layers' softmax only
    layer_window: tuple[int, ...] = ()  # keys each layer's sliding window spans (0: full causal; time only)
    # a block config per layer (DeciLM / nemotron-nas; config.blocks): each layer's KV heads (0: no attention) and SwiGLU
    # width (0: no MLP), k and f then the largest; () where every layer is alike
    layer_k: tuple[int, ...] = ()
    layer_f: tuple[int, ...] = ()
    g_layers: tuple[int, ...] = ()  # Gemma 4 (config/gemma4.py, when g_dh > 0): its full-attention layers (the others
    # slide, at dh and k), of heads g_dh wide with g_k KV heads
    g_dh: int = 0  # their head width (global_head_dim)
    g_k: int = 0  # their KV heads (num_global_key_value_heads under attention_k_eq_v, else k)
    k_eq_v: bool = False  # a full layer's values are its keys: no V projection (attention_k_eq_v)
    kv_shared: int = 0  # the last kv_shared layers reuse an earlier layer's K and V (num_kv_shared_layers)
    wide_shared: bool = False  # those layers' MLPs are 2f wide (use_double_wide_mlp)
    ple: int = 0  # d_pl: per-layer input embeddings' width per layer (hidden_size_per_layer_input; 0: none)
    ple_v: int = 0  # v_pl: their table's rows (vocab_size_per_layer_input)
    moe_beside: bool = False  # every layer's E experts beside its dense MLP (enable_moe_block)
    vision: Tower | None = None  # a multimodal checkpoint's vision tower and projector (config.vision)

    def __post_init__(self):
        for name in ("h", "f", "a", "k", "L", "v"):
            _positive(self.name, name, getattr(self, name))
        for name in ("E", "k_e", "f_e", "f_s"):
            _positive(self.name, name, getattr(self, name), zero=True)
        if self.head_dim is None:
            if self.h % self.a:
                raise ConfigError(f"model {self.name!r}: hidden size h={self.h} is not divisible by heads a={self.a}")
            object.__setattr__(self, "head_dim", self.h // self.a)
        else:
            _positive(self.name, "head_dim", self.head_dim)
        if self.a % self.k:
            raise ConfigError(f"model {self.name!r}: heads a={self.a} are not divisible by KV heads k={self.k}")
        _positive(self.name, "positions", self.positions, zero=True)
        check_latent(self)
        if (
            (self.sandwich or self.logit_softcap or self.attn_softcap)
            and (self.E or self.mla or self.mtp)
            and not self.g_dh
        ):
            raise ConfigError(
                f"model {self.name!r}: sandwich norms and soft-capping are modelled for dense GQA "
                "models (Gemma 2 and 3)"
            )
        check_routing(self)
        check_hybrid(self)
        check_swa(self)
        check_blocks(self)
        check_gemma4(self)
        check_choices(self, f"model {self.name!r}: ")
        check_experts(self)

    @property
    def dh(self) -> int:
        """Per-head width: head_dim, h/a unless a config says otherwise."""
        return self.head_dim

    @property
    def mla(self) -> bool:
        """Whether attention is multi-head latent attention (kv_lora > 0)."""
        return self.kv_lora > 0

    @property
    def dsa(self) -> bool:
        """Whether every layer has DeepSeek Sparse Attention's lightning indexer (index_heads > 0)."""
        return self.index_heads > 0

    def as_dict(self) -> dict:
        return {
            fl.name: list(value)
            if isinstance(value := getattr(self, fl.name), tuple)
            else value.as_dict()
            if fl.name == "vision"
            else value
            for fl in fields(self)
            if fl.name != "vision" or self.vision
        }


PRESETS: dict[str, ModelShape] = {
    shape.name: shape
    for shape in (
        # a few million parameters; a, k, L divisible by 4 and all sizes distinct, so swapped symbols show
        ModelShape("tiny", h=256, f=688, a=16, k=4, L=8, v=1024),
        ModelShape("llama2-7b", h=4096, f=11008, a=32, k=32, L=32, v=32000),
        ModelShape("llama2-13b", h=5120, f=13824, a=40, k=40, L=40, v=32000),
        ModelShape("llama2-70b", h=8192, f=28672, a=64, k=8, L=80, v=32000),
        ModelShape("llama3-8b", h=4096, f=14336, a=32, k=8, L=32, v=128256),
        ModelShape("llama3-70b", h=8192, f=28672, a=64, k=8, L=80, v=128256),
        ModelShape("llama3.1-405b", h=16384, f=53248, a=128, k=8, L=126, v=128256),
        # GPT-style (GeLU MLP, LayerNorm, learned positions, biases, dropout 0.1, tied): GPT-2 small as released
        # (openai-community/gpt2: 124,439,808 parameters) and GPT-3 175B as Korthikanti et al. 2022 train it
        ModelShape(
            "gpt2",
            h=768,
            f=3072,
            a=12,
            k=12,
            L=12,
            v=50257,
            tied=True,
            qkv_bias=True,
            o_bias=True,
            mlp_bias=True,
            mlp="gelu",
            norm="layer",
            positions=1024,
            dropout=True,
        ),
        ModelShape(
            "gpt3-175b",
            h=12288,
            f=49152,
            a=96,
            k=96,
            L=96,
            v=51200,
            tied=True,
            qkv_bias=True,
            o_bias=True,
            mlp_bias=True,
            mlp="gelu",
            norm="layer",
            positions=2048,
            dropout=True,
        ),
        # a tiny mixture of experts: 8 experts, top 2, a shared expert, sizes distinct from tiny's
        ModelShape("tiny-moe", h=256, f=688, a=16, k=4, L=8, v=1024, E=8, k_e=2, f_e=176, f_s=352),
        # mixtures of experts, shapes of the published config.json files (grids/models/published/)
        ModelShape("mixtral-8x7b", h=4096, f=14336, a=32, k=8, L=32, v=32000, E=8, k_e=2, f_e=14336),
        ModelShape("mixtral-8x22b", h=6144, f=16384, a=48, k=8, L=56, v=32000, E=8, k_e=2, f_e=16384),
        ModelShape("olmoe-1b-7b", h=2048, f=1024, a=16, k=16, L=16, v=50304, E=64, k_e=8, f_e=1024, qk_norm="full"),
        ModelShape(
            "qwen3-30b-a3b",
            h=2048,
            f=6144,
            a=32,
            k=4,
            L=48,
            v=151936,
            head_dim=128,
            E=128,
            k_e=8,
            f_e=768,
            qk_norm="head",
        ),
        ModelShape(
            "qwen3-235b-a22b",
            h=4096,
            f=12288,
            a=64,
            k=4,
            L=94,
            v=151936,
            head_dim=128,
            E=128,
            k_e=8,
            f_e=1536,
            qk_norm="head",
        ),
    )
}

DEFAULT_MODEL = "llama3-8b"  # what every command models when --model is not given
