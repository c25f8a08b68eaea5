"""Nemotron-H: Mamba-2 hybrids whose layers are one-part blocks (transformers 5.25.0 NemotronHConfig; NVIDIA's own
remote code reads the same keys)."""

from __future__ import annotations

from ..hfkeys import (
    TRUE_OR_FALSE,
    BASE,
    Only,
    Reader,
    count_or_null,
    false_or_null,
    number,
    number_or_null,
    real,
    real_or_null,
    zero_or_null,
)
from .registry import family

BLOCKS = {"M": "linear_attention", "*": "full_attention", "-": "mlp", "E": "moe"}  # _pattern_to_list's mapping
SSM = ("mamba_num_heads", "mamba_head_dim", "ssm_state_size", "n_groups", "conv_kernel", "use_conv_bias")
ALIASES = {"mamba_n_groups": "n_groups", "mamba_d_conv": "conv_kernel", "mamba_conv_bias": "use_conv_bias"}
# keys that change nothing a training step allocates: the scan's chunk and time-step initialisation and limits, the
# inference kernels and cache, the logits kept at inference, the init rescaling; expand (d_inner is n_m d_m when the
# heads are given: NemotronHMamba2Mixer); the MoE keys a dense pattern never builds (transformers saves its defaults)
INERT = (
    "chunk_size",
    "mamba_chunk_size",
    "time_step_min",
    "time_step_max",
    "time_step_floor",
    "time_step_limit",
    "time_step_rank",
    "mamba_dt_min",
    "mamba_dt_max",
    "mamba_dt_init_floor",
    "mamba_dt_limit",
    "use_mamba_kernels",
    "mamba_ssm_cache_dtype",
    "num_logits_to_keep",
    "rescale_prenorm_residual",
    "layer_norm_epsilon",
    "expand",
    "mamba_expand",
    "norm_eps",
    "partial_rotary_factor",
)
# norm_eps and partial_rotary_factor (Nemotron 3 Super's file): kept as extra attributes by NemotronHConfig, read by
# no module of transformers 5.25.0's modeling_nemotron_h.py (an epsilon; its attention has no rotary embedding)
# INERT's float attributes of NemotronHConfig (Infinity and NaN read, as Python's json writes them); the others are ints
FLOATS = (
    "time_step_min",
    "time_step_max",
    "time_step_floor",
    "mamba_dt_min",
    "mamba_dt_max",
    "mamba_dt_init_floor",
    "layer_norm_epsilon",
    "norm_eps",
    "partial_rotary_factor",
)
MOE_KEYS = (
    "n_routed_experts",
    "n_shared_experts",
    "moe_intermediate_size",
    "moe_shared_expert_intermediate_size",
    "moe_latent_size",
    "moe_shared_expert_overlap",
    "num_experts_per_tok",
    "routed_scaling_factor",
    "n_group",
    "topk_group",
    "norm_topk_prob",
)
NEMOTRON_H = (
    BASE
    + SSM
    + tuple(ALIASES)
    + INERT
    + MOE_KEYS
    + (
        "hybrid_override_pattern",
        "layers_block_type",
        "attention_head_dim",
        "attention_bias",
        "mlp_bias",
        "use_bias",
        "mamba_proj_bias",
        "mlp_hidden_act",
        "mamba_hidden_act",
        "hidden_dropout",
        "residual_in_fp32",
        "num_nextn_predict_layers",
        "mtp_layers_block_type",
        "mtp_hybrid_override_pattern",
    )
)


def _pattern(x) -> bool:
    return isinstance(x, str) and len(x) > 0 and set(x) <= set(BLOCKS)


