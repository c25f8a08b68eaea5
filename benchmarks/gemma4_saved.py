"""List what autograd keeps of each layer of a tiny Gemma 4 language model (transformers 5.25.0
models/gemma4/modeling_gemma4.py, Gemma4TextModel in training mode), and of the per-layer inputs computed before the
layers: the evidence behind the rule "no Gemma 4 layers" (symbolic/config/rules.py) and what a recipe would have to
hold. Run by hand (needs torch and transformers, which mem4d does not depend on): `python benchmarks/gemma4_saved.py
[-o records/gemma4-saved-cpu.jsonl]`, one JSON line per model.

Tiny widths, all distinct; fp32, CPU, sdpa attention, B x S tokens. Layers 0 and 2 slide, 1 and 3 are full (heads
g_dh wide, g_k KV heads); the last two layers (2, 3) reuse K/V of layers 0 and 1 (num_kv_shared_layers 2). Each
storage is counted once, for the module that first saves it ("model" outside the layers: the embeddings and the
per-layer inputs), parameters and buffers left out (the rotary cos/sin, computed once for all layers, fall to the
first layer that saves them).
Variants: "dense" (k_eq_v on the full layers, per-layer inputs, double-wide MLPs on the two reusing layers) and "moe"
(enable_moe_block, no per-layer inputs, no sharing)."""

from __future__ import annotations

import saved_lines  # benchmarks/saved_lines.py

TINY = {
    "hidden_size": 48,
    "intermediate_size": 80,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "global_head_dim": 24,
    "num_hidden_layers": 4,
    "vocab_size": 96,
    "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
    "sliding_window": 8,
    "final_logit_softcapping": 30.0,
    "pad_token_id": 0,
    "eos_token_id": None,
    "bos_token_id": None,
}
VARIANTS = {
    "dense": {
        "attention_k_eq_v": True,
        "num_global_key_value_heads": 1,
        "num_kv_shared_layers": 2,
        "use_double_wide_mlp": True,
        "hidden_size_per_layer_input": 8,
        "vocab_size_per_layer_input": 40,
    },
    "moe": {
        "enable_moe_block": True,
        "num_experts": 6,
        "top_k_experts": 2,
        "moe_intermediate_size": 20,
        "hidden_size_per_layer_input": 0,
    },
}
B, S = 2, 12


def saved(variant: str) -> dict:
    """One variant's line (torch and transformers run it; --help needs neither: tests/test_benchmarks.py)."""
    import torch
    from transformers import Gemma4TextConfig
    from transformers.models.gemma4.modeling_gemma4 import Gemma4TextModel

    torch.manual_seed(0)
    config = Gemma4TextConfig(**TINY, **VARIANTS[variant])
    config._attn_implementation = "sdpa"
    model = Gemma4TextModel(config).train()
    held = {t.untyped_storage().data_ptr() for t in (*model.parameters(), *model.buffers())}
    owner, seen, kept = ["model"], set(), []
    for i, layer in enumerate(model.layers):
        layer.register_forward_pre_hook(lambda module, args, i=i: owner.__setitem__(0, f"layer {i}"))
        layer.register_forward_hook(lambda module, args, out: owner.__setitem__(0, "model"))

    def pack(t):
        ptr = t.untyped_storage().data_ptr()
        if ptr not in held and ptr not in seen:
            seen.add(ptr)
            kept.append(
                {
                    "owner": owner[0],
                    "shape": list(t.shape),
                    "dtype": str(t.dtype),
                    "bytes": t.untyped_storage().nbytes(),
                }
            )
        return t

    ids = torch.randint(1, 40, (B, S))  # ids below both tables' rows (the per-layer table has 40)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = model(input_ids=ids, use_cache=False).last_hidden_state
    out.sum().backward()
    totals = {}
    for t in kept:
        totals[t["owner"]] = totals.get(t["owner"], 0) + t["bytes"]
    line = {"variant": variant, **saved_lines.versions(), "config": {**TINY, **VARIANTS[variant]}, "b": B, "s": S}
    return line | {"saved_bytes": totals, "saved": kept}


if __name__ == "__main__":
    saved_lines.main(__doc__, saved, tuple(VARIANTS))
