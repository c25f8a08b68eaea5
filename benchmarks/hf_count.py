"""Count a config.json's parameters with transformers' own modeling code, on the meta device (no memory, no
weights): an independent check of ModelShape.param_count, run by hand (needs torch and transformers, which mem4d
does not depend on): `python benchmarks/hf_count.py FILE.json [--text-only] ...`, one JSON line per file.

A multimodal wrapper (text_config beside or without vision_config) is built whole through AutoModelForImageTextToText,
its vision tower, projector and language model (head included) also listed apart under "parts"; --text-only builds
its language model alone (its text_config), tied as the outer config ties it, as mem4d's --text-only reads it.
Kimi K2 (model_type kimi_k2, remote code) is built with transformers' DeepseekV3 classes after a key-by-key check
(kimi_k2_as_deepseek_v3). Buffers (rotary frequencies, DeepSeek-V3's e_score_correction_bias) are listed apart:
mem4d counts the score-correction bias as a parameter (Megatron-Core holds it as one)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import warnings

# Kimi K2's config.json names DeepSeek-V3's remote code (auto_map: configuration_deepseek.DeepseekV3Config,
# modeling_deepseek.DeepseekV3ForCausalLM, the classes DeepSeek-V3's own file names) and transformers 5.25.0 maps a
# kimi_k2 text config to deepseek_v3 itself (models/kimi_k25/configuration_kimi_k25.py, Kimi_K25Config.__post_init__).
# Each key of the file is taken by transformers' DeepseekV3Config one of these ways, or the mapping is refused:
KIMI_METADATA = {"architectures", "auto_map", "model_type", "torch_dtype", "transformers_version"}  # no tensor
KIMI_NO_TENSOR = {
    "aux_loss_alpha": "the sequence-wise balance loss's weight",
    "seq_aux": "that loss per sequence",
    "quantization_config": "the checkpoint's fp8 storage, not the parameters' count",
}
# the choices modeling_deepseek_v3.py fixes: every layer from first_k_dense_replace on is MoE (DeepseekV3DecoderLayer),
# sigmoid scores plus e_score_correction_bias (DeepseekV3TopkRouter: noaux_tc)
KIMI_FIXED = {"moe_layer_freq": 1, "scoring_func": "sigmoid", "topk_method": "noaux_tc"}
KIMI_RENAMED = {"num_nextn_predict_layers": "num_mtp_layers"}  # DeepseekV3Config.attribute_map


def kimi_k2_as_deepseek_v3(raw: dict):
    """transformers' DeepseekV3Config of a kimi_k2 file, every key checked to land unchanged; ValueError otherwise."""
    from transformers import DeepseekV3Config

    config = DeepseekV3Config.from_dict(raw | {"model_type": "deepseek_v3"})
    fields = {field.name for field in dataclasses.fields(DeepseekV3Config)}
    rope = config.rope_parameters
    for key, value in raw.items():
        if key in KIMI_METADATA or key in KIMI_NO_TENSOR:
            continue
        if key in KIMI_FIXED:
            ok = value == KIMI_FIXED[key]
        elif key == "rope_theta":
            ok = rope["rope_theta"] == value
        elif key == "rope_scaling":
            ok = all(rope[k] == v for k, v in value.items()) and rope["rope_type"] == value["type"]
        elif key in KIMI_RENAMED:
            ok = getattr(config, KIMI_RENAMED[key]) == value
        else:
            ok = key in fields and getattr(config, key) == value
        if not ok:
            raise ValueError(f"kimi_k2 key {key!r} = {value!r} is not taken unchanged by DeepseekV3Config")
    return config


def _config(path: str, text_only: bool):
    from transformers import AutoConfig

    raw = json.loads(open(path).read())
    if raw.get("model_type") == "kimi_k2":
        return kimi_k2_as_deepseek_v3(raw), "kimi_k2 read as deepseek_v3 (kimi_k2_as_deepseek_v3: every key checked)"
    config = AutoConfig.from_pretrained(path)
    if text_only:
        tied = getattr(config, "tie_word_embeddings", False)
        config = config.get_text_config()
        config.tie_word_embeddings = tied
    return config, None


def _part(name: str) -> str:
    """Which part of a multimodal wrapper a parameter belongs to, by its module path."""
    if "multi_modal_projector" in name:
        return "projector"
    if name.startswith(("model.visual.", "visual.", "vision_model.", "model.vision_model.", "model.vision_tower.")):
        return "vision"
    return "language"


def _build(config):
    """The model of a config: its image-text-to-text class for a wrapper, else its causal LM (a text model with no
    causal-LM class of its own, Qwen3-VL's: the base model, its head added by hand)."""
    from transformers import AutoModel, AutoModelForCausalLM, AutoModelForImageTextToText

    if hasattr(config, "text_config") and config.get_text_config() is not config:
        return AutoModelForImageTextToText.from_config(config), 0
    try:
        return AutoModelForCausalLM.from_config(config), 0
    except ValueError:
        return AutoModel.from_config(
            config
        ), 0 if config.tie_word_embeddings else config.vocab_size * config.hidden_size


def count(path: str, text_only: bool) -> dict:
    import torch

    config, note = _config(path, text_only)
    with torch.device("meta"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, head = _build(config)
    named = list(model.named_parameters())  # tied weights are one parameter
    row = {
        "file": path,
        "text_only": text_only,
        "model_type": config.model_type,
        "class": type(model).__name__ + (" + lm_head" if head else ""),
        "parameters": sum(p.numel() for _, p in named) + head,
        "bias_buffers": sum(b.numel() for name, b in model.named_buffers() if "bias" in name),
    }
    if note:
        row["read_as"] = note
    if type(model).__name__.endswith(("ForConditionalGeneration", "ForImageTextToText")):
        parts = {"vision": 0, "projector": 0, "language": 0}
        for name, p in named:
            parts[_part(name)] += p.numel()
        row["parts"] = parts
        row["vision_config"] = (
            "the file's"
            if "vision_config" in json.loads(open(path).read())
            else f"{type(config.vision_config).__name__}'s defaults (the file has none)"
        )
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--text-only", action="store_true")
    args = parser.parse_args()
    for path in args.files:
        try:
            print(json.dumps(count(path, args.text_only)), flush=True)
        except Exception as err:  # a file transformers cannot build: one line, go on
            print(json.dumps({"file": path, "error": f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
