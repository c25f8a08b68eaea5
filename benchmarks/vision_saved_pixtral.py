"""List what autograd keeps of transformers' Mistral 3 vision tower and projector (PixtralVisionModel,
models/pixtral/modeling_pixtral.py, + Mistral3MultiModalProjector, models/mistral3/modeling_mistral3.py, transformers
5.25.0) for one and two images, by dtype: the source of truth of config.vision_pixtral's A_v (its linear part) and of
why its activations are refused (the block-diagonal mask over a forward's patches, quadratic in them). Run by hand
(needs torch and transformers, which mem4d does not depend on):
`python benchmarks/vision_saved_pixtral.py [-o records/vision-saved-pixtral-cpu.jsonl]`, one JSON line per variant.

Tiny widths, all distinct, bf16 weights and input, CPU, as benchmarks/vision_saved_gemma3.py does for Gemma 3's
tower: each storage counted once (a view of a saved tensor is not a new one); the parameters and buffers are left
out."""

from __future__ import annotations

import saved_lines  # benchmarks/saved_lines.py

# hidden 48 in 4 heads of 12, 8 x 8 patches of 4 x 4 pixels per 32 x 32 image, merged 2 x 2 into 16 image tokens;
# the gated MLP's SiLU as the published files name it
TINY = {
    "model_type": "pixtral",
    "hidden_size": 48,
    "intermediate_size": 112,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "head_dim": 12,
    "num_channels": 3,
    "image_size": 64,
    "patch_size": 4,
    "hidden_act": "silu",
}
TEXT = {
    "model_type": "mistral",
    "hidden_size": 56,
    "intermediate_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 14,
}  # the language model's width 56: the projector's output
SIDE = 32  # pixels a side of each image


def saved(variant: str) -> dict:
    """One variant's line (torch and transformers run it; --help needs neither: tests/test_benchmarks.py)."""
    import torch
    from transformers.models.mistral3.configuration_mistral3 import Mistral3Config
    from transformers.models.mistral3.modeling_mistral3 import Mistral3MultiModalProjector
    from transformers.models.pixtral.modeling_pixtral import PixtralVisionModel

    kernel, images = variant.split(":")
    config = Mistral3Config(vision_config=TINY, text_config=TEXT)
    config.vision_config._attn_implementation = kernel
    tower = PixtralVisionModel(config.vision_config).to(torch.bfloat16)
    projector = Mistral3MultiModalProjector(config).to(torch.bfloat16)
    pixels = torch.randn(int(images), 3, SIDE, SIDE, dtype=torch.bfloat16)
    sizes = torch.tensor([[SIDE, SIDE]] * int(images))

    def forward():
        features = tower(pixels, image_sizes=sizes, output_hidden_states=True, return_dict=True).hidden_states[-1]
        return projector(features.squeeze(0), sizes)  # as Mistral3Model.get_image_features (vision_feature_layer -1)

    out, by_dtype = saved_lines.kept(forward, (*tower.parameters(), *projector.parameters(), *tower.buffers()))
    line = {"kernel": kernel, **saved_lines.versions(), "config": TINY, "text_hidden_size": TEXT["hidden_size"]}
    line |= {"images": int(images), "side": SIDE, "patches": int(images) * (SIDE // TINY["patch_size"]) ** 2}
    return line | {"image_tokens": out.shape[0], "saved_bytes": by_dtype}


if __name__ == "__main__":
    saved_lines.main(__doc__, saved, ("sdpa:1", "sdpa:2", "eager:1"))
