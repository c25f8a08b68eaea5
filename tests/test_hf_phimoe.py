"""phimoe (Phi-3.5-MoE) is read and counted to the parameter, and refused by name by every recipe: its SparseMixer
router keeps other tensors than the softmax top-k router the recipes list, so it is never estimated as Mixtral.

Sources of truth: transformers 5.25.0's own count of the published-shaped file (records/hf-count-published.jsonl,
exact), the model card's 6.6B active parameters (rounded to 0.1B), and what autograd keeps of transformers' two
routers (records/router-saved-phimoe-cpu.jsonl, benchmarks/router_saved_phimoe.py; exact shapes and dtypes).
"""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from symbolic.cli import main
from symbolic.config.errors import ConfigError
from symbolic.config.hfconfig import from_hf_config
from symbolic.config.shapes import PRESETS
from symbolic.config.training import Training

ROOT = Path(__file__).resolve().parent.parent
PHI35 = ROOT / "grids" / "models" / "published" / "phi-3.5-moe-instruct.json"


@pytest.fixture(scope="module")
def shape():
    return from_hf_config(PHI35)


def test_phi35_moe_is_read_as_transformers_builds_it(shape):
    assert (
        shape.E,
        shape.k_e,
        shape.f_e,
        shape.norm,
        shape.qkv_bias,
        shape.o_bias,
        shape.head_bias,
        shape.sparsemixer,
    ) == (16, 2, 6400, "layer", True, True, True, True)
    assert shape.param_count == 41_873_153_344  # transformers 5.25.0's PhimoeForCausalLM on the meta device
    assert round(shape.active_count / 1e9, 1) == 6.6  # the model card: 6.6B active parameters


def test_sparsemixer_routes_two_experts_only(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "phimoe", "num_experts_per_tok": 4}))
    with pytest.raises(ConfigError, match="key 'num_experts_per_tok' = 4: transformers' sparsemixer") as err:
        from_hf_config(path)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    "recipe",
    [[], ["--recipe", "megatron"], ["--recipe", "torchtitan"], ["--recipe", "deepspeed"], ["--profile", "jax"]],
)
def test_every_recipe_refuses_the_sparsemixer_by_name(recipe, capsys):
    assert main(["estimate", "--model", str(PHI35), *recipe]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.count("\n") == 1 and "phimoe's SparseMixer" in out.err


def test_an_lm_head_bias_is_refused_by_name():
    with pytest.raises(ConfigError, match="bias \\[v\\] on its LM head"):
        Training().check(replace(PRESETS["mixtral-8x7b"], head_bias=True))


def test_the_sparsemixer_keeps_what_the_top_k_router_does_not():
    """transformers' routers in training (T tokens, E experts, bf16): Mixtral's keeps an fp32 softmax [T, E], the
    top-k indices and values and their sum; phimoe's keeps, twice (one per expert chosen), a bool mask [T, E], a bf16
    masked softmax [T, E], the Gumbel max's int64 indices [T], the gather's [T, 1] and the multiplier [T, 1], and the
    input jitter's uniform noise [T, h] (input_jitter_noise > 0): none of it is the recipes' router_* components."""
    rows = {
        row["router"]: row
        for row in map(json.loads, (ROOT / "records" / "router-saved-phimoe-cpu.jsonl").read_text().splitlines())
    }
    T, h, E = (
        rows["phimoe"]["tokens"],
        rows["phimoe"]["config"]["hidden_size"],
        rows["phimoe"]["config"]["num_local_experts"],
    )
    kinds = sorted((tuple(t["shape"]), t["dtype"]) for t in rows["phimoe"]["saved"] if t["role"] == "router")
    assert kinds == sorted(
        [((T, h), "torch.bfloat16")]
        + 2
        * [
            ((T, E), "torch.bool"),
            ((T, E), "torch.bfloat16"),
            ((T,), "torch.int64"),
            ((T, 1), "torch.int64"),
            ((T, 1), "torch.bfloat16"),
        ]
    )
    assert rows["phimoe"]["router_bytes_per_token"] == 2 * h + 6 * E + 36
    assert rows["mixtral"]["router_bytes_per_token"] == 4 * E + 8 * 2 + 4 + 4 * 2
