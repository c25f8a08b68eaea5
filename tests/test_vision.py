"""The vision tower of a multimodal checkpoint (symbolic/config/vision.py, components/vision.py): its count is the
published total less the language model's, its saved tensors are what autograd keeps of transformers' own tower,
and the megatron recipe holds its states and activations on the embedding's stage.

Sources of truth: COUNTS.tsv's published totals (tolerance: none); records/vision-saved-cpu.jsonl, what
benchmarks/vision_saved.py measured of transformers 5.25.0's Qwen3VLVisionModel under torch 2.13.0 (tolerance: none
once the LayerNorms' mean and rstd, 2 bf16 elements per normalised row, are set apart); the components' closed form
(B_w P_v, B_g P_v, B_o P_v / d, m_r B_a b n_v A_v: exact)."""

import json
from pathlib import Path

import pytest

from model_files import assert_vision_refused

from symbolic.config.errors import ConfigError
from symbolic.config.hfconfig import read
from symbolic.config.shapes import PRESETS
from symbolic.config import vision
from symbolic.config.training import Training
from symbolic.config.vision import VisionTower
from symbolic.estimator.estimate import estimate

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data" / "configs"
MULTIMODAL = ["qwen3-vl-32b-instruct", "qwen3.5-35b-a3b", "qwen3.5-122b-a10b", "qwen3.5-397b-a17b", "qwen3.6-35b-a3b"]
# a tiny Qwen3-VL-like model: Qwen3's tiny language model with a tower whose widths all differ
TOWER = VisionTower(depth=3, w=48, f=112, c_in=96, u=4, out=256, n_pos=16, n_ds=1)
TINY = PRESETS["tiny"].__class__(**{**PRESETS["tiny"].__dict__, "name": "tiny-vl", "vision": TOWER})


def _published() -> dict[str, int]:
    rows = (SHARED / "COUNTS.tsv").read_text().splitlines()[1:]
    return {row.split("\t")[0]: int(row.split("\t")[1]) for row in rows}


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/data/configs (reference data) is absent")
@pytest.mark.parametrize("name", MULTIMODAL)
def test_counted_with_its_tower_to_the_published_total(name):
    full, text = read(SHARED / f"{name}.json"), read(SHARED / f"{name}.json", text_only=True)
    assert full.param_count == _published()[name] == text.param_count + full.P_v and text.vision is None


def test_saved_tensors_are_what_autograd_keeps():
    row = json.loads((ROOT / "records" / "vision-saved-cpu.jsonl").read_text().splitlines()[0])
    assert row["kernel"] == "sdpa" and row["transformers"] == "5.25.0"
    c = row["config"]
    keys = {"depth": "depth", "w": "hidden_size", "f": "intermediate_size", "out": "out_hidden_size"}
    sizes = {letter: c[key] for letter, key in keys.items()} | {"n_pos": c["num_position_embeddings"]}
    c_in = c["in_channels"] * c["temporal_patch_size"] * c["patch_size"] ** 2  # a patch's pixels
    tower = VisionTower(**sizes, c_in=c_in, u=c["spatial_merge_size"] ** 2, n_ds=len(c["deepstack_visual_indexes"]))
    patches = row["image_tokens"] * tower.u
    norm_rows = 2 * tower.depth * patches + patches + tower.n_ds * row["image_tokens"]  # norm1, norm2, the mergers'
    assert row["saved_bytes"]["torch.bfloat16"] - 2 * 2 * norm_rows == 2 * row["image_tokens"] * tower.saved_per_token


def _parts(training: Training) -> tuple[dict, dict]:
    est = estimate(TINY, training)
    only = next(stage for stage in est.stages if stage["stage"] in ("only", "first"))["bytes"]
    return est, only


def test_megatron_holds_the_tower_on_the_embedding_stage():
    training = Training(d=2, p=2, s=256, b=2, gbs=8, image_tokens=10)
    est, first = _parts(training)
    last = next(stage for stage in est.stages if stage["stage"] == "last")["bytes"]
    P = TOWER.params
    assert (first["vision_weights"], first["vision_gradients"], first["vision_optimizer"]) == (2 * P, 4 * P, 12 * P / 2)
    assert first["vision_activations"] == 2 * 2 * 2 * 10 * TOWER.saved_per_token  # m_r = 2 in flight, B_a, b, n_v
    assert not any(last.get(name) for name in first if name.startswith("vision_"))
    assert TINY.param_count == PRESETS["tiny"].param_count + P


def test_frozen_tower_keeps_its_weights_alone():
    _, first = _parts(Training(d=2, s=256, image_tokens=10, freeze_vision=True))
    assert {name: value for name, value in first.items() if name.startswith("vision_")} == {
        "vision_weights": 2 * TOWER.params,
        "vision_activations": 0,
    }


def test_text_only_activations_by_default():
    _, first = _parts(Training(d=2, s=256))
    assert first["vision_activations"] == 0 and first["vision_gradients"] == 4 * TOWER.params


@pytest.mark.parametrize("profile", ["torchtitan", "deepspeed", "jax"])
def test_other_recipes_refuse_the_tower(profile):
    with pytest.raises(ConfigError, match="only the megatron recipe models"):
        estimate(TINY, Training(d=2, s=256), profile=profile)


def test_vision_flags_need_a_tower():
    with pytest.raises(ConfigError, match="has no vision tower"):
        estimate(PRESETS["tiny"], Training(image_tokens=4, s=256))


