"""DeciLM / nemotron-nas (a block config per layer) is read as published and counted to the parameter, and every
recipe refuses its memory by name.

Sources of truth: Megatron-Core 0.16.1's own count of both published files (GPTModel of
get_gpt_heterogeneous_layer_spec on the meta device: benchmarks/megatron_count_nas.py, records/megatron-count-nas.jsonl);
the checkpoints' remote code as Megatron-Core 0.16.1 reads it (heterogeneous_config.py: a / n_heads_in_group
KV heads, MLPConfig.ffn_mult_to_intermediate_size: int(2 ffn_mult h / 3) rounded up to a multiple of 256) and builds
it (a no-op part is an IdentityOp: no norm, no weight), each layer's parameters summed here by hand from the file; the
model cards' rounded totals (49.9B, 253B). No transformers count exists (remote code, no class in 5.25.0). Exact.
"""

import json
from pathlib import Path

import pytest

from model_files import PUBLISHED as FOLDER

from symbolic.cli import main
from symbolic.config.blocks import ffn_width
from symbolic.config.errors import ConfigError
from symbolic.config.hfconfig import from_hf_config

SUPER = FOLDER / "llama-3.3-nemotron-super-49b-v1.json"
ULTRA = FOLDER / "llama-3.1-nemotron-ultra-253b-v1.json"


@pytest.mark.parametrize(
    "mult, h, width",
    [
        (2.625, 8192, 14336),
        (5.25, 8192, 28672),
        (1.0, 8192, 5632),
        (0.5, 8192, 2816),
        (0.4875, 16384, 5376),
        (39.0, 16384, 425984),
    ],
)
def test_ffn_width_rounds_up_to_a_multiple_of_256(mult, h, width):
    """By hand: 2 x 2.625 x 8192 / 3 = 14336 (a multiple of 256 already); 2 x 8192 / 3 = 5461.3 -> 5461 -> 5632;
    2 x 0.4875 x 16384 / 3 = 5324.8 -> 5376."""
    assert ffn_width(mult, h) == width


def _by_hand(path: Path) -> int:
    """The remote code's parameters: embedding and untied head v h, final norm h; per layer, attention (q, o h x h,
    k, v h x k_i 128) and its norm h where present, the MLP 3 h f_i and its norm h where present."""
    raw = json.loads(path.read_text())
    h, a, v = raw["hidden_size"], raw["num_attention_heads"], raw["vocab_size"]
    total = 2 * v * h + h
    for block in raw["block_configs"]:
        if not block["attention"]["no_op"]:
            total += h + 2 * h * h + 2 * h * (a // block["attention"]["n_heads_in_group"]) * (h // a)
        if not block["ffn"]["no_op"]:
            total += h + 3 * h * ffn_width(block["ffn"]["ffn_mult"], h)
    return total


@pytest.mark.parametrize("path, card", [(SUPER, 49.9), (ULTRA, 253)])
def test_counted_as_the_remote_code_builds_it(path, card):
    shape = from_hf_config(path)
    assert shape.param_count == _by_hand(path)
    assert round(shape.param_count / 1e9, 1 if card % 1 else 0) == card


RECORD = Path(__file__).resolve().parent.parent / "records" / "megatron-count-nas.jsonl"


@pytest.mark.parametrize(
    "row", [json.loads(line) for line in RECORD.read_text().splitlines()], ids=lambda row: Path(row["file"]).stem
)
def test_equal_to_megatron_cores_own_count(row):
    assert row["megatron_core"] == "0.16.1"
    assert from_hf_config(FOLDER.parent.parent.parent / row["file"]).param_count == row["parameters"]


def test_super_49b_blocks():
    """31 of the 80 layers without attention; 6 MLP widths; k and f the largest (8 KV heads, 28672)."""
    shape = from_hf_config(SUPER)
    assert (shape.L, shape.k, shape.f, shape.layer_k.count(0), len(set(shape.layer_f))) == (80, 8, 28672, 31, 6)


def test_an_empty_layer_holds_nothing():
    """Ultra's 81 layers with both parts no_op hold no parameter (an identity, IdentityOp in Megatron-Core)."""
    shape = from_hf_config(ULTRA)
    assert sum(1 for k, f in zip(shape.layer_k, shape.layer_f) if not k and not f) == 81


def _one_block(tmp_path, attention=None, ffn=None, **top):
    raw = json.loads(SUPER.read_text()) | top
    raw["num_hidden_layers"], raw["block_configs"] = 2, raw["block_configs"][:2]
    raw["block_configs"][1] = {
        "attention": raw["block_configs"][1]["attention"] | (attention or {}),
        "ffn": raw["block_configs"][1]["ffn"] | (ffn or {}),
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    return path


@pytest.mark.parametrize(
    "attention, ffn, top, needle",
    [
        ({"replace_with_linear": True}, None, {}, "replace_with_linear = True is another layer kind"),
        ({"window_length": 4096}, None, {}, "window_length = 4096"),
        (None, {"sparsify": ["x"]}, {}, "sparsify = ['x']"),
        ({"n_heads_in_group": 7}, None, {}, "n_heads_in_group must be a positive divisor"),
        (None, {"ffn_mult": 0}, {}, "ffn_mult must be a positive number"),
        (None, {"gated": True}, {}, "an object of keys"),
        (None, None, {"intermediate_size": 28672}, "must be null: block_configs"),
        (None, None, {"head_dim": 128}, "key 'head_dim'"),
    ],
)
def test_what_is_not_modelled_is_refused_in_one_line(tmp_path, attention, ffn, top, needle):
    with pytest.raises(ConfigError) as err:
        from_hf_config(_one_block(tmp_path, attention, ffn, **top))
    assert needle in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("recipe", [[], ["--recipe", "torchtitan"], ["--recipe", "deepspeed"], ["--profile", "jax"]])
def test_every_recipe_refuses_its_memory_by_name(recipe, capsys):
    assert main(["estimate", "--model", str(SUPER), *recipe]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.count("\n") == 1 and "a block config per layer" in out.err
