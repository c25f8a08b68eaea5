"""The glossary: every letter of Fujii et al. (arXiv 2411.06465) with its meaning, and where a configuration's value of
it comes from. No sympy here: symbols.py makes the sympy symbols, the estimator takes its inputs in this order."""

from __future__ import annotations

from .features import SHAPE_FIELD

SHAPE = {
    "s": "sequence length",
    "b": "micro batch size",
    "h": "hidden size",
    "f": "SwiGLU intermediate size",
    "a": "attention heads",
    "k": "key/value heads (GQA)",
    "L": "transformer layers",
    "v": "vocabulary size",
    "dh": "head width (head_dim; h/a unless the config says otherwise)",
    "s_p": "learned absolute position embeddings (their rows; 0 with rotary embeddings)",
}
# mixture of experts (config.json keys: num_local_experts / num_experts / n_routed_experts, num_experts_per_tok,
# moe_intermediate_size (Mixtral, OLMoE: intermediate_size), shared_expert_intermediate_size or n_shared_experts x
# moe_intermediate_size, and the dense layers of mlp_only_layers, decoder_sparse_step, first_k_dense_replace,
# moe_layer_freq; Nemotron 3's moe_latent_size, Megatron-Core's --moe-latent-size); C_f is a training choice
# (--moe-capacity)
MOE = {
    "E": "routed experts of an MoE layer",
    "k_e": "routed experts per token (top-k)",
    "f_e": "SwiGLU width of one routed expert",
    "f_s": "SwiGLU width of the shared experts in all (0: none)",
    "L_e": "MoE layers (the other L - L_e layers have a dense MLP of width f)",
    "C_f": "expert capacity factor: tokens an expert receives over an even share (dropless: the imbalance allowed)",
    "d_l": "the routed experts' input and output width in a latent MoE (moe_latent_size; 0: none, the experts read h)",
}
# multi-head latent attention (DeepSeek-V2/V3, Kimi K2; config.json keys q_lora_rank, kv_lora_rank,
# qk_rope_head_dim, v_head_dim; dh is then qk_nope_head_dim), multi-token prediction (num_nextn_predict_layers) and
# DeepSeek Sparse Attention's indexer (DeepSeek-V3.2, GLM-5: index_n_heads, index_head_dim, index_topk): each 0 for a
# model without them
MLA = {
    "q_r": "rank of MLA's query latent (q_lora_rank; 0: a plain query projection)",
    "kv_r": "rank of MLA's key/value latent (kv_lora_rank; 0: no MLA)",
    "d_r": "MLA's decoupled RoPE width of a query/key head, one RoPE key shared by all heads (qk_rope_head_dim)",
    "d_v": "a value head's width (v_head_dim): MLA's, or GQA value heads narrower than dh (MiMo-V2-Flash)",
    "n_mtp": "multi-token-prediction modules on the last stage (num_nextn_predict_layers)",
    "n_i": "DeepSeek Sparse Attention's lightning-indexer heads (index_n_heads; 0: no indexer)",
    "d_i": "the indexer's head width (index_head_dim)",
    "k_i": "keys each query attends to, the indexer's top-k (index_topk)",
}
# hybrids: Gated DeltaNet layers (Qwen3-Next, Qwen3.5: layer_types "linear_attention", linear_num_key_heads,
# linear_num_value_heads, linear_key_head_dim, linear_value_head_dim, linear_conv_kernel_dim) and Mamba-2 layers with
# one-part blocks (Nemotron-H: hybrid_override_pattern, mamba_num_heads, mamba_head_dim, ssm_state_size, n_groups,
# conv_kernel): each 0 for a model without them
HYBRID = {
    "L_g": "Gated DeltaNet (linear-attention) layers (the other L - L_g layers have softmax attention)",
    "n_gk": "a Gated DeltaNet layer's query/key heads (linear_num_key_heads)",
    "n_gv": "a Gated DeltaNet layer's value heads (linear_num_value_heads, a multiple of n_gk)",
    "d_gk": "a Gated DeltaNet query/key head's width (linear_key_head_dim)",
    "d_gv": "a Gated DeltaNet value head's width (linear_value_head_dim)",
    "K_c": "the width of a Gated DeltaNet or Mamba-2 layer's causal depthwise convolution (linear_conv_kernel_dim, "
    "conv_kernel)",
    "L_m": "Mamba-2 layers (Nemotron-H's M blocks)",
    "L_o": "layers of an MLP alone, with no token mixer (Nemotron-H's - blocks)",
    "L_n": "layers of a token mixer alone, with no MLP (Nemotron-H's M and * blocks)",
    "n_m": "a Mamba-2 layer's heads (mamba_num_heads)",
    "d_m": "a Mamba-2 head's width (mamba_head_dim)",
    "d_s": "the Mamba-2 state size (ssm_state_size)",
    "g_m": "the Mamba-2 groups sharing B and C (n_groups)",
}
# sliding-window layers with KV heads of their own (MiMo-V2-Flash: hybrid_layer_pattern or layer_types
# "sliding_attention", swa_num_key_value_heads; their sinks add_swa_attention_sink_bias), each 0 for a model without
SWA = {
    "L_w": "sliding-window layers with KV heads and sinks of their own (the other L - L_w layers have k KV heads)",
    "k_w": "the sliding-window layers' key/value heads (swa_num_key_value_heads)",
}
# a multimodal checkpoint's vision tower and projector (config.vision: Qwen3-VL's, Qwen3.5's, Llama 4's, Gemma 3's, Mistral 3's), each 0
# for a text model; n_v is a training choice (--image-tokens)
VISION = {
    "P_v": "the vision tower's and projector's parameters (vision_config, as Qwen3VLVisionModel, Llama4VisionModel, "
    "SiglipVisionModel or PixtralVisionModel builds them)",
    "A_v": "elements the vision tower keeps for backward per image token (its patches through every block, merger, "
    "adapter or pooling)",
    "n_v": "image tokens per sample (--image-tokens; 0: text-only activations)",
}
PARALLEL = {
    "d": "data-parallel size",
    "t": "tensor-parallel size (sequence parallel shares it)",
    "p": "pipeline-parallel size",
    "c": "context-parallel size",
    "e": "expert-parallel size (the experts of a layer split over e ranks)",
    "t_e": "expert tensor-parallel size (each expert split over t_e ranks; t unless --etp says)",
}
SCHEDULE = {
    "m": "micro batches per step, gbs / (b d)",
    "vpp": "virtual pipeline stages per rank",
    "n_ac": "torchtitan's per-layer selective checkpointing: every n_ac-th block fully checkpointed (--ac-every)",
}
BYTES = {
    "B_w": "bytes per weight",
    "B_g": "bytes per gradient",
    "B_o": "optimizer bytes per parameter",
    "B_a": "bytes per activation element",
    "B_l": "bytes per logit element the loss keeps for its backward (4 fp32, 2 bf16, 0 chunked / fused)",
    "B_q": "bytes per element of a GEMM input saved for backward, quantized with --fp8 (B_a without it)",
    "B_c": "bytes per weight element of Transformer Engine's cached FP8 weight copies (0 without --fp8)",
}
# one pipeline stage (rank r of p): what a stage's expressions take beyond the letters above; L_r = L/p and
# m_r = the schedule's in-flight count of rank r when the split is even
STAGE = {
    "r": "pipeline rank of a stage, 0 (first) to p - 1 (last)",
    "L_r": "layers on pipeline rank r (L/p with an even split; --stage-layers otherwise)",
    "m_r": "micro batches (of a whole stage) in flight on rank r at its peak",
    "Le_r": "MoE layers among the L_r layers of pipeline rank r",
    "Lg_r": "Gated DeltaNet layers among the L_r layers of pipeline rank r",
    "Lm_r": "Mamba-2 layers among the L_r layers of pipeline rank r",
    "Lo_r": "layers of an MLP alone among the L_r layers of pipeline rank r",
    "Ln_r": "layers of a token mixer alone among the L_r layers of pipeline rank r",
    "Lw_r": "sliding-window layers with KV heads of their own among the L_r layers of pipeline rank r",
}
# the estimator's inputs, in this order
NAMES = tuple(SHAPE | MOE | MLA | HYBRID | SWA | VISION | PARALLEL | SCHEDULE | BYTES)
EXPERT_LETTERS = (*MOE, "e", "t_e", "Le_r")  # what only a model with experts has
MLA_LETTERS = tuple(MLA)  # what only a model with MLA or multi-token prediction has
INDEXER_LETTERS = ("n_i", "d_i", "k_i")  # of those, what only a model with DeepSeek Sparse Attention's indexer has
HYBRID_LETTERS = (*HYBRID, "Lg_r", "Lm_r", "Lo_r", "Ln_r")  # what only a hybrid (Gated DeltaNet, Mamba-2) has
SWA_LETTERS = (*SWA, "Lw_r")  # what only a model with sliding-window layers of their own KV heads has
# a stage's extra inputs (the in-flight count takes r)
STAGE_NAMES = ("L_r", "m_r", "Le_r", "Lg_r", "Lm_r", "Lo_r", "Ln_r", "Lw_r")
MEANING = SHAPE | MOE | MLA | HYBRID | SWA | VISION | PARALLEL | SCHEDULE | BYTES | STAGE
LATEX = {
    "vpp": r"v_{pp}",
    "B_w": r"B_{w}",
    "B_g": r"B_{g}",
    "B_o": r"B_{o}",
    "B_a": r"B_{a}",
    "B_l": r"B_{l}",
    "B_q": r"B_{q}",
    "B_c": r"B_{c}",
    "L_r": r"L_{r}",
    "m_r": r"m_{r}",
    "dh": r"d_{h}",
    "s_p": r"s_{p}",
    "n_ac": r"n_{ac}",
    "k_e": r"k_{e}",
    "f_e": r"f_{e}",
    "f_s": r"f_{s}",
    "L_e": r"L_{e}",
    "C_f": r"C_{f}",
    "d_l": r"d_{l}",
    "t_e": r"t_{e}",
    "Le_r": r"L_{e,r}",
    "q_r": r"q_{r}",
    "kv_r": r"kv_{r}",
    "d_r": r"d_{r}",
    "d_v": r"d_{v}",
    "n_mtp": r"n_{mtp}",
    "n_i": r"n_{i}",
    "d_i": r"d_{i}",
    "k_i": r"k_{i}",
    "L_g": r"L_{g}",
    "n_gk": r"n_{gk}",
    "n_gv": r"n_{gv}",
    "d_gk": r"d_{gk}",
    "d_gv": r"d_{gv}",
    "K_c": r"K_{c}",
    "Lg_r": r"L_{g,r}",
    "L_m": r"L_{m}",
    "L_o": r"L_{o}",
    "L_n": r"L_{n}",
    "n_m": r"n_{m}",
    "d_m": r"d_{m}",
    "d_s": r"d_{s}",
    "g_m": r"g_{m}",
    "Lm_r": r"L_{m,r}",
    "Lo_r": r"L_{o,r}",
    "Ln_r": r"L_{n,r}",
    "P_v": r"P_{v}",
    "A_v": r"A_{v}",
    "n_v": r"n_{v}",
    "L_w": r"L_{w}",
    "k_w": r"k_{w}",
    "Lw_r": r"L_{w,r}",
}  # the rest: as named

