"""The vision towers of Gemma 3 (SigLIP with its pooling projector) and Mistral 3 (Pixtral): counted to the published
or transformers' own totals, saved tensors as autograd keeps them, held on the embedding's stage by the megatron
recipe, and their config.json keys mem4d does not model refused in one line. tests/test_vision.py holds Qwen3-VL's
and Llama 4's; each section below names its source of truth and tolerance."""

import json
from pathlib import Path

import pytest

from model_files import assert_vision_refused

from symbolic.config import vision
from symbolic.config.errors import ConfigError
from symbolic.config.hfconfig import read
from symbolic.config.training import Training
from symbolic.estimator.estimate import estimate

ROOT = Path(__file__).resolve().parent.parent


def _first(shape, training: Training) -> dict:
    return next(stage for stage in estimate(shape, training).stages if stage["stage"] in ("only", "first"))["bytes"]


# Gemma 3's tower (symbolic/config/vision_gemma3.py): source of truth SOURCES.md's gemma-3-4b-it total (the Hub's) and
# transformers 5.25.0's own count (records/hf-count-published.jsonl), tolerance none; its saved tensors are
# records/vision-saved-gemma3-cpu.jsonl (benchmarks/vision_saved_gemma3.py), tolerance none once the LayerNorms' mean
# and rstd (2 bf16 elements per row), the kernel's fp32 logsumexp (one per row and head) and the projector RMSNorm's
# fp32 input, output and rstd (2w + 1 per image token, and its (1 + weight) [w] once) are set apart
GEMMA3 = ROOT / "grids" / "models" / "published" / "gemma-3-4b-it.json"


def test_gemma3_counted_with_its_tower_to_the_published_total():
    full, text = read(GEMMA3), read(GEMMA3, text_only=True)
    assert (full.param_count, text.param_count, full.P_v) == (4_300_079_472, 3_880_263_168, 419_816_304)
    assert (full.vision.tokens_per_image, full.vision.k) == (256, 4)  # 64 x 64 patches pooled 4 x 4


def test_gemma3_27b_counted_to_the_hub_total(tmp_path):
    """gemma-3-27b-it: the 4B file with the 27B language model's sizes (TRT-LLM's GEMMA3_27B_CONFIG quotes them beside
    the same vision_config) is 27,432,406,640 parameters, the Hub's total of google/gemma-3-27b-it (llmfit-core
    hf_models.json @ AlexsJones/llmfit@5bdc9df9); the same tower, its projector into 5376 (tolerance none)."""
    raw = json.loads(GEMMA3.read_text())
    raw["text_config"].update(
        head_dim=128,
        hidden_size=5376,
        intermediate_size=21504,
        num_attention_heads=32,
        num_hidden_layers=62,
        num_key_value_heads=16,
        query_pre_attn_scalar=168,
    )
    (tmp_path / "config.json").write_text(json.dumps(raw))
    shape = read(tmp_path / "config.json")
    assert (shape.param_count, shape.P_v - read(GEMMA3).P_v) == (27_432_406_640, 1152 * (5376 - 2560))


def test_gemma3_saved_tensors_are_what_autograd_keeps():
    row = json.loads((ROOT / "records" / "vision-saved-gemma3-cpu.jsonl").read_text().splitlines()[0])
    assert row["kernel"] == "sdpa" and row["transformers"] == "5.25.0"
    outer = {"text_config": {"hidden_size": row["text_hidden_size"]}, "mm_tokens_per_image": row["mm_tokens_per_image"]}
    tower = vision.read({k: v for k, v in row["config"].items() if k != "model_type"}, "gemma3", {}, "tiny", outer)
    patches, tokens = row["images"] * tower.side**2, row["image_tokens"]
    assert tokens == row["images"] * tower.tokens_per_image
    stats = 2 * 2 * patches * (1 + 2 * tower.depth)  # bf16 mean and rstd of every block's LayerNorms and the post one
    heads = row["config"]["num_attention_heads"]
    assert row["saved_bytes"]["torch.float32"] == 4 * (
        patches * heads * tower.depth + tokens * (2 * tower.w + 1) + tower.w
    )
    assert row["saved_bytes"]["torch.bfloat16"] - stats == 2 * tokens * tower.saved_per_token


