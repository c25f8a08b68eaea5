"""The "shape" object of --json outputs: only what differs from the defaults, and every shape read back from it equal.
Source of truth: the ModelShape it came from (exact equality)."""

from dataclasses import fields
from pathlib import Path

import pytest

from symbolic.config.hfconfig import read
from symbolic.config.shape_json import REQUIRED, shape_from_json, shape_json
from symbolic.config.shapes import PRESETS, ModelShape

MODELS = Path(__file__).resolve().parent.parent / "grids" / "models"
PUBLISHED = sorted([*MODELS.glob("*.json"), *(MODELS / "published").glob("*.json")])  # hybrids, MLA, DSA, Gemma
SHAPES = [*PRESETS.values(), *(read(path, text_only="text_config" in path.read_text()) for path in PUBLISHED)]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda shape: shape.name)
def test_shape_json_reads_back_equal_and_holds_no_default(shape):
    out = shape_json(shape)
    assert shape_from_json(out) == shape
    assert shape_from_json(shape.as_dict()) == shape  # an older record, every field named
    plain = ModelShape(*(getattr(shape, key) for key in REQUIRED))
    for key, value in out.items():
        assert key in REQUIRED or value != plain.as_dict()[key], key
    assert [key for key in out] == [f.name for f in fields(ModelShape) if f.name in out]  # ModelShape's order


def test_shape_json_of_a_plain_shape_is_its_letters():
    assert shape_json(PRESETS["llama3-8b"]) == dict(name="llama3-8b", h=4096, f=14336, a=32, k=8, L=32, v=128256)
    assert shape_json(PRESETS["qwen3-30b-a3b"])["head_dim"] == 128  # h // a = 64: not the default


def test_an_older_record_naming_lin_conv_reads_as_conv_width():
    old = {
        **PRESETS["llama3-8b"].as_dict(),
        "linear_layers": [0, 1],
        "lin_k_heads": 2,
        "lin_v_heads": 4,
        "lin_k_dim": 16,
        "lin_v_dim": 16,
        "lin_conv": 4,
    }
    del old["conv_width"]
    assert shape_from_json(old).conv_width == 4


def test_a_vision_tower_is_written_and_read_back():
    """A multimodal checkpoint's shape (the published Qwen3-VL-32B file) carries its tower as an object, read back whole;
    the estimate of it once raised a KeyError here (the tower is no field of a plain shape)."""
    path = Path(__file__).resolve().parents[2] / "shared" / "data" / "configs" / "qwen3-vl-32b-instruct.json"
    if not path.exists():
        pytest.skip("../shared/data/configs is absent")
    shape = read(path)
    out = shape_json(shape)
    assert out["vision"]["depth"] == shape.vision.depth
    assert shape_from_json(out) == shape
