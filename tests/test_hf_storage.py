"""A config.json's storage keys are the checkpoint's, not training's: a quantization_config (FP8 block-wise, MXFP4,
NVFP4, bitsandbytes, compressed-tensors, ModelOpt) leaves the count the unquantized model's and is named in one line
as the checkpoint's; an unknown method or key is refused by name; inference-only keys are read at checked values.

Source of truth: transformers 5.25.0's quantization config classes (src/transformers/utils/quantization_config.py:
which keys each method has) and the exact counts of grids/models/published/SOURCES.md (Llama-3.1-8B 8,030,261,248,
DeepSeek-V3 682,636,487,424 parameters), ../shared/data/configs/COUNTS.tsv (gpt-oss-120b's BF16 total
116,829,156,672). Tolerance: none (to the parameter).
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from model_files import write

from symbolic.config.errors import ConfigError
from symbolic.config.hfconfig import from_hf_config, read_noted

REPO = Path(__file__).resolve().parent.parent
PUBLISHED = REPO / "grids" / "models" / "published"
SHARED = REPO.parent / "shared" / "data" / "configs"
LLAMA = json.loads((PUBLISHED / "llama3.1-8b.json").read_text())
LLAMA_COUNT = 8_030_261_248

# one quantization_config per method, as published checkpoints write them
STORED = {
    "fp8": {
        "quant_method": "fp8",
        "fmt": "float8_e4m3fn",
        "activation_scheme": "dynamic",
        "weight_block_size": [128, 128],
        "modules_to_not_convert": ["gate", "lm_head"],
    },
    "mxfp4": {"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn", "lm_head"]},
    "nvfp4": {"quant_method": "nvfp4", "modules_to_not_convert": ["lm_head"]},
    "modelopt": {
        "quant_method": "modelopt",
        "quant_algo": "NVFP4",
        "kv_cache_quant_algo": "FP8",
        "group_size": 16,
        "exclude_modules": ["lm_head"],
        "producer": {"name": "modelopt", "version": "0.29.0"},
    },
    "bitsandbytes": {
        "quant_method": "bitsandbytes",
        "load_in_4bit": True,
        "load_in_8bit": False,
        "bnb_4bit_quant_type": "nf4",
        "bnb_4bit_compute_dtype": "bfloat16",
        "bnb_4bit_use_double_quant": True,
        "llm_int8_skip_modules": None,
        "llm_int8_threshold": 6.0,
    },
    "compressed-tensors": {
        "quant_method": "compressed-tensors",
        "format": "float-quantized",
        "quantization_status": "compressed",
        "ignore": ["lm_head"],
        "kv_cache_scheme": None,
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 8}}},
    },
}


@pytest.mark.parametrize("method", sorted(STORED))
def test_a_stored_quantization_leaves_the_count_and_is_named_as_the_checkpoints(tmp_path, method):
    shape, note = read_noted(write(tmp_path, LLAMA | {"quantization_config": STORED[method]}))
    assert shape.param_count == LLAMA_COUNT
    assert "\n" not in note and f"checkpoint storage ({method})" in note and "not training memory" in note


@pytest.mark.parametrize(
    "config, needle",
    [
        ({"quant_method": "gptq", "bits": 4}, "quant_method 'gptq'"),
        ({"bits": 4}, "quant_method None"),
        ({"quant_method": "fp8", "weight_block_size": [128, 128], "future_packing": 1}, "'future_packing'"),
        ({"quant_method": "fp8", "weight_block_size": [128]}, "'weight_block_size'"),
        ({"quant_method": "mxfp4", "modules_to_not_convert": "lm_head"}, "'modules_to_not_convert'"),
        ("fp8", "must be an object"),
    ],
)
def test_an_unknown_storage_is_refused_by_name(tmp_path, config, needle):
    path = write(tmp_path, LLAMA | {"quantization_config": config})
    with pytest.raises(ConfigError) as err:
        from_hf_config(path)
    text = str(err.value)
    assert "\n" not in text and "key 'quantization_config'" in text and needle in text, text


def test_the_published_fp8_checkpoint_is_counted_as_its_parameters(tmp_path):
    """DeepSeek-V3's published file (fp8 e4m3, 128 x 128 blocks): its parameters, not its stored elements (SOURCES.md:
    684,531,386,000 stored = the parameters + fp32 block scales + the MTP layer's copies of embed and head)."""
    shape, note = read_noted(PUBLISHED / "deepseek-v3.json")
    assert shape.param_count == 682_636_487_424 and "checkpoint storage (fp8)" in note


def test_the_cli_says_the_storage_on_stderr_in_one_line_and_counts_the_parameters():
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "symbolic.cli",
            "estimate",
            "--model",
            str(PUBLISHED / "kimi-k2-instruct.json"),
            "--json",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["param_count"] == 1_026_408_232_448
    notes = [line for line in done.stderr.splitlines() if line.startswith("note: ")]
    assert len(notes) == 1 and "checkpoint storage (fp8)" in notes[0], done.stderr


def test_gpt_oss_published_file_is_read_with_its_inference_keys():
    """gpt-oss-120b as published: MXFP4 experts (storage) and initial_context_length (the context YaRN extends at
    inference): counted at the BF16 re-upload's total (COUNTS.tsv)."""
    path = SHARED / "gpt-oss-120b.json"
    if not path.exists():
        pytest.skip("../shared/data/configs is absent (reference data beside the clone)")
    shape, note = read_noted(path)
    assert shape.param_count == 116_829_156_672 and "checkpoint storage (mxfp4)" in note


@pytest.mark.parametrize(
    "key, good, bad",
    [
        ("initial_context_length", 4096, "4096"),
        ("kv_cache_dtype", "fp8_e4m3", 8),
        ("mamba_ssm_dtype", "float32", 32),
        ("transformers.js_config", {"dtype": "q4"}, "q4"),
    ],
)
def test_inference_only_keys_are_read_at_checked_values(tmp_path, key, good, bad):
    assert from_hf_config(write(tmp_path, LLAMA | {key: good})).param_count == LLAMA_COUNT
    with pytest.raises(ConfigError, match=f"key '{key}'"):
        from_hf_config(write(tmp_path, LLAMA | {key: bad}))


def test_a_text_configs_own_quantization_is_read_too(tmp_path):
    """--text-only reads the text_config's quantization_config as the outer one: named, or refused by name."""
    raw = json.loads((PUBLISHED / "llama4-scout-17b-16e-text-config.json").read_text())
    raw["text_config"] = raw["text_config"] | {"quantization_config": STORED["fp8"]}
    shape, note = read_noted(write(tmp_path, raw), text_only=True)
    assert shape.param_count == 107_769_861_120 and "checkpoint storage (fp8)" in note
    raw["text_config"]["quantization_config"] = {"quant_method": "awq"}
    with pytest.raises(ConfigError, match="quant_method 'awq'"):
        read_noted(write(tmp_path, raw), text_only=True)
