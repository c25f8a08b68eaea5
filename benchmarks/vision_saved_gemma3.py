"""List what autograd keeps of transformers' Gemma 3 vision tower and projector (SiglipVisionModel,
models/siglip/modeling_siglip.py, + Gemma3MultiModalProjector, models/gemma3/modeling_gemma3.py, transformers 5.25.0)
for a few images, by dtype: the source of truth of config.vision_gemma3's A_v (the elements it keeps per image token).
Run by hand (needs torch and transformers, which mem4d does not depend on):
`python benchmarks/vision_saved_gemma3.py [-o records/vision-saved-gemma3-cpu.jsonl]`, one JSON line per kernel.

Tiny widths, all distinct, bf16 weights and input, CPU, as benchmarks/vision_saved_llama4.py does for Llama 4's tower:
each storage counted once (a view of a saved tensor is not a new one); the parameters and buffers are left out."""

from __future__ import annotations

import saved_lines  # benchmarks/saved_lines.py

# hidden 48 in 4 heads, 8 x 8 patches of 4 x 4 pixels per image, pooled 2 x 2 into 16 image tokens; no pooling head
# (Gemma 3's published vision_use_head false)
TINY = {
    "model_type": "siglip_vision_model",
    "hidden_size": 48,
    "intermediate_size": 112,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_channels": 3,
    "image_size": 32,
    "patch_size": 4,
    "vision_use_head": False,
}
TEXT_H = 56  # the language model's width: the projector's output
TOKENS_PER_IMAGE = 16  # mm_tokens_per_image
IMAGES = 3


def saved(kernel: str) -> dict:
    """One kernel's line (torch and transformers run it; --help needs neither: tests/test_benchmarks.py)."""
    import torch
    from transformers.models.gemma3.configuration_gemma3 import Gemma3Config
    from transformers.models.gemma3.modeling_gemma3 import Gemma3MultiModalProjector
    from transformers.models.siglip.modeling_siglip import SiglipVisionModel

    config = Gemma3Config(vision_config=TINY, text_config={"hidden_size": TEXT_H}, mm_tokens_per_image=TOKENS_PER_IMAGE)
    config.vision_config._attn_implementation = kernel
    tower = SiglipVisionModel(config.vision_config).to(torch.bfloat16)
    projector = Gemma3MultiModalProjector(config).to(torch.bfloat16)
    pixels = torch.randn(IMAGES, 3, TINY["image_size"], TINY["image_size"], dtype=torch.bfloat16)
    held = (*tower.parameters(), *projector.parameters(), *tower.buffers())
    out, by_dtype = saved_lines.kept(lambda: projector(tower(pixel_values=pixels).last_hidden_state), held)
    line = {"kernel": kernel, **saved_lines.versions(), "config": TINY, "text_hidden_size": TEXT_H}
    line |= {"mm_tokens_per_image": TOKENS_PER_IMAGE, "images": IMAGES, "image_tokens": out.shape[0] * out.shape[1]}
    return line | {"saved_bytes": by_dtype}


if __name__ == "__main__":
    saved_lines.main(__doc__, saved, ("sdpa", "eager"))
