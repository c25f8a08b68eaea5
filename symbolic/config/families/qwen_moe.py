"""Qwen2-MoE and Qwen3-MoE config.json files (transformers' Qwen2MoeConfig, Qwen3MoeConfig)."""

from __future__ import annotations

from ..hfkeys import BASE, Only, Reader, TRUE_OR_FALSE
from .qwen import QWEN3_VALUES, qwen2, qwen3
from .registry import family

QWEN_MOE = ("num_experts", "num_experts_per_tok", "moe_intermediate_size", "decoder_sparse_step", "mlp_only_layers")


def _experts(r: Reader) -> str:
    """The key the expert count is under: num_experts, or num_local_experts (Qwen3MoeConfig's attribute, num_experts
    its alias in transformers 5.25.0); given both, they must agree."""
    if "num_local_experts" not in r.raw:
        return "num_experts"
    if r.raw.get("num_experts") not in (None, r.raw["num_local_experts"]):
        raise r.fail("num_local_experts", f"disagrees with num_experts = {r.raw['num_experts']}")
    return "num_local_experts"


def qwen_moe(raw: dict, r: Reader, shared: bool) -> dict:
    """Qwen2-MoE / Qwen3-MoE: layer i routes over num_experts experts of moe_intermediate_size unless it is in
    mlp_only_layers or (i + 1) % decoder_sparse_step != 0 (then a dense MLP of intermediate_size); Qwen2-MoE adds a
    shared expert of shared_expert_intermediate_size scaled by a sigmoid gate [h, 1] (transformers' Qwen2MoeSparseMoeBlock,
    Qwen3MoeDecoderLayer)."""
    E = r.count(_experts(r), 0, zero=True)
    L = r.count("num_hidden_layers")
    if E == 0:
        return {}
    step = r.count("decoder_sparse_step", 1)
    only = set(r.layers("mlp_only_layers", L))
    dense = tuple(i for i in range(L) if i in only or (i + 1) % step)
    out = {
        "E": E,
        "k_e": r.count("num_experts_per_tok"),
        "f_e": r.count("moe_intermediate_size"),
        "dense_layers": dense,
    }
    if shared:
        f_s = r.count("shared_expert_intermediate_size", 0, zero=True)
        out.update(f_s=f_s, shared_gate=f_s > 0)
    return out


@family(
    "qwen2_moe",
    BASE + QWEN_MOE + ("shared_expert_intermediate_size", "qkv_bias"),
    "Qwen2-MoE (shared expert)",
    values={"qkv_bias": TRUE_OR_FALSE},
)
def qwen2_moe(raw: dict, r: Reader) -> dict:
    """Qwen2-MoE: Qwen2's attention (Q, K, V biases unless qkv_bias is false: Qwen2MoeAttention), routed experts and
    a gated shared expert."""
    return {**qwen2(raw, r), "qkv_bias": r.flag("qkv_bias", True), **qwen_moe(raw, r, True)}


# Qwen3-MoE has no shared expert: shared_expert_intermediate_size (Qwen3-Coder's config) may only say 0
QWEN3_MOE_VALUES = QWEN3_VALUES | {
    "shared_expert_intermediate_size": Only(lambda x: x in (0, None), "no shared expert (0) in Qwen3-MoE")
}


@family(
    "qwen3_moe",
    BASE + QWEN_MOE + ("attention_bias", "use_qk_norm", "shared_expert_intermediate_size", "num_local_experts"),
    "Qwen3-MoE",
    values=QWEN3_MOE_VALUES,
)
def qwen3_moe(raw: dict, r: Reader) -> dict:
    """Qwen3-MoE: Qwen3's attention and routed experts."""
    return {**qwen3(raw, r), **qwen_moe(raw, r, False)}


# Qwen3-VL-MoE's language model (Qwen3VLMoeTextConfig, --text-only): Qwen3-MoE's layers, multimodal RoPE
family(
    "qwen3_vl_moe_text",
    BASE + QWEN_MOE + ("attention_bias", "num_local_experts"),
    "Qwen3-VL-MoE's language model",
    values=QWEN3_MOE_VALUES,
)(qwen3_moe)
