"""List what autograd keeps of transformers' Qwen3-VL vision tower (Qwen3VLVisionModel, transformers 5.25.0
models/qwen3_vl/modeling_qwen3_vl.py) for one image, by dtype: the source of truth of config.vision's A_v (the
elements it keeps per image token). Run by hand (needs torch and transformers, which mem4d does not depend on):
`python benchmarks/vision_saved.py [-o records/vision-saved-cpu.jsonl]`, one JSON line per attention kernel.

Tiny widths, all distinct, bf16 weights and input, CPU. Each storage is counted once (a view of a saved tensor is
not a new one); the parameters (a linear keeps its weight for the input's gradient) are left out. transformers'
"sdpa" path (its default) runs the kernel per image and concatenates the outputs, so proj's input is a copy of what
the kernel keeps; "eager" keeps the scores and probabilities besides (listed, not modelled)."""

from __future__ import annotations

import saved_lines  # benchmarks/saved_lines.py

TINY = {
    "depth": 3,
    "hidden_size": 48,
    "intermediate_size": 112,
    "num_heads": 4,
    "in_channels": 3,
    "patch_size": 4,
    "temporal_patch_size": 2,
    "spatial_merge_size": 2,
    "out_hidden_size": 80,
    "num_position_embeddings": 16,
    "deepstack_visual_indexes": [1],
}
GRID = (1, 8, 6)  # one image: t, h, w in patches (48 patches, 12 image tokens)


def saved(kernel: str) -> dict:
    """One kernel's line (torch and transformers run it; --help needs neither: tests/test_benchmarks.py)."""
    import torch
    from transformers.models.qwen3_vl.configuration_qwen3_vl import Qwen3VLVisionConfig
    from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLVisionModel

    config = Qwen3VLVisionConfig(**TINY)
    config._attn_implementation = kernel
    model = Qwen3VLVisionModel(config).to(torch.bfloat16)
    n = GRID[0] * GRID[1] * GRID[2]
    pixels = torch.randn(n, 3 * 2 * 4 * 4, dtype=torch.bfloat16)
    _, by_dtype = saved_lines.kept(
        lambda: model(pixels, grid_thw=torch.tensor([GRID])).pooler_output, model.parameters()
    )
    line = {"kernel": kernel, **saved_lines.versions(), "config": TINY, "grid_thw": GRID, "image_tokens": n // 4}
    return line | {"saved_bytes": by_dtype}


if __name__ == "__main__":
    saved_lines.main(__doc__, saved, ("sdpa", "eager"))
