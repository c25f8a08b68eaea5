"""The count table: each of the 19 verbatim published config.json files in ../shared/data/configs is counted to the
parameter against its published total (COUNTS.tsv: the Hub's safetensors total), or differs from it by a named
mechanism counted here exactly: fp32 fp8 block scales and the MTP layer's stored copies of embed and head, an MTP layer
the file does not declare; a multimodal file with its vision tower (--text-only: without); or it is refused in one
line naming the key. (The 29 files of grids/models/published are tests/test_hf_models.py's table.) Then all 47 files
(both folders) against transformers' own count of each, records/hf-count-published.jsonl, file by file.

Source of truth: COUNTS.tsv's published totals (tolerance: none); the mechanisms' sizes from the fp8 checkpoints' layout
(weight_scale_inv [ceil(out/128), ceil(in/128)] per quantized linear, grids/models/published/SOURCES.md).
"""

import json
from math import ceil
from pathlib import Path

import pytest

from symbolic.config.errors import ConfigError
from symbolic.config.hfconfig import read

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "configs"
pytestmark = pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/data/configs (reference data) is absent")


def _published() -> dict[str, int]:
    rows = (SHARED / "COUNTS.tsv").read_text().splitlines()[1:]
    return {row.split("\t")[0]: int(row.split("\t")[1]) for row in rows}


def minimax_fp8_scales(c: dict) -> int:
    """MiniMax-M2's fp32 block scales: each quantized linear's [ceil(out/128), ceil(in/128)] (q, k, v, o and every
    expert's three; the router, its bias and the head are modules_to_not_convert)."""
    h, dh, f = c["hidden_size"], c["head_dim"], c["intermediate_size"]

    def blocks(out: int, into: int) -> int:
        return ceil(out / 128) * ceil(into / 128)

    a, k = c["num_attention_heads"], c["num_key_value_heads"]
    layer = (
        blocks(a * dh, h)
        + 2 * blocks(k * dh, h)
        + blocks(h, a * dh)
        + c["num_local_experts"] * (2 * blocks(f, h) + blocks(h, f))
    )
    return c["num_hidden_layers"] * layer