NEMOTRON_H_VALUES = {
    "hybrid_override_pattern": Only(
        lambda x: x is None or _pattern(x), "blocks M (Mamba-2), * (attention), - (MLP) and E (MoE)"
    ),
    "layers_block_type": Only(
        lambda x: x is None or isinstance(x, list) and len(x) > 0 and all(kind in BLOCKS.values() for kind in x),
        "linear_attention (Mamba-2), full_attention, mlp and moe blocks",
    ),
    # the squared-ReLU MLP (Megatron-Core's squared_relu) and SiLU in the Mamba-2 gate: what mem4d's tensors are
    "mlp_hidden_act": Only(lambda x: x in ("relu2", None), "relu2 (the squared ReLU)"),
    "mamba_hidden_act": Only(lambda x: x in ("silu", None), "silu"),
    **{
        key: Only(
            false_or_null,
            "no biases (false): NemotronHAttention's projections have none, and mem4d models "
            "none on the MLP and the Mamba-2 projections",
        )
        for key in ("attention_bias", "mlp_bias", "use_bias", "mamba_proj_bias")
    },
    "use_conv_bias": TRUE_OR_FALSE,
    "mamba_conv_bias": TRUE_OR_FALSE,
    "hidden_dropout": Only(zero_or_null, "no dropout (0.0): dropout masks are not modelled for Nemotron-H"),
    # NVIDIA's remote code keeps the residual stream in fp32 with it (transformers 5.25.0 reads no such key); the
    # fp32 block inputs it means (Megatron-LM --fp32-residual-connection) are not modelled
    "residual_in_fp32": Only(false_or_null, "a bf16 residual stream (false): an fp32 one is not modelled"),
    "num_nextn_predict_layers": Only(lambda x: x is None or number(x) and x >= 0, "a number of MTP layers"),
    # the MTP layer's blocks: attention then MoE (NemotronHConfig's default ["full_attention", "moe"]), what
    # components.mtp counts; another pattern is refused (read only with MTP layers)
    "mtp_layers_block_type": Only(
        lambda x: x in (None, ["full_attention", "moe"]),
        "[\"full_attention\", \"moe\"] (an attention block, then an MoE block)",
    ),
    "mtp_hybrid_override_pattern": Only(lambda x: x in (None, "*E"), "*E (an attention block, then an MoE block)"),
    "attention_head_dim": Only(count_or_null, "a positive width (head_dim's older name)"),
    **{
        key: Only(real_or_null if key in FLOATS else number_or_null, "a number")
        for key in INERT
        if key
        not in (
            "time_step_limit",
            "mamba_dt_limit",
            "use_mamba_kernels",
            "mamba_ssm_cache_dtype",
            "rescale_prenorm_residual",
        )
    },
    # NemotronHConfig's time_step_limit is a tuple of floats (Nemotron 3 publishes [0.0, Infinity])
    **{
        key: Only(lambda x: x is None or isinstance(x, (list, tuple)) and all(real(y) for y in x), "two numbers")
        for key in ("time_step_limit", "mamba_dt_limit")
    },
    **{
        key: Only(lambda x: x is None or isinstance(x, bool), "true or false")
        for key in ("use_mamba_kernels", "rescale_prenorm_residual", "moe_shared_expert_overlap", "norm_topk_prob")
    },
    # NemotronHMoE builds one shared MLP of moe_shared_expert_intermediate_size whatever n_shared_experts says
    "n_shared_experts": Only(lambda x: x in (None, 1) and not isinstance(x, bool), "1 (one shared MLP)"),
    "routed_scaling_factor": Only(lambda x: x is None or real(x), "a number (it scales the routed output)"),
    "mamba_ssm_cache_dtype": Only(lambda x: x is None or isinstance(x, str), "a dtype name (the inference cache's)"),
    **{
        key: Only(count_or_null, "a positive size")
        for key in MOE_KEYS
        if key not in ("moe_shared_expert_overlap", "norm_topk_prob", "n_shared_experts", "routed_scaling_factor")
    },
}


def _kinds(r: Reader) -> list[str]:
    """The blocks in order: hybrid_override_pattern's characters, else layers_block_type (its default has an MoE
    block, so a file must give one of them)."""
    pattern = r.get("hybrid_override_pattern")
    if pattern is not None:
        kinds = [BLOCKS[ch] for ch in pattern]
        if r.get("layers_block_type") not in (None, kinds):
            raise r.fail("layers_block_type", "disagrees with hybrid_override_pattern")
        return kinds
    kinds = r.get("layers_block_type")
    if kinds is None:
        raise r.fail(
            "hybrid_override_pattern",
            "missing: give the blocks' pattern (the library's default is no published model's)",
        )
    return kinds


