"""Count a config.json's parameters with transformers' own modeling code, on the meta device (no memory, no
weights): an independent check of ModelShape.param_count, run by hand (needs torch and transformers, which mem4d
does not depend on): `python benchmarks/hf_count.py FILE.json [--text-only] ...`, one JSON line per file.

A multimodal config (a vision_config beside its text_config) is built whole, tower and projector included, as
AutoModelForImageTextToText builds it (Llama4ForConditionalGeneration); --text-only builds its language model alone
(its text_config), tied as the outer config ties it, as mem4d's --text-only reads it. Buffers (rotary frequencies, DeepSeek-V3's e_score_correction_bias) are
listed apart: mem4d counts the score-correction bias as a parameter (Megatron-Core holds it as one)."""
from __future__ import annotations

import argparse
import json
import sys
import warnings


def count(path: str, text_only: bool) -> dict:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(path)
    if text_only:
        tied = getattr(config, "tie_word_embeddings", False)
        config = config.get_text_config()
        config.tie_word_embeddings = tied
    head = 0
    with torch.device("meta"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if getattr(config, "vision_config", None) is not None:  # the tower, the projector and the language model
                from transformers import AutoModelForImageTextToText

                model = AutoModelForImageTextToText.from_config(config)
            else:
                model = AutoModelForCausalLM.from_config(config)
        except ValueError:  # a text model with no causal-LM class of its own (Qwen3-VL's): the base model + its head
            from transformers import AutoModel

            model = AutoModel.from_config(config)
            head = 0 if config.tie_word_embeddings else config.vocab_size * config.hidden_size
    params = sum(p.numel() for p in model.parameters()) + head  # tied weights are one parameter
    buffers = {name: b.numel() for name, b in model.named_buffers() if "bias" in name}
    return {"file": path, "text_only": text_only, "model_type": config.model_type,
            "class": type(model).__name__ + (" + lm_head" if head else ""), "parameters": params, "bias_buffers": sum(buffers.values())}


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
