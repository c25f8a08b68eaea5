"""List what autograd keeps of transformers' Llama 4 vision tower and projector (Llama4VisionModel +
Llama4MultiModalProjector, transformers 5.25.0 models/llama4/modeling_llama4.py) for a few image tiles, by dtype: the
source of truth of config.vision_llama4's A_v (the elements it keeps per image token). Run by hand (needs torch and
transformers, which mem4d does not depend on):
`python benchmarks/vision_saved_llama4.py [-o records/vision-saved-llama4-cpu.jsonl]`, one JSON line per kernel.

Tiny widths, all distinct, bf16 weights and input, CPU, as benchmarks/vision_saved.py does for Qwen3-VL's tower: each
storage counted once (a view of a saved tensor is not a new one); the parameters and the rotary table (a buffer
computed once at build) are left out."""

from __future__ import annotations

import saved_lines  # benchmarks/saved_lines.py

# hidden 64 (16 per head: the 2D rope takes a quarter of a head per axis), 8 x 8 patches of 4 x 4 pixels per tile,
# pixel shuffle 0.5: 16 image tokens of 4 patches each; intermediate 256 = 64 / 0.5^2 (the adapter's fc1 reads it)
TINY = {
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_channels": 3,
    "intermediate_size": 256,
    "image_size": 32,
    "patch_size": 4,
    "pixel_shuffle_ratio": 0.5,
    "projector_input_dim": 80,
    "projector_output_dim": 80,
    "vision_output_dim": 80,
}
TEXT_H = 56  # the language model's width: the projector's output
TILES = 3


def saved(kernel: str) -> dict:
    """One kernel's line (torch and transformers run it; --help needs neither: tests/test_benchmarks.py)."""
    import torch
    from transformers.models.llama4.configuration_llama4 import Llama4Config
    from transformers.models.llama4.modeling_llama4 import Llama4MultiModalProjector, Llama4VisionModel

    config = Llama4Config(vision_config=TINY, text_config={"hidden_size": TEXT_H})
    config.vision_config._attn_implementation = kernel
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)  # as from_pretrained(dtype=bfloat16) builds it: the complex rotary table
    try:  # stays complex64 (Module.to(bfloat16) would cast it to real and drop its imaginary part)
        tower, projector = Llama4VisionModel(config.vision_config), Llama4MultiModalProjector(config)
    finally:
        torch.set_default_dtype(default)
    pixels = torch.randn(TILES, 3, TINY["image_size"], TINY["image_size"], dtype=torch.bfloat16)
    held = (*tower.parameters(), *projector.parameters(), *tower.buffers())
    out, by_dtype = saved_lines.kept(lambda: projector(tower(pixels).last_hidden_state), held)
    line = {"kernel": kernel, **saved_lines.versions(), "config": TINY, "text_hidden_size": TEXT_H, "tiles": TILES}
    return line | {"image_tokens": out.shape[0] * out.shape[1], "saved_bytes": by_dtype}


if __name__ == "__main__":
    saved_lines.main(__doc__, saved, ("sdpa", "eager"))