# where a configuration's value of each letter comes from: these from ModelShape, the rest from Training (the
# attribute of the same name, or this field)
FROM_MODEL = (
    "h",
    "f",
    "a",
    "k",
    "L",
    "v",
    "dh",
    "s_p",
    "E",
    "k_e",
    "f_e",
    "f_s",
    "L_e",
    "d_l",
    *MLA,
    *HYBRID,
    *SWA,
    "P_v",
    "A_v",
)
TRAINING_FIELD = {
    **SHAPE_FIELD,  # the model's letters, read off features.Features (q_r is q_lora, ...)
    "n_ac": "n_ac",
    "B_w": "weight_bytes",
    "B_g": "grad_bytes",
    "B_o": "opt_bytes",
    "B_a": "act_bytes",
    "B_l": "logit_bytes",
    "B_q": "quant_bytes",
    "B_c": "cache_bytes",
    "e": "ep",
    "t_e": "etp_size",
    "C_f": "moe_capacity",
    "n_v": "image_tokens",
}


def inputs_for(shape, training) -> dict[str, int]:
    """Every letter's value for one model shape and training config (ModelShape, Training), by name: the estimator's
    named inputs."""
    return {name: getattr(shape if name in FROM_MODEL else training, TRAINING_FIELD.get(name, name)) for name in NAMES}
