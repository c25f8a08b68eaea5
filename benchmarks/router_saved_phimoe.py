"""List what autograd keeps of transformers' phimoe router (PhimoeTopKRouter: the sparsemixer and its
PhimoeMultiplier, transformers 5.25.0 models/phimoe/modeling_phimoe.py) beside Mixtral's softmax top-k router
(MixtralTopKRouter, models/mixtral/modeling_mixtral.py), in training mode: the source of truth of the rule "no
SparseMixer router" (symbolic/config/rules.py). Run by hand (needs torch and transformers, which mem4d does not
depend on): `python benchmarks/router_saved_phimoe.py [-o records/router-saved-phimoe-cpu.jsonl]`, one JSON line per
router.

Tiny widths (h 64, E 8 experts, 2 per token), bf16 weights and input, CPU, T = 12 tokens: each storage counted once
(a view of a saved tensor is not a new one), the router's weight left out and its input (the normed MoE input, which
the experts keep too) counted apart; each saved tensor listed with its shape and dtype."""

from __future__ import annotations

import saved_lines  # benchmarks/saved_lines.py

try:  # torch and transformers run it; --help needs neither (tests/test_benchmarks.py)
    import torch
    import transformers
    from transformers.models.mixtral.configuration_mixtral import MixtralConfig
    from transformers.models.mixtral.modeling_mixtral import MixtralTopKRouter
    from transformers.models.phimoe.configuration_phimoe import PhimoeConfig
    from transformers.models.phimoe.modeling_phimoe import PhimoeTopKRouter
except ImportError:
    torch = None

TINY = {"hidden_size": 64, "num_local_experts": 8, "num_experts_per_tok": 2}
TOKENS = 12
# Phi-3.5-MoE's published jitter values (grids/models/published/phi-3.5-moe-instruct.json)
PHIMOE = {"router_jitter_noise": 0.01, "input_jitter_noise": 0.01}


def _router(name: str):
    if name == "phimoe":
        return PhimoeTopKRouter(PhimoeConfig(**TINY, **PHIMOE))
    return MixtralTopKRouter(MixtralConfig(**TINY))


def saved(name: str) -> dict:
    torch.manual_seed(0)
    router = _router(name).to(torch.bfloat16).train()
    torch.nn.init.normal_(router.weight, std=0.02)
    params = {p.untyped_storage().data_ptr() for p in router.parameters()}
    leaf = torch.randn(TOKENS, TINY["hidden_size"], dtype=torch.bfloat16, requires_grad=True)
    x = leaf * 1  # the router's input, as the MoE block passes it (not a leaf: phimoe multiplies it in place)
    seen, kept, by_dtype = set(), [], {}

    def pack(t):
        ptr = t.untyped_storage().data_ptr()
        if ptr not in params and ptr not in seen:
            seen.add(ptr)
            role = "input" if ptr == x.untyped_storage().data_ptr() else "router"
            kept.append(
                {"shape": list(t.shape), "dtype": str(t.dtype), "bytes": t.untyped_storage().nbytes(), "role": role}
            )
            if role == "router":
                by_dtype[str(t.dtype)] = by_dtype.get(str(t.dtype), 0) + t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        logits, weights, _ = router(x)
    (weights.float().sum() + logits.float().sum()).backward()
    return {
        "router": name,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "config": TINY | (PHIMOE if name == "phimoe" else {}),
        "tokens": TOKENS,
        "saved": kept,
        "router_bytes": by_dtype,
        "router_bytes_per_token": sum(by_dtype.values()) / TOKENS,
    }


if __name__ == "__main__":
    saved_lines.main(__doc__, saved if torch is not None else None, ("phimoe", "mixtral"))
