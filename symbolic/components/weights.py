"""Parameter counts per GPU and per pipeline stage, and the bf16 weights they occupy (Fujii et al. 2024, Megatron-LM):
Q, O h x a*dh, K, V h x k*dh (dh = h/a unless the config says otherwise), three h x f SwiGLU matrices; matrices split
over t, norms replicated. Routed experts are counted apart (components.experts): their weights split over e*t_e and
their states over the expert data-parallel group."""

from __future__ import annotations

import sympy as sp

from ..config.switches import Switches
from ..config.symbols import B_w, E, L, L_e, a, d_i, d_l, d_r, d_v, dh, f, f_s, h, k, k_w, kv_r, n_i, p, q_r, s_p, t, v
from .base import GROUPS, Component


def indexer_params(sw: Switches = Switches()) -> sp.Expr:
    """DeepSeek Sparse Attention's lightning indexer of one layer, replicated over t (Megatron-Core 0.16.1 DSAIndexer:
    its three TELinears parallel_mode 'duplicated'): wq_b [q_r, n_i d_i], wk [h, d_i], weights_proj [h, n_i] and the
    key's LayerNorm weight and bias [d_i]; 0 without one."""
    return q_r * n_i * d_i + h * d_i + 2 * d_i + h * n_i if sw.dsa else sp.Integer(0)


def mla_params(sw: Switches = Switches()) -> sp.Expr:
    """Multi-head latent attention of one layer on one TP rank as Megatron-Core lays it out (MLASelfAttention,
    NVIDIA/Megatron-LM d98e8a6): the down-projections q_a [h, q_r] and kv_a [h, kv_r + d_r] (the latents and the
    one RoPE key) and the latents' RMSNorm scales [q_r], [kv_r] replicated (TELinear, parallel_mode 'duplicated'); the
    up-projections q_b [q_r, a (dh + d_r)] (or, without a query latent, q [h, a (dh + d_r)]) and kv_b
    [kv_r, a (dh + d_v)] column-parallel, o [a d_v, h] row-parallel, each split over t with its heads; the sparse
    attention's indexer where the model has one."""
    queries = h * q_r + q_r + q_r * a * (dh + d_r) / t if sw.q_lora else h * a * (dh + d_r) / t
    return queries + h * (kv_r + d_r) + kv_r + kv_r * a * (dh + d_v) / t + a * d_v * h / t + indexer_params(sw)


def attention_params(sw: Switches = Switches()) -> sp.Expr:
    """Q, O (h x a*dh each) and K, V (h x k*dh each) of one layer on one TP rank, with the biases of Q, K, V (split
    over t) and of O (replicated) and the q/k norm scales: per head dh each, replicated (Qwen3), or over the whole
    a*dh and k*dh projections, split with their heads (OLMoE), or none (Llama 4's weightless norm); multi-head
    latent attention's where the model has it; gpt-oss's sink logits [a], split with their heads; a gated
    attention's gate projection [h, a dh] and its bias (Qwen3-Next; Megatron-Core's linear_qkv grows by them), split
    over t; value heads d_v wide where the model's are narrower than dh (gqa_params)."""
    if sw.mla:
        return mla_params(sw)
    if sw.narrow_v:
        return gqa_params(sw, k, sw.sinks)
    gate = 1 if sw.attn_gate else 0
    matrices = 2 * h * dh * (a + k) / t + gate * h * a * dh / t
    bias = ((a * (1 + gate) + 2 * k) * dh / t if sw.qkv_bias else 0) + (h if sw.o_bias else 0)
    norm = {"none": 0, "head": 2 * dh, "full": (a + k) * dh / t, "weightless": 0}[sw.qk_norm]
    return matrices + bias + norm + (a / t if sw.sinks else 0)


