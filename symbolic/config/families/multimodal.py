"""Multimodal checkpoints: a config.json whose language model is a nested text_config beside a vision tower. mem4d
counts the language model alone when asked (--text-only); otherwise it counts the vision tower where it models its
kind (config/vision.py: Qwen3-VL's, Qwen3.5's, Llama 4's, Gemma 3's, Mistral 3's) and refuses the file where not,
since leaving a tower out silently would under-count.

What a wrapper's other keys hold is the vision path (left out by --text-only), but one: the LM head is tied to the
embedding by the outer config's tie_word_embeddings (transformers 5.25.0 PreTrainedModel.tie_weights reads the
model's own config, the outer one), defaulting to the outer class's value."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Wrapper:
    """One multimodal model_type: its text model's model_type (when text_config names none) and the outer class's
    tie_word_embeddings default (transformers 5.25.0 configuration_<model_type>.py)."""

    text: str
    tied: bool
    about: str


WRAPPERS: dict[str, Wrapper] = {
    "llama4": Wrapper("llama4_text", False, "Llama 4 (vision tower, projector)"),
    "qwen3_vl": Wrapper("qwen3_vl_text", False, "Qwen3-VL (vision tower, deepstack mergers)"),
    "qwen3_vl_moe": Wrapper("qwen3_vl_moe_text", False, "Qwen3-VL-MoE (vision tower, deepstack mergers)"),
    "qwen3_5": Wrapper("qwen3_5_text", False, "Qwen3.5 (vision tower)"),
    "qwen3_5_moe": Wrapper("qwen3_5_moe_text", False, "Qwen3.5-MoE (vision tower)"),
    # Kimi_K25Config.__post_init__ reads a text_config of model_type kimi_k2 as deepseek_v3: the same reader here
    "kimi_k25": Wrapper("deepseek_v3", True, "Kimi-K2.5 (MoonViT vision tower, projector)"),
    "mistral3": Wrapper("mistral", True, "Mistral Small 3 (Pixtral vision tower, projector)"),
    "gemma3": Wrapper("gemma3_text", True, "Gemma 3 (SigLIP vision tower, projector)"),
    "gemma4": Wrapper("gemma4_text", True, "Gemma 4 (vision tower and, in E2B and E4B, audio tower)"),
}