def test_gemma3_tower_under_megatron_and_frozen():
    gemma = read(GEMMA3)
    first = _first(gemma, Training(d=8, s=4096, image_tokens=512))
    assert first["vision_activations"] == 2 * 512 * gemma.A_v and first["vision_weights"] == 2 * 419_816_304
    frozen = _first(gemma, Training(d=8, s=4096, image_tokens=512, freeze_vision=True))
    assert (frozen["vision_activations"], "vision_gradients" in frozen) == (0, False)


@pytest.mark.parametrize(
    "change, key",
    [
        ({"vision_use_head": True}, "vision_use_head"),
        ({"attention_dropout": 0.1}, "attention_dropout"),
        ({"num_attention_heads": 5}, "num_attention_heads"),
        ({"image_size": [896, 896]}, "image_size"),
        ({"hidden_act": "relu"}, "hidden_act"),
        ({"new_key": 1}, "new_key"),
        ({"model_type": "clip_vision_model"}, ""),
    ],
)
def test_a_gemma3_vision_config_mem4d_does_not_model_is_refused(tmp_path, change, key):
    assert_vision_refused(tmp_path, GEMMA3, change, f"vision_config{'.' + key if key else ''}'")


@pytest.mark.parametrize(
    "change", [{"mm_tokens_per_image": 200}, {"mm_tokens_per_image": 9}, {"vision_config": {"vision_use_head": False}}]
)
def test_a_gemma3_pooling_mem4d_does_not_model_is_refused(tmp_path, change):
    """mm_tokens_per_image must pool the patch grid evenly (200: not a square; 9: 3 does not divide 64); a
    vision_config of SiglipVisionConfig's defaults (224 / 16 = 14 patches a side) cannot pool to 16 x 16."""
    (tmp_path / "config.json").write_text(json.dumps(json.loads(GEMMA3.read_text()) | change))
    with pytest.raises(ConfigError, match="key 'mm_tokens_per_image'"):
        read(tmp_path / "config.json")


def test_gemma3_tower_round_trips_through_a_json_shape():
    from symbolic.config.shape_json import shape_from_json, shape_json

    gemma = read(GEMMA3)
    assert shape_from_json(json.loads(json.dumps(shape_json(gemma)))) == gemma


# Mistral 3's Pixtral tower (symbolic/config/vision_pixtral.py): source of truth transformers 5.25.0's own count of a
# Mistral Small 3.x config.json (benchmarks/hf_count.py on this dict, run by hand: tower 403,305,472 + projector
# 35,652,608 + language model 22,901,314,560 = 23,340,272,640; tolerance none) and
# records/vision-saved-pixtral-cpu.jsonl (benchmarks/vision_saved_pixtral.py), tolerance none once the fp32 RMSNorm
# inputs and rstd (w + 1 per row of 2L + 2 norms) and logsumexp (one per row, head and block) are set apart
MISTRAL3 = {
    "architectures": ["Mistral3ForConditionalGeneration"],
    "image_token_index": 10,
    "model_type": "mistral3",
    "multimodal_projector_bias": False,
    "projector_hidden_act": "gelu",
    "spatial_merge_size": 2,
    "text_config": {
        "head_dim": 128,
        "hidden_act": "silu",
        "hidden_size": 5120,
        "intermediate_size": 32768,
        "max_position_embeddings": 131072,
        "model_type": "mistral",
        "num_attention_heads": 32,
        "num_hidden_layers": 40,
        "num_key_value_heads": 8,
        "rms_norm_eps": 1e-05,
        "rope_theta": 1000000000.0,
        "sliding_window": None,
        "vocab_size": 131072,
    },
    "vision_config": {
        "attention_dropout": 0.0,
        "head_dim": 64,
        "hidden_act": "silu",
        "hidden_size": 1024,
        "image_size": 1540,
        "intermediate_size": 4096,
        "model_type": "pixtral",
        "num_attention_heads": 16,
        "num_channels": 3,
        "num_hidden_layers": 24,
        "patch_size": 14,
        "rope_theta": 10000.0,
    },
    "vision_feature_layer": -1,
}