def gqa_params(sw: Switches, kv: sp.Expr, sinks: bool) -> sp.Expr:
    """GQA attention of `kv` KV heads whose value heads are value_width wide (d_v in MiMo-V2-Flash; config.swa refuses
    it beside a gate or MLA), on one TP rank: linear_qkv [h, (a dh + kv dh + kv d_v) / t] column-parallel and
    linear_proj [a d_v / t, h] row-parallel (megatron-core 0.16.1 attention.py sizes both from kv_channels alone;
    its MLA passes the value width of its own to TEDotProductAttention as k_channels / v_channels,
    transformer_engine.py, as transformers 5.25.0 MiMoV2FlashAttention builds v_proj [h, kv d_v] and o_proj
    [a d_v, h]); Q, K, V biases over t, O's replicated; q/k norms at dh; sinks [a] split with their heads
    (dot_product_attention.py softmax_offset)."""
    dv = value_width(sw)
    matrices = h * (a + kv) * dh / t + h * (kv + a) * dv / t
    bias = ((a + kv) * dh / t + kv * dv / t if sw.qkv_bias else 0) + (h if sw.o_bias else 0)
    norm = {"none": 0, "head": 2 * dh, "full": (a + kv) * dh / t, "weightless": 0}[sw.qk_norm]
    return matrices + bias + norm + (a / t if sinks else 0)


def swa_attention_params(sw: Switches = Switches()) -> sp.Expr:
    """One sliding-window layer's attention where those layers have KV heads of their own (MiMo-V2-Flash): GQA of
    k_w KV heads, its sinks [a] where add_swa_attention_sink_bias says so (gqa_params; megatron-core 0.16.1 sets a
    layer's own num_query_groups through HeterogeneousTransformerConfig.get_config_for_layer and its window through
    window_size / window_attn_skip_freq, a list per layer; the window changes no tensor's size)."""
    return gqa_params(sw, k_w, sw.swa_sinks)


def value_width(sw: Switches) -> sp.Expr:
    """A GQA value head's width: d_v where the model's are narrower than its q/k heads (MiMo-V2-Flash), else dh."""
    return d_v if sw.narrow_v else dh


def mlp_params(sw: Switches = Switches()) -> sp.Expr:
    """SwiGLU gate, up (h x f) and down (f x h) of one dense layer on one TP rank, 3hf/t, or GPT's fc1 (h x f) and
    fc2 (f x h), 2hf/t; with mlp_bias the column-parallel biases (over t) and the down / fc2 bias (replicated)."""
    n = 3 if sw.mlp == "swiglu" else 2
    return n * h * f / t + (((n - 1) * f / t + h) if sw.mlp_bias else 0)


def moe_dense_params(sw: Switches = Switches()) -> sp.Expr:
    """The parts of one MoE layer's MLP that are not routed experts, on one TP rank: the router [h, E], replicated
    (Megatron-Core's TopKRouter weight), the shared experts' SwiGLU 3 h f_s / t (squared ReLU: 2 h f_s / t;
    Megatron-Core SharedExpertMLP, split over t like a dense MLP), their gate [h, 1] (Qwen2-MoE), the router's bias
    [E] (gpt-oss's GptOssTopKRouter), a latent MoE's projections [h, d_l] and [d_l, h], replicated over t
    (megatron-core 0.16.1 moe_layer.py: fc1_latent_proj and fc2_latent_proj, TELinear parallel_mode "duplicated")."""
    n = 3 if sw.mlp == "swiglu" else 2
    return (
        h * E
        + (n * h * f_s / t if sw.shared else 0)
        + (h if sw.shared_gate else 0)
        + (E if sw.moe_bias else 0)
        + (2 * h * d_l if sw.latent else 0)
    )


def norm_params(sw: Switches = Switches()) -> sp.Expr:
    """The norms of one layer, replicated over TP ranks: two RMSNorm weights 2h, or LayerNorm weights and biases 4h;
    with sandwich norms four (Gemma2DecoderLayer: input, post-attention, pre- and post-feedforward)."""
    return (4 if sw.sandwich else 2) * final_norm_params(sw)


def mixer_params(sw: Switches = Switches(), mixer: str = "attention") -> sp.Expr:
    """One layer's token mixer on one TP rank: attention, a sliding-window layer's of its own KV heads (swa), a Gated
    DeltaNet (components.gdn), a Mamba-2 mixer (components.mamba), or none."""
    if mixer == "swa":
        return swa_attention_params(sw)
    if mixer == "gdn":
        from .gdn import gdn_params

        return gdn_params(sw)
    if mixer == "mamba":
        from .mamba import mamba_params

        return mamba_params(sw)
    return attention_params(sw) if mixer == "attention" else sp.Integer(0)


