"""Llama-Nemotron NAS config.json files: model_type nemotron-nas, DeciLMForCausalLM (the checkpoints' remote code,
configuration_decilm.py, modeling_decilm.py, block_config.py; no class in transformers 5.25.0, so no library
defaults), a block config per layer (config.blocks), as Megatron-Core 0.16.1's HeterogeneousTransformerConfig reads
it (transformer/heterogeneous/heterogeneous_config.py)."""

from __future__ import annotations

from ..blocks import ffn_width
from ..hfkeys import BASE, Reader, false_or_null, number
from .registry import family

# head_dim is not a DeciLM key: its attention's heads are h / a wide (DeciLMAttention)
KEYS = tuple(key for key in BASE if key != "head_dim") + ("block_configs", "attention_bias", "mlp_bias")
# the keys of a block's attention and FFN that describe other layer kinds of the remote code: read at the value of
# plain GQA attention and a SwiGLU MLP, refused by name at any other
PLAIN = {
    "replace_with_linear": false_or_null,
    "num_sink_tokens": lambda x: x is None,
    "sparsify": lambda x: x is None,
    "window_length": lambda x: x is None,
    "unshifted_sink": false_or_null,
    "use_prefill_window_in_sink_attention": false_or_null,
}
PARTS = {
    "attention": (
        "no_op",
        "n_heads_in_group",
        "replace_with_linear",
        "num_sink_tokens",
        "sparsify",
        "window_length",
        "unshifted_sink",
        "use_prefill_window_in_sink_attention",
    ),
    "ffn": ("no_op", "ffn_mult", "replace_with_linear", "sparsify"),
}


def _block(block, i: int, a: int, h: int, r: Reader) -> tuple[int, int]:
    """Layer i's KV heads (a / n_heads_in_group, 0 for a no-op attention) and SwiGLU width (ffn_width of its
    ffn_mult, 0 for a no-op FFN); anything else refused in one line naming the block and key."""
    if not isinstance(block, dict) or sorted(block) != sorted(PARTS):
        raise r.fail("block_configs", f"block {i} must be an object of 'attention' and 'ffn'")
    sizes = []
    for part, keys in PARTS.items():
        config = block[part]
        if not isinstance(config, dict) or set(config) - set(keys):
            raise r.fail(
                "block_configs", f"block {i} {part}: an object of keys {', '.join(keys)} (others are not modelled)"
            )
        for key, allowed in PLAIN.items():
            if key in config and not allowed(config[key]):
                raise r.fail(
                    "block_configs",
                    f"block {i} {part}: {key} = {config[key]!r} is another layer kind of "
                    "the remote code (a linear in place of the part, sink tokens, a window, sparsity): not "
                    "modelled",
                )
        if not isinstance(config.get("no_op", False), bool):
            raise r.fail("block_configs", f"block {i} {part}: no_op must be true or false")
        sizes.append(0 if config.get("no_op", False) else _size(part, config, i, a, h, r))
    return sizes[0], sizes[1]


def _size(part: str, config: dict, i: int, a: int, h: int, r: Reader) -> int:
    """A present part's size: KV heads a / n_heads_in_group (a positive divisor of a), or the width of ffn_mult."""
    if part == "attention":
        group = config.get("n_heads_in_group")
        if not isinstance(group, int) or isinstance(group, bool) or group < 1 or a % group:
            raise r.fail(
                "block_configs",
                f"block {i} attention: n_heads_in_group must be a positive divisor of "
                f"num_attention_heads={a}, got {group!r}",
            )
        return a // group
    mult = config.get("ffn_mult")
    if not number(mult) or not 0 < mult < 2**20:
        raise r.fail("block_configs", f"block {i} ffn: ffn_mult must be a positive number, got {mult!r}")
    return ffn_width(mult, h)


def nas_letters(r: Reader) -> dict:
    """The letters a block config does not give: h, a, L, v and the head's tie (k and f: the build's)."""
    return {
        "h": r.count("hidden_size"),
        "a": r.count("num_attention_heads"),
        "L": r.count("num_hidden_layers"),
        "v": r.count("vocab_size"),
        "tied": r.flag("tie_word_embeddings"),
    }


@family("nemotron-nas", KEYS, "Llama-Nemotron NAS (DeciLM: a block config per layer)", nas_letters)
def nemotron_nas(raw: dict, r: Reader) -> dict:
    """DeciLM (DeciLMDecoderLayer): Llama's layers, each with its own block config: attention of a / n_heads_in_group
    KV heads with its RMSNorm, or none (no_op); a SwiGLU MLP of ffn_width(ffn_mult, h) with its RMSNorm, or none.
    intermediate_size and num_key_value_heads are null: the blocks give each layer's."""
    for key in ("intermediate_size", "num_key_value_heads"):
        if r.get(key) is not None:
            raise r.fail(key, "must be null: block_configs gives each layer's (a / n_heads_in_group, ffn_mult)")
    h, a, L = r.count("hidden_size"), r.count("num_attention_heads"), r.count("num_hidden_layers")
    blocks = r.get("block_configs")
    if not isinstance(blocks, list) or len(blocks) != L:
        raise r.fail("block_configs", f"must be a list of one block config per layer (num_hidden_layers={L})")
    layer_k, layer_f = zip(*(_block(block, i, a, h, r) for i, block in enumerate(blocks)))
    bias = r.flag("attention_bias")
    return {
        "k": max(layer_k) or a,
        "f": max(layer_f) or 0,
        "layer_k": layer_k,
        "layer_f": layer_f,
        "qkv_bias": bias,
        "o_bias": bias,
        "mlp_bias": r.flag("mlp_bias"),
    }
