"""Each family's key aliases: the names transformers' configuration class maps onto its attributes (the class's
attribute_map, transformers 5.25.0 src/transformers/models/<model_type>/configuration_<model_type>.py), so a file
that writes an alias is read as the library reads it (gpt2's max_position_embeddings is n_positions, its learned
positions' length)."""

from __future__ import annotations

from ..errors import ConfigError

ALIASES: dict[str, dict[str, str]] = {  # model_type -> {alias: the attribute it names}
    "mixtral": {"num_experts": "num_local_experts"},
    "qwen3_moe": {"num_experts": "num_local_experts"},
    "qwen3_vl_moe_text": {"num_experts": "num_local_experts"},
    "olmoe": {"num_local_experts": "num_experts"},
    "deepseek_v2": {"num_experts": "n_routed_experts"},
    "deepseek_v3": {"num_local_experts": "n_routed_experts", "num_mtp_layers": "num_nextn_predict_layers"},
    "deepseek_v32": {"num_local_experts": "n_routed_experts"},
    "glm_moe_dsa": {"num_local_experts": "n_routed_experts"},
    "gpt2": {
        "hidden_size": "n_embd",
        "max_position_embeddings": "n_positions",
        "num_attention_heads": "n_head",
        "num_hidden_layers": "n_layer",
    },
    "gpt_oss": {"num_experts": "num_local_experts"},
    "minimax_m2": {"num_experts": "num_local_experts"},
    "mimo_v2_flash": {"num_local_experts": "n_routed_experts"},
    "nemotron_h": {"layer_types": "layers_block_type", "num_local_experts": "n_routed_experts"},
}


def resolve(raw: dict, kind: str, keys: tuple[str, ...], path) -> dict:
    """raw with each alias the family does not read itself under its attribute's name (given both, they must agree:
    one line naming the alias otherwise)."""
    out = dict(raw)
    for alias, attribute in ALIASES.get(kind, {}).items():
        if alias not in out or alias in keys:
            continue
        if attribute in out and out[attribute] != out[alias]:
            raise ConfigError(
                f"{path}: key {alias!r} (transformers' alias of {attribute!r}) disagrees with {attribute!r}"
            )
        out[attribute] = out.pop(alias)
    return out