def layer_params(sw: Switches = Switches(), moe: bool = False, mixer: str = "attention", ffn: bool = True) -> sp.Expr:
    """Every parameter of one transformer layer on one TP rank but its routed experts: its mixer (attention unless
    said), norms and a dense MLP, or (moe) the router and shared experts; a layer without a mixer or without an MLP
    (ffn False) one norm fewer."""
    if mixer != "none" and ffn:
        return mixer_params(sw, mixer) + norm_params(sw) + (moe_dense_params(sw) if moe else mlp_params(sw))
    return (
        mixer_params(sw, mixer)
        + final_norm_params(sw)
        + ((moe_dense_params(sw) if moe else mlp_params(sw)) if ffn else 0)
    )


def kind_terms(sw: Switches, f, kinds: dict) -> sp.Expr:
    """What a stage's hybrid kinds add to `layers` x f(layer of attention and a dense MLP): each Gated DeltaNet (Lg_r),
    Mamba-2 (Lm_r), MLP-alone (Lo_r), mixer-alone (Ln_r) and sliding-window (Lw_r) layer's f(mixer, ffn) less that
    layer's (f is additive over a layer's mixer and MLP, so the kinds combine with the MoE layers' own term); 0 for a
    model without them."""
    base = f("attention", True)
    terms = {
        "Lg_r": ("gdn", True),
        "Lm_r": ("mamba", True),
        "Lo_r": ("none", True),
        "Ln_r": ("attention", False),
        "Lw_r": ("swa", True),
    }
    return sp.Add(*(kinds[name] * (f(*terms[name]) - base) for name in terms if name in kinds))


def kind_cases(sw: Switches, layers: sp.Expr, moe_layers: sp.Expr, kinds: dict) -> list[tuple]:
    """(moe, mixer, ffn, condition) for each kind of layer a hybrid's stage may hold: a mixer the stage has (softmax
    attention where layers - Lg_r - Lm_r - Lo_r - Lw_r > 0, a Gated DeltaNet where Lg_r > 0, a Mamba-2 mixer where
    Lm_r > 0, none where Lo_r > 0, a sliding-window layer's attention where Lw_r > 0) with an MLP it has (dense, MoE
    where Le_r > 0, none where Ln_r > 0), a pair of a mixer and an MLP taken as held where both are and the stage
    has layers of both parts (an upper bound where it pairs them
    otherwise)."""
    zero = sp.Integer(0)
    Lg, Lm, Lo, Ln, Lw = (kinds.get(name, zero) for name in ("Lg_r", "Lm_r", "Lo_r", "Ln_r", "Lw_r"))
    moe_layers = moe_layers if sw.moe else zero
    mixers = [("attention", layers - Lg - Lm - Lo - Lw > 0)] + [
        (mixer, n > 0) for mixer, n in (("gdn", Lg), ("mamba", Lm), ("none", Lo), ("swa", Lw)) if n != 0
    ]
    ffns = (
        [(False, True, layers - moe_layers - Ln > 0)]
        + ([(True, True, moe_layers > 0)] if sw.moe else [])
        + ([(False, False, Ln > 0)] if Ln != 0 else [])
    )
    two_part = layers - Lo - Ln > 0 if (Lo != 0 or Ln != 0) else sp.true  # layers of a mixer and an MLP
    return [
        (moe, mixer, ffn, sp.And(held, there, two_part if mixer != "none" and ffn else sp.true))
        for mixer, held in mixers
        for moe, ffn, there in ffns
        if mixer != "none" or ffn
    ]


def layers_params(sw: Switches, layers: sp.Expr, moe_layers: sp.Expr, kinds: dict | None = None) -> sp.Expr:
    """Parameters but the routed experts of `layers` layers of which `moe_layers` are MoE layers and `kinds` the
    hybrid kinds' counts (config.kinds.present; default each kind's share L_g/p and so on)."""
    kinds = default_kinds("first", sw) if kinds is None else kinds
    mixers = kind_terms(sw, lambda mixer, ffn: layer_params(sw, mixer=mixer, ffn=ffn), kinds)
    if not sw.moe:
        return layers * layer_params(sw) + mixers
    return (
        layers * (attention_params(sw) + norm_params(sw))
        + (layers - moe_layers) * mlp_params(sw)
        + moe_layers * moe_dense_params(sw)
        + mixers
    )


