"""Multimodal checkpoints read with --text-only: the language model of each multimodal family's library default and of
Llama-4-Scout counted to the parameter, what --text-only refuses in one line, and the flag on the command line.

Source of truth: transformers 5.25.0's own modeling code, instantiated on the meta device from the same file
(benchmarks/hf_count.py --text-only, torch 2.13.0, run 2026-12-03; its output is the table below), and SOURCES.md's
text-only part of Llama-4-Scout-17B-16E. Tolerance: none (parameter counts are exact).
"""

import json

import pytest

from model_files import PUBLISHED
from model_files import write

from symbolic.cli import main
from symbolic.config.errors import ConfigError
from symbolic.config.hfconfig import from_hf_config


# multimodal model_type -> transformers' count of its default language model (hf_count.py --text-only)
DEFAULT_TEXT_MODELS = {
    "llama4": 107_769_861_120,
    "qwen3_vl": 12_049_461_248,
    "qwen3_vl_moe": 13_485_121_536,
    "mistral3": 7_110_660_096,
    "kimi_k25": 670_099_725_312 + 14_848,
    "gemma3": 2_628_658_432,
    "gemma4": 5_077_177_856,
}


# multimodal model_type -> transformers' count of its default wrapper built whole (hf_count.py: Mistral3Config's
# default vision_config, PixtralVisionConfig's but for 14-pixel patches, 403,305,472 + projector 25,166,848)
DEFAULT_WHOLE = {"mistral3": 7_539_132_416}


@pytest.mark.parametrize("model_type", sorted(DEFAULT_TEXT_MODELS))
def test_default_language_model_of_each_multimodal_checkpoint(tmp_path, model_type):
    path = write(tmp_path, {"model_type": model_type, "text_config": {}})
    assert from_hf_config(path, text_only=True).param_count == DEFAULT_TEXT_MODELS[model_type]
    # without --text-only: a tower of a kind mem4d does not model is refused; Qwen3-VL's and Qwen3.5's default
    # towers (out_hidden_size 3584) do not fit their classes' default language models (hidden 4096, 2048): refused too;
    # so is Llama4VisionConfig's default (hidden 768 shuffled to 3072, but intermediate_size 5632: forward cannot run),
    # and SiglipVisionConfig's (Gemma 3's: vision_use_head true builds a pooling head Gemma 3's files leave out);
    # Mistral 3's default tower is read whole (DEFAULT_WHOLE)
    if model_type in DEFAULT_WHOLE:
        assert from_hf_config(path).param_count == DEFAULT_WHOLE[model_type]
        return
    with pytest.raises(
        ConfigError,
        match="pass --text-only|must be the language model's hidden size|vision adapter's fc1|vision_use_head'",
    ):
        from_hf_config(path)


def test_llama4_scout_language_model_as_published():
    """Llama-4-Scout-17B-16E's text_config (grids/models/published): 107,769,861,120, SOURCES.md's text-only part
    and transformers' count alike; every layer MoE (16 experts of 8192, one shared expert), weightless q/k norms."""
    shape = from_hf_config(PUBLISHED / "llama4-scout-17b-16e-text-config.json", text_only=True)
    assert shape.param_count == 107_769_861_120
    assert (shape.E, shape.k_e, shape.f_e, shape.f_s, shape.L_e, shape.qk_norm, shape.sigmoid) == (
        16,
        1,
        8192,
        8192,
        48,
        "weightless",
        True,
    )


@pytest.mark.parametrize(
    "outer, needle",
    [
        ({"model_type": "llama4"}, "has none"),  # --text-only on a text model's file
        ({"model_type": "paligemma", "text_config": {}}, "multimodal checkpoint mem4d does not know"),
        ({"model_type": "qwen3_vl", "text_config": []}, "must be an object"),
        (
            {"model_type": "qwen3_vl", "tie_word_embeddings": True, "text_config": {"tie_word_embeddings": False}},
            "agree with text_config",
        ),
        ({"model_type": "qwen3_5", "text_config": {"model_type": "dbrx"}}, "this architecture is not modelled"),
    ],
)
def test_text_only_refusals_are_one_line(tmp_path, outer, needle):
    with pytest.raises(ConfigError) as err:
        from_hf_config(write(tmp_path, outer), text_only=True)
    assert "\n" not in str(err.value) and needle in str(err.value), str(err.value)


def test_cli_text_only(capsys):
    scout = str(PUBLISHED / "llama4-scout-17b-16e-text-config.json")
    assert main(["estimate", "--model", scout, "--text-only", "--ep", "8", "--dp", "8", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["param_count"] == 107_769_861_120
    assert main(["estimate", "--model", "llama3-8b", "--text-only"]) == 2
    assert "is a preset" in capsys.readouterr().err
    assert main(["formula", "--model", scout, "--text-only", "--json"]) == 0
