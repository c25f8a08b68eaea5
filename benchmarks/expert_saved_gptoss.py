"""List what autograd keeps of Megatron-Core's weighted quick-GeGLU of GPT-OSS's experts (megatron-core 0.16.1
fusions/fused_bias_geglu.py weighted_bias_quick_geglu_impl, as experts.py TEGroupedMLP bias_act_func calls it with
Megatron-Bridge 0.3.1's GPT-OSS provider: quick_gelu, glu_linear_offset 1.0, activation_func_clamp_value 7.0, an
fc1 bias, bias_activation_fusion) with the clamp and without it: the source of truth of components/moe.py's
expert_fc1_clamped. Run by hand (needs torch and megatron-core, which mem4d does not depend on; PYTHONPATH at an
unpacked megatron_core-0.16.1 wheel): `python benchmarks/expert_saved_gptoss.py [-o
records/expert-saved-gptoss-cpu.jsonl]`, one JSON line per variant.

Tiny widths (R 12 rows, f_e 16, fc1 output [R, 2 f_e]), bf16, CPU: each storage counted once (a view of a saved
tensor is not a new one), fc1's output (the activation's input) marked apart, the bias and the probabilities
counted with the rest; each saved tensor listed with its shape, dtype and storage bytes."""

from __future__ import annotations

import saved_lines  # benchmarks/saved_lines.py

try:  # torch and megatron-core run it; --help needs neither (tests/test_benchmarks.py)
    import torch
    from megatron.core import __version__ as megatron_version
    from megatron.core.fusions.fused_bias_geglu import weighted_bias_quick_geglu_impl
except ImportError:
    torch = None

ROWS, F_E, LIMIT, OFFSET = 12, 16, 7.0, 1.0  # the limit and offset: Megatron-Bridge 0.3.1 gpt_oss_provider.py


def saved(variant: str) -> dict:
    torch.manual_seed(0)
    leaf = torch.randn(ROWS, 2 * F_E, dtype=torch.bfloat16, requires_grad=True)
    fc1 = leaf * 8  # fc1's output (TEGroupedLinear, skip_bias_add): not a leaf; some of it beyond the limit
    bias = torch.randn(2 * F_E, dtype=torch.bfloat16, requires_grad=True)
    probs = torch.rand(ROWS, 1, dtype=torch.bfloat16, requires_grad=True)
    seen, kept = set(), []

    def pack(x):
        ptr = x.untyped_storage().data_ptr()
        if ptr not in seen:
            seen.add(ptr)
            kept.append(
                {
                    "shape": list(x.shape),
                    "dtype": str(x.dtype),
                    "bytes": x.untyped_storage().nbytes(),
                    "fc1_output": ptr == fc1.untyped_storage().data_ptr(),
                }
            )
        return x

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda x: x):
        out = weighted_bias_quick_geglu_impl(fc1, bias, probs, False, OFFSET, LIMIT if variant == "clamped" else None)
    out.float().sum().backward()
    full = ROWS * 2 * F_E * 2  # bytes of one bf16 [R, 2 f_e]
    return {
        "variant": variant,
        "torch": torch.__version__,
        "megatron_core": megatron_version,
        "rows": ROWS,
        "f_e": F_E,
        "clamp": LIMIT if variant == "clamped" else None,
        "saved": kept,
        "fc1_wide_tensors": sum(x["bytes"] for x in kept if x["bytes"] == full) / full,
    }


if __name__ == "__main__":
    saved_lines.main(__doc__, saved if torch is not None else None, ("clamped", "unclamped"))