def embedding_params(sw: Switches = Switches()) -> sp.Expr:
    """Input embedding v x h, vocabulary-parallel over t (first stage), and learned position embeddings s_p x h,
    replicated over TP ranks (Megatron-LM's LanguageModelEmbedding: a plain embedding)."""
    return h * v / t + (s_p * h if sw.positions else 0)


def final_norm_params(sw: Switches = Switches()) -> sp.Expr:
    """Final norm, replicated over TP ranks: an RMSNorm weight h, or a LayerNorm weight and bias 2h."""
    return h if sw.norm == "rms" else 2 * h


def head_params(sw: Switches = Switches()) -> sp.Expr:
    """Final norm plus LM head v x h split over t (last stage; Megatron keeps a copy even when tied)."""
    return final_norm_params(sw) + h * v / t


def end_params(stage: str, sw: Switches = Switches()) -> sp.Expr:
    """Parameters a stage holds besides its layers: the embedding (first), final norm + LM head (last), both (only).

    Tied embeddings change only p = 1: Megatron-LM (tie_embeddings_and_output_weights) keeps a separate copy of the
    embedding on the last stage when p > 1, synchronised by an all-reduce of its gradients, so first and last stages
    count a v x h matrix each; with p = 1 the one matrix is both embedding and LM head."""
    only_head = final_norm_params(sw) if sw.tied else head_params(sw)
    return {
        "first": embedding_params(sw),
        "middle": sp.Integer(0),
        "last": head_params(sw),
        "only": embedding_params(sw) + only_head,
    }[stage]


def default_layers(stage: str) -> tuple[sp.Expr, sp.Expr]:
    """A stage's layers and MoE layers when none are given: L/p and L_e/p (L and L_e on the only stage)."""
    return (L, L_e) if stage == "only" else (L / p, L_e / p)


def default_kinds(stage: str, sw: Switches) -> dict:
    """A stage's counts of the hybrid kinds the switches have (config.kinds.present) when none are given: each
    kind's L_g/p, L_m/p, ... (the whole count on the only stage); the BF16 layers (Lb_r, Lbe_r) none: they are
    placed by rank alone (estimate's stages)."""
    from ..config.kinds import KINDS, present
    from ..config.symbols import BY_NAME

    return {name: BY_NAME[KINDS[name]] / (1 if stage == "only" else p) for name in present(sw) if name in KINDS}


def stage_params(
    stage: str,
    sw: Switches = Switches(),
    layers: sp.Expr | None = None,
    moe_layers: sp.Expr | None = None,
    kinds: dict | None = None,
) -> sp.Expr:
    """Parameters but the routed experts held by one GPU of the given pipeline stage: `layers` layers (default L/p;
    L on the only stage), `moe_layers` of them MoE layers (default L_e/p), `kinds` its hybrid kinds' counts (default
    their shares), and its end_params."""
    default = default_layers(stage)
    layers = default[0] if layers is None else layers
    moe_layers = default[1] if moe_layers is None else moe_layers
    kinds = default_kinds(stage, sw) if kinds is None else kinds
    return end_params(stage, sw) + layers_params(sw, layers, moe_layers, kinds)


def head_at_p1(sw: Switches = Switches()) -> sp.Expr:
    """The final norm and LM head the first stage holds at p = 1, where it is the only stage (the published form
    leaves them out); 0 at p > 1."""
    return sp.Piecewise((end_params("only", sw) - end_params("first", sw), sp.Eq(p, 1)), (0, True))


def paper_params(sw: Switches = Switches()) -> sp.Expr:
    """Parameters the paper charges to the most loaded GPU: the first stage, embedding plus L/p layers (and at p = 1
    the head the only stage holds)."""
    return stage_params("first", sw) + head_at_p1(sw)


def weights(params: sp.Expr, sw: Switches) -> Component:
    """The model weights the GPU keeps between steps: all of its stage's, sharded over d*c by ZeRO-3."""
    if sw.sharded_weights:
        return Component(
            "weights",
            B_w * params / GROUPS.zero_group,
            "bf16 model weights, B_w bytes per parameter, sharded over "
            "the d*c data-parallel ranks (ZeRO-3; torch FSDP FULL_SHARD, Megatron-LM FSDP optim_grads_params)",
        )
    return Component("weights", B_w * params, "bf16 model weights, B_w bytes per parameter (Megatron mixed precision)")