def _mistral3(tmp_path, change: dict | None = None, vision: dict | None = None) -> Path:
    raw = json.loads(json.dumps(MISTRAL3)) | (change or {})
    raw["vision_config"].update(vision or {})
    (tmp_path / "config.json").write_text(json.dumps(raw))
    return tmp_path / "config.json"


def test_mistral3_counted_as_transformers_builds_it(tmp_path):
    full, text = read(_mistral3(tmp_path)), read(_mistral3(tmp_path), text_only=True)
    assert (full.param_count, text.param_count, full.P_v) == (23_340_272_640, 22_901_314_560, 403_305_472 + 35_652_608)
    biased = read(_mistral3(tmp_path, {"multimodal_projector_bias": True}))  # linear_1's and linear_2's biases
    assert biased.P_v - full.P_v == 2 * 5120


def test_pixtral_saved_tensors_are_what_autograd_keeps():
    """The linear part per image token, and the mask over a forward's patches: one bf16 [N, N] (N = 64 patches of one
    image, 128 of two), why --image-tokens is refused for this tower."""
    rows = [json.loads(line) for line in (ROOT / "records" / "vision-saved-pixtral-cpu.jsonl").read_text().splitlines()]
    for row in (row for row in rows if row["kernel"] == "sdpa"):
        assert row["transformers"] == "5.25.0"
        c = row["config"]
        tower = vision.read(
            {k: v for k, v in c.items() if k != "model_type"},
            "mistral3",
            {},
            "tiny",
            {"text_config": {"hidden_size": row["text_hidden_size"]}},
        )
        n, tokens = row["patches"], row["image_tokens"]
        fp32 = n * ((2 * tower.depth + 2) * (tower.w + 1) + c["num_attention_heads"] * tower.depth)
        assert (row["saved_bytes"]["torch.float32"], n) == (4 * fp32, tokens * tower.u)
        assert row["saved_bytes"]["torch.bfloat16"] == 2 * (tokens * tower.saved_per_token + n * n)


def test_pixtral_activations_are_refused_but_its_states_held(tmp_path):
    shape = read(_mistral3(tmp_path))
    with pytest.raises(ConfigError, match="Pixtral tower also keeps a block-diagonal mask") as err:
        estimate(shape, Training(d=8, s=4096, image_tokens=256))
    assert "\n" not in str(err.value)
    first = _first(shape, Training(d=8, s=4096))
    assert (first["vision_weights"], first["vision_gradients"], first["vision_activations"]) == (
        2 * shape.P_v,
        4 * shape.P_v,
        0,
    )
    frozen = _first(shape, Training(d=8, s=4096, image_tokens=256, freeze_vision=True))
    assert (frozen["vision_activations"], "vision_gradients" in frozen) == (0, False)


@pytest.mark.parametrize(
    "change, vision_change, key",
    [
        ({"vision_feature_layer": -2}, {}, "vision_feature_layer"),
        ({"projector_hidden_act": "relu"}, {}, "projector_hidden_act"),
        ({"spatial_merge_size": 0}, {}, "spatial_merge_size"),
        ({}, {"head_dim": 32}, "vision_config.head_dim"),
        ({}, {"attention_dropout": 0.1}, "vision_config.attention_dropout"),
        ({}, {"new_key": 1}, "vision_config.new_key"),
        ({}, {"hidden_act": "relu"}, "vision_config.hidden_act"),
        ({}, {"model_type": "siglip_vision_model"}, "vision_config"),
        ({"new_key": 1}, {}, "new_key"),
    ],
)
def test_a_mistral3_config_mem4d_does_not_model_is_refused(tmp_path, change, vision_change, key):
    with pytest.raises(ConfigError, match=f"key '{key}'") as err:
        read(_mistral3(tmp_path, change, vision_change))
    assert "\n" not in str(err.value)


def test_pixtral_tower_round_trips_through_a_json_shape(tmp_path):
    from symbolic.config.shape_json import shape_from_json, shape_json

    shape = read(_mistral3(tmp_path))
    assert shape_from_json(json.loads(json.dumps(shape_json(shape)))) == shape
