"""The checks of multi-head latent attention's widths (DeepSeek-V2/V3's MLA) and DeepSeek Sparse Attention's indexer
on a ModelShape: each refusal one line naming the model and the widths it got."""

from __future__ import annotations

from .bounds import positive as _positive
from .errors import ConfigError


def check_latent(shape) -> None:
    """Refuse latent-attention and indexer widths the components cannot hold (ModelShape.__post_init__ calls it)."""
    for name in ("q_lora", "kv_lora", "rope_dim", "v_dim", "mtp", "index_heads", "index_dim", "index_topk"):
        _positive(shape.name, name, getattr(shape, name), zero=True)  # mtp's too, where it was always checked
    if (shape.index_heads, shape.index_dim, shape.index_topk) != (0, 0, 0) and not (
        shape.index_heads and shape.index_dim > shape.rope_dim and shape.index_topk and shape.q_lora
    ):
        raise ConfigError(
            f"model {shape.name!r}: DeepSeek Sparse Attention's indexer needs index_heads, an "
            f"index_dim above rope_dim and index_topk, beside MLA with a query latent (q_lora), got "
            f"index_heads={shape.index_heads}, index_dim={shape.index_dim}, "
            f"index_topk={shape.index_topk}, q_lora={shape.q_lora}, rope_dim={shape.rope_dim}"
        )
    if shape.kv_lora:
        if not shape.rope_dim or not shape.v_dim or shape.k != shape.a or shape.rope_dim % 2:
            raise ConfigError(
                f"model {shape.name!r}: multi-head latent attention needs an even RoPE width "
                f"rope_dim, a value width v_dim and k = a heads, got rope_dim={shape.rope_dim}, "
                f"v_dim={shape.v_dim}, k={shape.k}, a={shape.a}"
            )
        if shape.qk_norm != "none" or shape.qkv_bias or shape.o_bias or shape.positions:
            raise ConfigError(
                f"model {shape.name!r}: multi-head latent attention with q/k norms, attention "
                "biases or learned positions is not modelled"
            )
    elif shape.q_lora or shape.rope_dim:
        raise ConfigError(f"model {shape.name!r}: q_lora and rope_dim describe MLA, but kv_lora=0")