def test_a_tower_of_another_kind_is_refused_in_one_line(tmp_path):
    raw = {"model_type": "kimi_k25", "text_config": {"model_type": "kimi_k2"}, "vision_config": {}}
    (tmp_path / "config.json").write_text(json.dumps(raw))
    with pytest.raises(ConfigError, match="MoonViT vision tower.*not modelled.*--text-only") as err:
        read(tmp_path / "config.json")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    "change, key",
    [
        ({"hidden_act": "silu"}, "hidden_act"),
        ({"depth": 0}, "depth"),
        ({"new_key": 1}, "new_key"),
        ({"num_heads": 5}, "num_heads"),
        ({"num_hidden_layers": 26}, "num_hidden_layers"),
        ({"is_encoder_decoder": True}, "is_encoder_decoder"),
    ],
)
def test_a_vision_config_mem4d_does_not_model_is_refused(tmp_path, change, key):
    raw = (
        json.loads((SHARED / "qwen3-vl-32b-instruct.json").read_text())
        if SHARED.is_dir()
        else pytest.skip("../shared/data/configs (reference data) is absent")
    )
    raw["vision_config"].update(change)
    (tmp_path / "config.json").write_text(json.dumps(raw))
    with pytest.raises(ConfigError, match=f"vision_config.{key}"):
        read(tmp_path / "config.json")


def test_a_vision_config_read_through_the_class_aliases(tmp_path):
    """num_hidden_layers and num_attention_heads (Qwen3VLVisionConfig's attribute_map) are read as depth and
    num_heads: the same count (tolerance none)."""
    name = SHARED / "qwen3-vl-32b-instruct.json"
    raw = json.loads(name.read_text()) if SHARED.is_dir() else pytest.skip("../shared/data/configs is absent")
    tower = raw["vision_config"]
    tower.update(num_hidden_layers=tower.pop("depth"), num_attention_heads=tower.pop("num_heads"))
    (tmp_path / "config.json").write_text(json.dumps(raw))
    assert read(tmp_path / "config.json").param_count == read(name).param_count


# Llama 4's tower (symbolic/config/vision_llama4.py): source of truth SOURCES.md's Llama-4-Scout-17B-16E-Instruct total
# and transformers 5.25.0's own count (records/hf-count-published.jsonl), tolerance none; its saved tensors are
# records/vision-saved-llama4-cpu.jsonl (benchmarks/vision_saved_llama4.py), tolerance none once the LayerNorms'
# mean and rstd (2 bf16 elements per row) and the kernel's fp32 logsumexp (one per row and head) are set apart
SCOUT = ROOT / "grids" / "models" / "published" / "llama4-scout-17b-16e-text-config.json"


def test_llama4_scout_counted_with_its_tower_to_the_published_total():
    full, text = read(SCOUT), read(SCOUT, text_only=True)
    assert (full.param_count, text.param_count, full.P_v) == (108_641_793_536, 107_769_861_120, 871_932_416)
    counted = [json.loads(line) for line in (ROOT / "records" / "hf-count-published.jsonl").read_text().splitlines()]
    assert {
        row["parameters"]
        for row in counted
        if row.get("file", "").endswith(SCOUT.name) and row.get("class") == "Llama4ForConditionalGeneration"
    } == {full.param_count}


def test_llama4_saved_tensors_are_what_autograd_keeps():
    row = json.loads((ROOT / "records" / "vision-saved-llama4-cpu.jsonl").read_text().splitlines()[0])
    assert row["kernel"] == "sdpa" and row["transformers"] == "5.25.0"
    tower = vision.read(row["config"], "llama4", {"hidden_size": row["text_hidden_size"]}, "tiny")
    c, tiles = row["config"], row["tiles"]
    rows = tiles * (tower.side**2 + 1)
    stats = 2 * 2 * rows * (2 + 2 * tower.depth)  # bf16 mean and rstd of the pre-, post- and every block's LayerNorms
    assert row["image_tokens"] == tiles * tower.tokens_per_tile
    assert row["saved_bytes"]["torch.float32"] == 4 * rows * c["num_attention_heads"] * tower.depth
    assert row["saved_bytes"]["torch.bfloat16"] - stats == 2 * row["image_tokens"] * tower.saved_per_token


def test_llama4_tower_under_megatron_and_frozen():
    scout = read(SCOUT)
    first = _first(scout, Training(d=8, ep=8, s=8192, image_tokens=1152))
    assert first["vision_activations"] == 2 * 1152 * scout.A_v == 7_153_410_048  # B_a, n_v; 8 tiles of 144 tokens
    assert first["vision_weights"] == 2 * 871_932_416
    frozen = _first(scout, Training(d=8, ep=8, s=8192, image_tokens=1152, freeze_vision=True))
    assert (frozen["vision_activations"], "vision_gradients" in frozen) == (0, False)


def _first(shape, training: Training) -> dict:
    return next(stage for stage in estimate(shape, training).stages if stage["stage"] in ("only", "first"))["bytes"]


@pytest.mark.parametrize(
    "change, key",
    [
        ({"intermediate_size": 5000}, "intermediate_size"),
        ({"pixel_shuffle_ratio": 0.3}, "pixel_shuffle_ratio"),
        ({"vision_output_dim": 7680}, "vision_output_dim"),
        ({"projector_dropout": 0.1}, "projector_dropout"),
        ({"multi_modal_projector_bias": True}, "multi_modal_projector_bias"),
        ({"num_attention_heads": 3}, "num_attention_heads"),
        ({"new_key": 1}, "new_key"),
        ({"num_hidden_layers": 0}, "num_hidden_layers"),
    ],
)
def test_a_llama4_vision_config_mem4d_does_not_model_is_refused(tmp_path, change, key):
    assert_vision_refused(tmp_path, SCOUT, change, f"vision_config.{key}")


def test_llama4_tower_round_trips_through_a_json_shape():
    from symbolic.config.shape_json import shape_from_json, shape_json

    scout = read(SCOUT)
    assert shape_from_json(json.loads(json.dumps(shape_json(scout)))) == scout
