"""What autograd keeps of one OLMo 2 layer (transformers 5.25.0 modeling_olmo2.py, Olmo2DecoderLayer: its RMSNorms
after attention and after the MLP) against the same modules called pre-norm, as a Llama layer calls its norms: the
source of truth of the olmo2 family's tensors (symbolic/config/families/olmoe.py: a pre-norm layer's bytes). Run by
hand (needs torch and transformers, which mem4d does not depend on): `python benchmarks/olmo2_saved.py [-o
records/olmo2-saved-cpu.jsonl]`, one JSON line per layout.

Tiny widths, all distinct; fp32 (the norms' upcasts are then no copies), CPU, sdpa attention; each storage counted
once, the parameters and the rotary cos/sin left out (computed once per step for every layer)."""

from __future__ import annotations

import saved_lines  # benchmarks/saved_lines.py

TINY = {
    "hidden_size": 48,
    "intermediate_size": 112,
    "num_attention_heads": 6,
    "num_key_value_heads": 2,
    "num_hidden_layers": 1,
    "vocab_size": 64,
    "eos_token_id": None,
    "pad_token_id": None,
}
B, S = 2, 10


def saved(layout: str) -> dict:
    """One layout's line (torch and transformers run it; --help needs neither: tests/test_benchmarks.py)."""
    import torch
    from transformers import Olmo2Config
    from transformers.models.olmo2.modeling_olmo2 import Olmo2DecoderLayer, Olmo2RotaryEmbedding

    config = Olmo2Config(**TINY)
    config._attn_implementation = "sdpa"
    layer = Olmo2DecoderLayer(config, 0)
    x = torch.randn(B, S, TINY["hidden_size"], requires_grad=True)
    pos = Olmo2RotaryEmbedding(config)(x, torch.arange(S)[None].expand(B, S))
    skip = {t.untyped_storage().data_ptr() for t in (*layer.parameters(), *pos)}
    seen, nbytes = set(), 0

    def pack(tensor):
        nonlocal nbytes
        ptr = tensor.untyped_storage().data_ptr()
        if ptr not in skip and ptr not in seen:
            seen.add(ptr)
            nbytes += tensor.untyped_storage().nbytes()
        return tensor

    def pre(h):
        h = h + layer.self_attn(layer.post_attention_layernorm(h), attention_mask=None, position_embeddings=pos)[0]
        return h + layer.mlp(layer.post_feedforward_layernorm(h))

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = layer(x, position_embeddings=pos) if layout == "post-norm" else pre(x)
    out.sum().backward()
    return {"layout": layout, **saved_lines.versions(), "config": TINY, "b": B, "s": S, "saved_bytes": nbytes}


if __name__ == "__main__":
    saved_lines.main(__doc__, saved, ("post-norm", "pre-norm"))
