"""The model features, each declared once: a ModelShape field with its default, a one-line doc, its glossary letter
where it has one, the config.json key(s) the family readers read it from, how the rule table reads it, the values a
named choice accepts, and whether it is Architecture's switch of its name (feature.py's `feature(...)`). ModelShape
(shapes.py) is these fields with its checks and counts; the glossary's letter -> field map (glossary.SHAPE_FIELD), the
rules' model letters (rules.model_letters), the choices ModelShape checks (CHOICES) and Architecture's switches of a
feature's name (architecture.py) are read off them. No sympy."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from .choices import MLPS, NORMS, QK_NORMS
from .feature import LETTER, NAME, feature

if TYPE_CHECKING:
    from .vision import Tower


@dataclass(frozen=True)
class Features:
    """ModelShape's fields (the base it extends): letters as in the glossary."""

    name: str = feature(doc="the model's name: a preset's, or the config.json file's")
    h: int = feature(doc="hidden size", letter="h", keys=("hidden_size",))
    f: int = feature(
        doc="SwiGLU intermediate size of a dense layer", letter="f", rule=NAME, keys=("intermediate_size",)
    )
    a: int = feature(doc="attention heads", letter="a", rule=NAME, keys=("num_attention_heads",))
    k: int = feature(doc="key/value heads", letter="k", rule=NAME, keys=("num_key_value_heads",))
    L: int = feature(doc="layers", letter="L", rule=NAME, keys=("num_hidden_layers",))
    v: int = feature(doc="vocabulary", letter="v", rule=NAME, keys=("vocab_size",))
    tied: bool = feature(False, "LM head shares the embedding matrix", keys=("tie_word_embeddings",), switch=True)
    head_dim: int | None = feature(None, "dh, per-head width; None means h // a", keys=("head_dim",))
    E: int = feature(
        0,
        "routed experts of an MoE layer (0: a dense model)",
        letter="E",
        rule=NAME,
        keys=("num_local_experts", "num_experts", "n_routed_experts"),
    )
    k_e: int = feature(0, "routed experts per token (top-k)", letter="k_e", keys=("num_experts_per_tok",))
    f_e: int = feature(0, "SwiGLU width of one routed expert", letter="f_e", rule=NAME, keys=("moe_intermediate_size",))
    f_s: int = feature(
        0,
        "SwiGLU width of the shared experts in all (0: none)",
        letter="f_s",
        rule=NAME,
        keys=("shared_expert_intermediate_size",),
    )
    shared_gate: bool = feature(
        False, "a sigmoid gate [h, 1] scales the shared experts' output (Qwen2-MoE)", rule=NAME, switch=True
    )
    dense_layers: tuple[int, ...] = feature(
        (),
        "indices of the layers of an MoE model that have a dense MLP of width f (in a hybrid of one-part blocks, "
        "Nemotron-H, also its layers of a mixer alone: no MLP, and no experts)",
    )
    moe_latent: int = feature(
        0,
        "d_l: the routed experts' width in and out, projected from and to h (0: h; Nemotron 3 Super)",
        letter="d_l",
        keys=("moe_latent_size",),
    )
    qkv_bias: bool = feature(
        False, "biases on Q, K, V (Qwen2, Llama's attention_bias)", keys=("attention_bias",), switch=True
    )
    o_bias: bool = feature(
        False, "a bias on the output projection (attention_bias)", keys=("attention_bias",), switch=True
    )
    mlp_bias: bool = feature(
        False, "biases on a dense MLP's gate, up, down (mlp_bias)", keys=("mlp_bias",), switch=True
    )
    qk_norm: str = feature("none", "RMSNorm on Q and K", rule=NAME, choices=QK_NORMS, switch=True, after="latent")
    mlp: str = feature("swiglu", "a dense layer's MLP", rule=NAME, choices=MLPS, switch=True)
    norm: str = feature("rms", "RMSNorm or LayerNorm", rule=NAME, choices=NORMS, switch=True)
    positions: int = feature(
        0,
        "s_p: rows of learned absolute position embeddings (0: rotary embeddings, no parameters)",
        letter="s_p",
        rule=NAME,
        switch=True,
    )
    dropout: bool = feature(
        False, "dropout on the attention probabilities and after the attention and MLP blocks", rule=NAME, switch=True
    )
    # multi-head latent attention (DeepSeek-V2/V3, Kimi K2) when kv_lora > 0: head_dim is then the no-RoPE part of a
    # query/key head (qk_nope_head_dim), and k = a (every head has its own decompressed key and value)
    q_lora: int = feature(
        0,
        "q_r: rank of the query latent (q_lora_rank; 0: a plain query projection h -> a (dh + d_r))",
        letter="q_r",
        keys=("q_lora_rank",),
        switch=True,
    )
    kv_lora: int = feature(
        0, "kv_r: rank of the key/value latent (kv_lora_rank; 0: no MLA)", letter="kv_r", keys=("kv_lora_rank",)
    )
    rope_dim: int = feature(
        0,
        "d_r: the decoupled RoPE part of a query/key head, one RoPE key shared by all heads",
        letter="d_r",
        keys=("qk_rope_head_dim",),
    )
    v_dim: int = feature(
        0,
        "d_v: width of a value head (v_head_dim; with GQA, 0: dh, else V and O at d_v: MiMo-V2-Flash)",
        letter="d_v",
        keys=("v_head_dim",),
    )
    mtp: int = feature(
        0,
        "multi-token-prediction modules after the last layer (num_nextn_predict_layers, DeepSeek-V3)",
        letter="n_mtp",
        rule=NAME,
        keys=("num_nextn_predict_layers",),
        switch=True,
    )
    mtp_repeated: bool = feature(
        False, "one MTP module run at each of the mtp depths (Megatron-Core --mtp-use-repeated-layer)", rule=NAME
    )
    # DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5) when index_heads > 0: beside MLA with a query latent, a lightning
    # indexer in every layer scores every key for each query and the attention reads the top index_topk of them
    index_heads: int = feature(0, "n_i: the indexer's heads (index_n_heads)", letter="n_i", keys=("index_n_heads",))
    index_dim: int = feature(
        0,
        "d_i: the indexer's head width (index_head_dim; its last d_r are rotated)",
        letter="d_i",
        keys=("index_head_dim",),
    )
    index_topk: int = feature(0, "k_i: keys each query attends to (index_topk)", letter="k_i", keys=("index_topk",))
    expert_bias: bool = feature(
        False, "a [E] routing-score correction bias in each MoE layer (e_score_correction_bias)", rule=NAME, switch=True
    )
    sigmoid: bool = feature(
        False,
        "the router scores experts with a sigmoid, not a softmax (DeepSeek-V3's scoring_func)",
        rule=NAME,
        keys=("scoring_func",),
        switch=True,
    )
    sparsemixer: bool = feature(
        False, "phimoe's router: 2 experts Gumbel-sampled, SparseMixer's gradient (PhimoeTopKRouter)", rule=NAME
    )
    head_bias: bool = feature(
        False, "a bias [v] on the LM head (phimoe's lm_head_bias)", rule=NAME, keys=("lm_head_bias",)
    )
    # group-limited routing (DeepSeek-V3): k_e experts from the best group_topk of `groups` groups; allocates nothing
    groups: int = feature(0, "expert groups (n_group)", keys=("n_group",))
    group_topk: int = feature(0, "the groups a token's experts may come from (topk_group)", keys=("topk_group",))
    sandwich: bool = feature(False, "a norm after attention and after the MLP too (Gemma 2 and 3)", switch=True)
    logit_softcap: bool = feature(
        False,
        "logits soft-capped, cap tanh(logits / cap) (Gemma 2's final_logit_softcapping)",
        keys=("final_logit_softcapping",),
        switch=True,
    )
    attn_softcap: bool = feature(
        False,
        "attention scores soft-capped the same way (Gemma 2's attn_logit_softcapping)",
        rule=NAME,
        keys=("attn_logit_softcapping",),
        switch=True,
    )
    sinks: bool = feature(
        False, "a learned sink logit per head [a] in each layer's softmax (gpt-oss)", rule=NAME, switch=True
    )
    moe_bias: bool = feature(
        False,
        "biases on the router [E] and each expert's gate-up [2 f_e] and down [h] (gpt-oss)",
        rule=NAME,
        switch=True,
    )
    # Gated DeltaNet hybrids (Qwen3-Next, Qwen3.5): the layers in linear_layers hold a Gated DeltaNet, a chunked
    # linear-attention recurrence, in place of softmax attention; the other layers softmax attention
    linear_layers: tuple[int, ...] = feature(
        (), "indices of the Gated DeltaNet layers (layer_types 'linear_attention')", keys=("layer_types",)
    )
    lin_k_heads: int = feature(
        0,
        "n_gk: query/key heads of a Gated DeltaNet layer (linear_num_key_heads)",
        letter="n_gk",
        rule=LETTER,
        keys=("linear_num_key_heads",),
    )
    lin_v_heads: int = feature(
        0,
        "n_gv: value heads (linear_num_value_heads), a multiple of n_gk",
        letter="n_gv",
        keys=("linear_num_value_heads",),
    )
    lin_k_dim: int = feature(
        0, "d_gk: query/key head width (linear_key_head_dim)", letter="d_gk", keys=("linear_key_head_dim",)
    )
    lin_v_dim: int = feature(
        0, "d_gv: value head width (linear_value_head_dim)", letter="d_gv", keys=("linear_value_head_dim",)
    )
    conv_width: int = feature(
        0,
        "K_c: a Gated DeltaNet or Mamba-2 causal depthwise convolution's width (linear_conv_kernel_dim)",
        letter="K_c",
        keys=("linear_conv_kernel_dim",),
    )
    attn_gate: bool = feature(
        False, "softmax attention's output scaled by sigmoid(x W_g), W_g [h, a dh] (Qwen3-Next)", switch=True
    )
    # Mamba-2 hybrids (Nemotron-H): the layers in mamba_layers hold a Mamba-2 mixer in place of attention; a block
    # may hold a mixer alone (mlpless_layers) or an MLP alone (mixerless_layers), each with its one norm
    mamba_layers: tuple[int, ...] = feature((), "indices of the Mamba-2 layers (Nemotron-H's \"M\")")
    mixerless_layers: tuple[int, ...] = feature((), "layers of an MLP alone, no token mixer (Nemotron-H's \"-\")")
    mlpless_layers: tuple[int, ...] = feature(
        (), "layers of a token mixer alone, no MLP (Nemotron-H's \"M\" and \"*\")"
    )
    ssm_heads: int = feature(
        0, "n_m: a Mamba-2 layer's heads (mamba_num_heads)", letter="n_m", rule=LETTER, keys=("mamba_num_heads",)
    )
    ssm_head_dim: int = feature(
        0, "d_m: a Mamba-2 head's width (mamba_head_dim)", letter="d_m", keys=("mamba_head_dim",)
    )
    ssm_state: int = feature(0, "d_s: the SSM state size (ssm_state_size)", letter="d_s", keys=("ssm_state_size",))
    ssm_groups: int = feature(
        0, "g_m: the groups sharing B and C (n_groups)", letter="g_m", rule=LETTER, keys=("n_groups",)
    )
    ssm_conv_bias: bool = feature(
        False,
        "a bias on the Mamba-2 convolution (use_conv_bias); its width is K_c (conv_width)",
        keys=("use_conv_bias",),
        switch=True,
    )
    swa_layers: tuple[int, ...] = feature(
        (), "layers whose attention has its own swa_k KV heads (MiMo-V2-Flash's SWA ones)"
    )
    swa_k: int = feature(
        0,
        "k_w: the KV heads of the swa_layers (swa_num_key_value_heads; config.swa checks the three)",
        letter="k_w",
        rule=LETTER,
        keys=("swa_num_key_value_heads",),
    )
    swa_sinks: bool = feature(
        False, "a learned sink logit per head [a] in the swa_layers' softmax (add_swa_attention_sink_bias)", switch=True
    )
    layer_window: tuple[int, ...] = feature(
        (),
        "keys each layer's sliding window spans (0: full causal; (): none; step time only)",
        keys=("sliding_window",),
    )
    # a block config per layer (DeciLM / nemotron-nas; config.blocks): each layer's KV heads (0: no attention) and SwiGLU
    # width (0: no MLP), k and f then the largest; () where every layer is alike
    layer_k: tuple[int, ...] = feature((), "each layer's KV heads (0: no attention)")
    layer_f: tuple[int, ...] = feature((), "each layer's SwiGLU width (0: no MLP)")
    g_layers: tuple[int, ...] = feature(
        (),
        "Gemma 4 (config/gemma4.py, when g_dh > 0): its full-attention layers (the others slide, at dh and k), of "
        "heads g_dh wide with g_k KV heads",
    )
    g_dh: int = feature(0, "their head width (global_head_dim)", keys=("global_head_dim",))
    g_k: int = feature(
        0,
        "their KV heads (num_global_key_value_heads under attention_k_eq_v, else k)",
        keys=("num_global_key_value_heads", "attention_k_eq_v"),
    )
    k_eq_v: bool = feature(
        False, "a full layer's values are its keys: no V projection (attention_k_eq_v)", keys=("attention_k_eq_v",)
    )
    kv_shared: int = feature(
        0,
        "the last kv_shared layers reuse an earlier layer's K and V (num_kv_shared_layers)",
        keys=("num_kv_shared_layers",),
    )
    wide_shared: bool = feature(
        False, "those layers' MLPs are 2f wide (use_double_wide_mlp)", keys=("use_double_wide_mlp",)
    )
    ple: int = feature(
        0,
        "d_pl: per-layer input embeddings' width per layer (hidden_size_per_layer_input; 0: none)",
        keys=("hidden_size_per_layer_input",),
    )
    ple_v: int = feature(
        0, "v_pl: their table's rows (vocab_size_per_layer_input)", keys=("vocab_size_per_layer_input",)
    )
    moe_beside: bool = feature(
        False, "every layer's E experts beside its dense MLP (enable_moe_block)", keys=("enable_moe_block",)
    )
    vision: Tower | None = feature(
        None, "a multimodal checkpoint's vision tower and projector (config.vision)", switch=True
    )


FEATURES = fields(Features)
# the letters whose field has another name (q_r is q_lora): glossary.TRAINING_FIELD's model part
SHAPE_FIELD = {f.metadata["letter"]: f.name for f in FEATURES if f.metadata["letter"] not in (None, f.name)}
RULE_READS = tuple(f.name for f in FEATURES if f.metadata["rule"] == NAME)  # read by the rules under their own name
RULE_LETTERS = tuple(f.metadata["letter"] for f in FEATURES if f.metadata["rule"] == LETTER)  # and under a letter
CHOICES = {f.name: f.metadata["choices"] for f in FEATURES if f.metadata["choices"]}  # the named choices' values