def _letters(r: Reader) -> dict:
    """The base letters, L the pattern's length (num_hidden_layers, deprecated, must agree), dh from head_dim or its
    older name attention_head_dim."""
    L = len(_kinds(r))
    if r.get("num_hidden_layers") not in (None, L):
        raise r.fail("num_hidden_layers", f"disagrees with the {L} blocks of the pattern")
    dh = r.count("head_dim", 0) or r.count("attention_head_dim", 0)
    if r.get("attention_head_dim") not in (None, dh):
        raise r.fail("attention_head_dim", f"disagrees with head_dim = {dh}")
    a = r.count("num_attention_heads")
    return {
        "h": r.count("hidden_size"),
        "f": r.count("intermediate_size"),
        "a": a,
        "k": r.count("num_key_value_heads", a),
        "L": L,
        "v": r.count("vocab_size"),
        "tied": r.flag("tie_word_embeddings"),
        "head_dim": dh or None,
    }


def _alias(r: Reader, key: str) -> str:
    """The key a file gives, its older alias (mamba_n_groups ...) if that is the one there (both: they must agree)."""
    old = next(name for name, new in ALIASES.items() if new == key)
    if old in r.raw and key in r.raw and r.raw[old] != r.raw[key]:
        raise r.fail(old, f"disagrees with {key}")
    return old if old in r.raw and key not in r.raw else key


def _experts(r: Reader, kinds: list[str]) -> dict:
    """The MoE blocks' fields (none without an E block): NemotronHMoE's n_routed_experts squared-ReLU experts of
    moe_intermediate_size, num_experts_per_tok per token by sigmoid scores with a score-correction bias
    (NemotronHTopkRouter), group-limited where n_group > 1, one shared squared-ReLU MLP of
    moe_shared_expert_intermediate_size, the latent projections of moe_latent_size; the other blocks dense_layers
    (no experts)."""
    if "moe" not in kinds:
        return {}
    groups, group_topk = r.count("n_group", 1), r.count("topk_group", 1)
    return {
        "E": r.count("n_routed_experts"),
        "k_e": r.count("num_experts_per_tok"),
        "f_e": r.count("moe_intermediate_size"),
        "f_s": r.count("moe_shared_expert_intermediate_size"),
        "moe_latent": r.count("moe_latent_size", 0),
        "expert_bias": True,
        "sigmoid": True,
        "dense_layers": tuple(i for i, kind in enumerate(kinds) if kind != "moe"),
        **({"groups": groups, "group_topk": group_topk} if group_topk < groups else {}),
    }


@family(
    "nemotron_h",
    NEMOTRON_H,
    "Nemotron-H (Mamba-2 hybrid of one-part blocks, MoE blocks)",
    letters=_letters,
    values=NEMOTRON_H_VALUES,
)
def nemotron_h(raw: dict, r: Reader) -> dict:
    """Nemotron-H (NemotronHBlock): each block one norm and one part: a Mamba-2 mixer (M), GQA attention without
    biases or RoPE parameters (*), a squared-ReLU MLP up [h, f], down [f, h] (-), or a latent MoE (E, _experts); a
    Mamba-2 mixer of mamba_num_heads heads of mamba_head_dim, ssm_state_size, n_groups, a conv1d of conv_kernel with
    a bias (use_conv_bias)."""
    kinds = _kinds(r)
    conv_bias = r.get(_alias(r, "use_conv_bias"), True)
    if not isinstance(conv_bias, bool):
        raise r.fail("use_conv_bias", "must be true or false")
    mlpless = ("linear_attention", "full_attention")
    blocks = {
        "mlp": "relu2",
        "mamba_layers": tuple(i for i, kind in enumerate(kinds) if kind == "linear_attention"),
        "mlpless_layers": tuple(i for i, kind in enumerate(kinds) if kind in mlpless),
        "mixerless_layers": tuple(i for i, kind in enumerate(kinds) if kind not in mlpless),
    }
    ssm = {
        "ssm_heads": r.count("mamba_num_heads"),
        "ssm_head_dim": r.count("mamba_head_dim"),
        "ssm_state": r.count("ssm_state_size"),
        "ssm_groups": r.count(_alias(r, "n_groups")),
        "conv_width": r.count(_alias(r, "conv_kernel")),
        "ssm_conv_bias": conv_bias,
    }
    mtp = {"mtp": r.count("num_nextn_predict_layers", 0, zero=True)}  # MTP layers: an attention and an MoE block
    return {**blocks, **(ssm if blocks["mamba_layers"] else {}), **_experts(r, kinds), **mtp}
