"""MiMo-V2-Flash config.json files (model_type mimo_v2_flash): transformers 5.25.0's MiMoV2FlashConfig and its model
(src/transformers/models/mimo_v2_flash/configuration_mimo_v2_flash.py, modeling_mimo_v2_flash.py), with the keys of
XiaomiMiMo's published file (its remote code's hybrid_layer_pattern, moe_layer_freq, swa_* and sink switches) read at
the values that class builds."""

from __future__ import annotations

from ..hfkeys import BASE, Only, Reader, count_or_null, real
from .registry import family

HYBRID = (
    "hybrid_layer_pattern",
    "swa_num_attention_heads",
    "swa_num_key_value_heads",
    "swa_head_dim",
    "swa_v_head_dim",
    "add_swa_attention_sink_bias",
    "add_full_attention_sink_bias",
)
# the hub file's keys MiMoV2FlashConfig drops unread (its __post_init__'s "hub-only fields"): scalars and the window
# (attention_value_scale scales v, a tensor that exists either way; swa_rope_theta and partial_rotary_factor are RoPE's
# constants: no parameter), and DeepSeek-V3's routing keys at the values the class builds
HUB_ONLY = (
    "attention_value_scale",
    "attention_chunk_size",
    "sliding_window_size",
    "swa_rope_theta",
    "partial_rotary_factor",
    "layernorm_epsilon",
    "scoring_func",
    "topk_method",
    "n_shared_experts",
    "routed_scaling_factor",
    "n_group",
    "topk_group",
)
MOE = (
    "v_head_dim",
    "layer_types",
    "mlp_layer_types",
    "moe_layer_freq",
    "moe_intermediate_size",
    "n_routed_experts",
    "num_experts_per_tok",
    "attention_bias",
)


def _bits(x) -> bool:
    return isinstance(x, list) and all(i in (0, 1) and not isinstance(i, bool) for i in x)


MIMO_VALUES = {
    "layer_types": Only(
        lambda x: (
            x is None or isinstance(x, list) and all(kind in ("full_attention", "sliding_attention") for kind in x)
        ),
        "full_attention or sliding_attention per layer",
    ),
    "mlp_layer_types": Only(
        lambda x: x is None or isinstance(x, list) and all(kind in ("dense", "sparse") for kind in x),
        "dense or sparse (MoE) per layer",
    ),
    "hybrid_layer_pattern": Only(_bits, "a list of 0 (full attention) and 1 (sliding window) per layer"),
    "moe_layer_freq": Only(_bits, "a list of 0 (dense MLP) and 1 (MoE) per layer"),
    "attention_bias": Only(lambda x: x in (False, None), "no attention biases (false)"),
    "add_swa_attention_sink_bias": Only(
        lambda x: x in (True, None), "sinks in the sliding-window layers (true: what MiMoV2FlashAttention builds)"
    ),
    "add_full_attention_sink_bias": Only(lambda x: x in (False, None), "no sinks in the full-attention layers"),
    "attention_value_scale": Only(real, "a number (a scalar on v)"),
    "attention_chunk_size": Only(count_or_null, "a positive window"),
    "sliding_window_size": Only(count_or_null, "a positive window"),
    "swa_rope_theta": Only(real, "a number"),
    "partial_rotary_factor": Only(real, "a number (RoPE's part of dh)"),
    "layernorm_epsilon": Only(real, "a number"),
    "scoring_func": Only(lambda x: x in ("sigmoid", None), "sigmoid routing scores (what MiMoV2FlashTopKRouter has)"),
    "topk_method": Only(lambda x: x in ("noaux_tc", None), "noaux_tc: a score-correction bias [E]"),
    "n_shared_experts": Only(lambda x: x in (0, None) and not isinstance(x, bool), "no shared experts (null or 0)"),
    "routed_scaling_factor": Only(lambda x: x is None or real(x), "a number (it scales the routed output)"),
    "n_group": Only(lambda x: x in (1, None), "1 (one expert group)"),
    "topk_group": Only(lambda x: x in (1, None), "1 (one expert group)"),
}


def _per_layer(r: Reader, L: int, key: str, hub: str, on: str, default: list[bool]) -> list[bool]:
    """A per-layer switch: the class's list (key, entries equal to `on` set), else the hub file's 0/1 list (hub),
    else the class's default; both given must agree, each one entry per layer."""
    lists = [[x == on for x in r.get(key)]] if r.get(key) is not None else []
    lists += [[bool(x) for x in r.get(hub)]] if r.get(hub) is not None else []
    for name, value in zip((key, hub) if r.get(key) is not None else (hub,), lists):
        if len(value) != L:
            raise r.fail(name, f"needs one entry per layer (num_hidden_layers = {L})")
    if len(lists) == 2 and lists[0] != lists[1]:
        raise r.fail(hub, f"disagrees with {key}")
    return lists[0] if lists else default


@family(
    "mimo_v2_flash",
    BASE + MOE + HYBRID + HUB_ONLY,
    "MiMo-V2-Flash (sliding-window layers of their own KV heads)",
    values=MIMO_VALUES,
)
def mimo_v2_flash(raw: dict, r: Reader) -> dict:
    """MiMo-V2-Flash (MiMoV2FlashDecoderLayer): GQA attention of q/k heads head_dim wide and value heads v_head_dim
    wide (q [h, a dh], k [h, k dh], v [h, k d_v], o [a d_v, h]); the sliding-window layers with 2 k KV heads and a
    sink logit per head [a]; layer i an MoE where it is "sparse" (n_routed_experts of moe_intermediate_size, top
    num_experts_per_tok, sigmoid scores and a score-correction bias [E]), else a dense MLP of intermediate_size; no
    MTP module (MiMoV2FlashPreTrainedModel skips the checkpoint's model.mtp.* on load)."""
    L, a, dh, dv, k = (
        r.count(key)
        for key in ("num_hidden_layers", "num_attention_heads", "head_dim", "v_head_dim", "num_key_value_heads")
    )
    swa = _per_layer(
        r,
        L,
        "layer_types",
        "hybrid_layer_pattern",
        "sliding_attention",
        [not (i == 0 or (i + 1) % 6 == 0) for i in range(L)],
    )
    moe = _per_layer(r, L, "mlp_layer_types", "moe_layer_freq", "sparse", [i > 0 for i in range(L)])
    for key, same in (
        ("swa_num_attention_heads", a),
        ("swa_head_dim", dh),
        ("swa_v_head_dim", dv),
        ("swa_num_key_value_heads", 2 * k),
    ):
        if r.get(key) not in (None, same):
            raise r.fail(key, f"not modelled; MiMoV2FlashAttention builds the sliding-window layers' at {same}")
    out = {"v_dim": dv, "swa_layers": tuple(i for i in range(L) if swa[i])}
    out |= {"swa_k": 2 * k, "swa_sinks": True} if out["swa_layers"] else {}
    if any(moe):
        out |= {
            "E": r.count("n_routed_experts"),
            "k_e": r.count("num_experts_per_tok"),
            "f_e": r.count("moe_intermediate_size"),
            "expert_bias": True,
            "sigmoid": True,
            "dense_layers": tuple(i for i in range(L) if not moe[i]),
        }
    return out