def _with_mtp(tmp_path: Path, name: str) -> int:
    raw = json.loads((SHARED / f"{name}.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw | {"mtp_num_hidden_layers": 1}))
    return read(path).param_count


EXACT = [
    "falcon3-7b-instruct",
    "gemma-3-1b-it",
    "glm-5.1",
    "gpt-oss-120b",
    "granite-3.3-8b-instruct",
    "mistral-7b-instruct-v0.3",
    "olmo-2-1124-7b-instruct",
    "phi-4-mini-instruct",
    "smollm2-1.7b-instruct",
]
# refused in one line: the key named (a family or a block kind mem4d does not model)
REFUSED: dict[str, str] = {}
MULTIMODAL = ["qwen3-vl-32b-instruct", "qwen3.5-35b-a3b", "qwen3.5-122b-a10b", "qwen3.5-397b-a17b", "qwen3.6-35b-a3b"]


def test_the_table_covers_every_shared_file():
    assert sorted(_published()) == sorted(
        EXACT
        + list(REFUSED)
        + MULTIMODAL
        + [
            "deepseek-r1-0528",
            "minimax-m2.7",
            "mimo-v2-flash",
            "qwen3-next-80b-a3b-instruct",
            "nvidia-nemotron-3-super-120b-a12b-fp8",
        ]
    )


@pytest.mark.parametrize("name", EXACT)
def test_counted_to_the_published_total(name):
    assert read(SHARED / f"{name}.json").param_count == _published()[name]


def test_deepseek_r1_differs_by_its_fp8_scales_and_mtp_copies():
    """DeepSeek-V3's shapes and checkpoint layout: 41,540,496 fp32 block scales and the MTP layer's stored copies of
    embed and head (2 x 926,679,040) beside the parameters (SOURCES.md's DeepSeek-V3 row, reconciled by dtype)."""
    assert (
        _published()["deepseek-r1-0528"] - read(SHARED / "deepseek-r1-0528.json").param_count
        == 41_540_496 + 2 * 926_679_040
    )


def test_minimax_differs_by_its_fp8_scales():
    raw = json.loads((SHARED / "minimax-m2.7.json").read_text())
    assert (
        _published()["minimax-m2.7"] - read(SHARED / "minimax-m2.7.json").param_count
        == minimax_fp8_scales(raw)
        == 13_880_064
    )


def mimo_fp8_scales(c: dict) -> int:
    """MiMo-V2-Flash's fp32 block scales: each quantized linear's [ceil(out/128), ceil(in/128)]: q, k, v, o of every
    layer (k and v at the layer kind's KV heads), the dense MLP's three and every expert's three (the file's
    quantization_config lists no ignored module; the embedding, head, norms, router and sinks are not linears
    quantized by the fp8 block recipe)."""
    h, a, dh, dv = c["hidden_size"], c["num_attention_heads"], c["head_dim"], c["v_head_dim"]

    def blocks(out: int, into: int) -> int:
        return ceil(out / 128) * ceil(into / 128)

    def attention(k: int) -> int:
        return blocks(a * dh, h) + blocks(k * dh, h) + blocks(k * dv, h) + blocks(h, a * dv)

    swa = sum(c["hybrid_layer_pattern"])
    moe = sum(c["moe_layer_freq"])
    f, f_e = c["intermediate_size"], c["moe_intermediate_size"]
    return (
        (len(c["hybrid_layer_pattern"]) - swa) * attention(c["num_key_value_heads"])
        + swa * attention(c["swa_num_key_value_heads"])
        + (c["num_hidden_layers"] - moe) * 3 * blocks(f, h)
        + moe * c["n_routed_experts"] * 3 * blocks(f_e, h)
    )


def test_mimo_v2_flash_differs_by_its_fp8_scales_and_undeclared_mtp_modules():
    """MiMo-V2-Flash: 9 full-attention layers of 4 KV heads, 39 sliding-window ones of 8 KV heads with sinks [64],
    value heads 128 wide beside q/k heads 192 wide; equal to transformers' own count (records/hf-count-published.jsonl:
    308,778,768,832 + 12,032 score-correction biases). The published total is 18,767,040 fp8 block scales more and
    987,770,496 more again: the checkpoint's model.mtp.* modules (the SGLang blog's multi-layer MTP), which its
    config.json does not declare (no num_nextn_predict_layers) and transformers skips on load
    (_keys_to_ignore_on_load_unexpected); not counted (their exact layout is not read here)."""
    raw = json.loads((SHARED / "mimo-v2-flash.json").read_text())
    count = read(SHARED / "mimo-v2-flash.json").param_count
    assert count == 308_778_780_864 and mimo_fp8_scales(raw) == 18_767_040
    assert _published()["mimo-v2-flash"] - count - mimo_fp8_scales(raw) == 987_770_496


def test_qwen3_next_differs_by_the_mtp_layer_its_file_leaves_out(tmp_path):
    """Qwen3-Next-80B-A3B-Instruct's checkpoint stores one MTP layer its config.json does not declare (nor does
    Qwen3NextConfig); counted with mtp_num_hidden_layers 1, it is the published total."""
    name = "qwen3-next-80b-a3b-instruct"
    assert read(SHARED / f"{name}.json").param_count < _published()[name] == _with_mtp(tmp_path, name)


def test_nemotron_3_super_differs_by_its_score_correction_biases():
    """Nemotron 3 Super (40 latent MoE blocks and one MTP layer of an attention and an MoE block): mem4d counts each
    MoE block's fp32 e_score_correction_bias [E] (Megatron-Core's expert_bias), which transformers 5.25.0 keeps as a
    buffer (NemotronHTopkRouter) and the published total leaves out: 41 x 512 = 20,992 above it, to the element."""
    name = "nvidia-nemotron-3-super-120b-a12b-fp8"
    shape = read(SHARED / f"{name}.json")
    assert (shape.L_e, shape.mtp, shape.E, shape.moe_latent) == (40, 1, 512, 1024)
    assert shape.param_count - _published()[name] == (shape.L_e + shape.mtp) * shape.E == 20_992


@pytest.mark.parametrize("name", MULTIMODAL)
def test_a_multimodal_file_is_counted_with_its_vision_tower(name):
    """The tower counted by mem4d (config.vision, as Qwen3VLVisionModel builds it); --text-only leaves it out."""
    shape = read(SHARED / f"{name}.json")
    assert (
        shape.param_count == _published()[name] == read(SHARED / f"{name}.json", text_only=True).param_count + shape.P_v
    )


@pytest.mark.parametrize("name, key", sorted(REFUSED.items()))
def test_refused_in_one_line_naming_the_key(name, key):
    with pytest.raises(ConfigError) as err:
        read(SHARED / f"{name}.json")
    assert "\n" not in str(err.value) and f"key {key!r}" in str(err.value)


# transformers' own count (benchmarks/hf_count.py: transformers 5.25.0, torch 2.13.0+cpu, each model built whole on the
# meta device, a multimodal wrapper through its image-text-to-text class, Kimi K2 through DeepseekV3ForCausalLM; run
# by hand, its output committed as records/hf-count-published.jsonl, one row per file)
ROOT = Path(__file__).resolve().parent.parent
HF = ROOT / "records" / "hf-count-published.jsonl"
# the MTP modules transformers 5.25.0 does not build, which mem4d counts (num_nextn_predict_layers,
# mtp_num_hidden_layers): DeepseekV3ForCausalLM and GlmMoeDsaForCausalLM skip them on load, Qwen3.5's and
# NemotronH's classes build none
MTP_NOT_BUILT = {
    "deepseek-r1-0528",
    "deepseek-v3",
    "glm-5.1",
    "nvidia-nemotron-3-super-120b-a12b-fp8",
    "qwen3.5-122b-a10b",
    "qwen3.5-35b-a3b",
    "qwen3.5-397b-a17b",
    "qwen3.6-35b-a3b",
}
# the multimodal files of grids/models/published (Llama-4-Scout with its published vision_config, Gemma 3 4B: SOURCES.md)
WRAPPERS = ["llama4-scout-17b-16e-text-config", "gemma-3-4b-it"]
# the multimodal files whose towers mem4d does not model (Gemma 4's vision and audio): counted by both --text-only
TEXT_ONLY = ["gemma-4-26b-a4b-it", "gemma-4-31b-it", "gemma-4-e2b-it"]


def _hf_rows() -> list[dict]:
    return [json.loads(line) for line in HF.read_text().splitlines()]


def _path(row: dict) -> Path:
    return SHARED / Path(row["file"]).name if row["file"].startswith("..") else ROOT / row["file"]


@pytest.mark.parametrize("row", _hf_rows(), ids=lambda row: row["file"].split("/")[-2] + "/" + Path(row["file"]).stem)
def test_equal_to_transformers_own_count(row):
    """mem4d's count is transformers' parameters (the whole checkpoint, tower and projector included) plus only two
    named mechanisms: the fp32 score-correction biases [E] of every MoE layer, which transformers keeps as buffers and
    mem4d counts as parameters (Megatron-Core's expert_bias), and the MTP modules transformers does not build. A
    --text-only row (Gemma 4's: its towers are not modelled) is the language model alone, Gemma4ForCausalLM.
    Tolerance: none."""
    name = Path(row["file"]).stem
    assert "error" not in row, row
    assert row["text_only"] == (name in TEXT_ONLY)
    shape = read(_path(row), text_only=row["text_only"])
    built = row["parameters"]
    assert row["bias_buffers"] == (shape.L_e * shape.E if shape.expert_bias else 0)
    mtp = shape.mtp * shape.mtp_count
    assert (mtp > 0) == (name in MTP_NOT_BUILT)
    assert shape.param_count == built + row["bias_buffers"] + mtp


def test_a_wrapper_is_counted_whole_its_parts_apart():
    """Each multimodal file is built through its image-text-to-text class: tower + projector + language model (head
    included) = the whole; mem4d's --text-only is the language part (with the MTP modules transformers does not build)."""
    rows = {Path(row["file"]).stem: row for row in _hf_rows() if "parts" in row}
    assert sorted(rows) == sorted(MULTIMODAL + WRAPPERS)
    for name, row in rows.items():
        assert sum(row["parts"].values()) == row["parameters"]
        text = read(_path(row), text_only=True)
        assert text.param_count == row["parts"]["language"] + text.mtp * text.mtp_count


# the published files of a family transformers 5.25.0 has no class for and whose remote code is not on PyPI: nothing
# to build them with; Megatron-Core counts them instead (records/megatron-count-nas.jsonl, tests/test_hf_nemotron_nas.py)
NOT_BUILDABLE = [
    "grids/models/published/llama-3.1-nemotron-ultra-253b-v1.json",
    "grids/models/published/llama-3.3-nemotron-super-49b-v1.json",
]


def test_every_file_was_counted_by_transformers():
    """One row per file of both folders (48 files: mimo-v2-flash is in both, the same file; 47 distinct) but the two
    DeciLM files transformers cannot build (46 rows)."""
    files = sorted(f"../shared/data/configs/{p.name}" for p in SHARED.glob("*.json")) + sorted(
        f"grids/models/published/{p.name}" for p in (ROOT / "grids" / "models" / "published").glob("*.json")
    )
    assert [row["file"] for row in _hf_rows()] == [f for f in files if f not in NOT_BUILDABLE] and len(files) == 48
    assert all(f in files for f in NOT_BUILDABLE)


def _kimi_check():
    pytest.importorskip("transformers", reason="the test extra's transformers reads DeepseekV3Config (no torch)")
    import importlib.util

    spec = importlib.util.spec_from_file_location("hf_count", ROOT / "benchmarks" / "hf_count.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.kimi_k2_as_deepseek_v3


KIMI = json.loads((ROOT / "grids" / "models" / "published" / "kimi-k2-instruct.json").read_text())


def test_kimi_k2_is_read_as_deepseek_v3_key_by_key():
    """hf_count builds Kimi K2 with transformers' DeepseekV3 classes only after each key of the file lands unchanged in
    DeepseekV3Config (or is metadata, a loss weight, the fp8 storage, or a choice DeepSeek-V3's modeling fixes)."""
    config = _kimi_check()(KIMI)
    assert (
        config.n_routed_experts,
        config.num_attention_heads,
        config.first_k_dense_replace,
        config.num_mtp_layers,
        config.rope_parameters["rope_theta"],
    ) == (384, 64, 1, 0, 50000.0)


@pytest.mark.parametrize(
    "key, value",
    [("moe_layer_freq", 2), ("scoring_func", "softmax"), ("topk_method", "greedy"), ("n_dense_experts", 1)],
)
def test_a_kimi_key_deepseek_v3_would_not_take_unchanged_is_refused(key, value):
    with pytest.raises(ValueError, match=f"key {key!r}"):
        _kimi_check()(KIMI | {key: value})
