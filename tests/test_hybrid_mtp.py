"""A hybrid pattern's multi-token-prediction depths after '/' and --mtp-use-repeated-layer, as Megatron-LM reads and
builds them.

Source of truth: Megatron-LM d98e8a64 (megatron-core 0.16.1 has neither) models/hybrid/hybrid_layer_allocation.py
parse_hybrid_pattern ("<main>/<mtp>/<mtp>": one depth per pattern after a '/'), training/arguments.py (the pattern's
depth count overrides --mtp-num-layers), transformer/multi_token_prediction.py MultiTokenPredictionBlock
(_build_layers builds one layer under mtp_use_repeated_layer, forward runs self.layers[0] at every depth).
Hand counts on a tiny shape; exact."""
import contextlib
import io
import json
from dataclasses import replace
from pathlib import Path

import pytest

from symbolic.cli.entry import main
from symbolic.config.errors import ConfigError
from symbolic.config.rules import letters
from symbolic.config.shapes import PRESETS
from symbolic.config.training import Training
from symbolic.readers.megatron import read
from symbolic.recipes.registry import select

ARGS = ("--hybrid-layer-pattern ME*E/*E/*E --mamba-num-heads 4 --mamba-head-dim 16 --mamba-state-dim 8 "
        "--mamba-num-groups 2 --hidden-size 64 --num-attention-heads 4 --group-query-attention --num-query-groups 2 "
        "--vocab-size 128 --seq-length 64 --bf16 --micro-batch-size 1 --position-embedding-type none "
        "--normalization RMSNorm --squared-relu --num-experts 4 --moe-router-topk 2 --moe-ffn-hidden-size 48 "
        "--disable-bias-linear --mtp-num-layers 2\n")
# one module (h 64, dh 16, k 2, E 4, f_e 48, RMSNorm): enorm, hnorm, final norm 3 h; eh_proj 2 h h; attention q, o
# h a dh each and k, v h k dh each, its norm h; the router h E, 4 squared-ReLU experts 2 h f_e each, the MoE norm h
MODULE = 3 * 64 + 2 * 64 * 64 + (2 * 64 * 64 + 2 * 64 * 32 + 64) + (64 * 4 + 4 * 2 * 64 * 48 + 64)
EXPERTS = 4 * 2 * 64 * 48
MB61 = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "measured" / "megatron" / \
    "nemotron__nemotron3_5_lightning_no_load_optim_tp1_pp1_cp1_ep4_dgx_gb200_1N4G.model_config.yaml"


def _estimate(path: Path, extra: str = "") -> dict:
    path.write_text(ARGS + extra)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["estimate", "--megatron", str(path), "--gpus", "1", "--json"]) == 0
    return json.loads(out.getvalue())


def test_the_pattern_after_slash_gives_the_depths(tmp_path):
    path = tmp_path / "args.txt"
    path.write_text(ARGS.replace(" --mtp-num-layers 2", ""))  # the pattern alone states them
    model = read(path).model
    assert (model["L"], model["mtp"], model["mtp_repeated"]) == (4, 2, False)
    assert model["mamba_layers"] == (0,) and model["dense_layers"] == (0, 2)


def test_a_repeated_module_holds_one_modules_weights_and_every_depths_tensors(tmp_path):
    own = _estimate(tmp_path / "own.txt")
    one = _estimate(tmp_path / "one.txt", "--mtp-use-repeated-layer\n")
    assert own["param_count"] - one["param_count"] == MODULE == 45632
    mine, theirs = own["stages"][0]["bytes"], one["stages"][0]["bytes"]
    assert mine["weights"] - theirs["weights"] == 2 * (MODULE - EXPERTS)  # bf16, the module's non-expert part
    assert mine["expert_weights"] - theirs["expert_weights"] == 2 * EXPERTS  # ep 1: all 4 experts here
    assert mine["mtp_activations"] == theirs["mtp_activations"] > 0  # autograd keeps each depth's call
    assert mine["activations"] == theirs["activations"]


@pytest.mark.parametrize("pattern, flags, says", [
    ("ME*E/M*/M*", "", "depths of an attention and an MoE block ('/*E' each) are modelled, got '/M*/M*'"),
    ("ME*E/*E/*", "", "got '/*E/*'"),
    ("ME*E/*E/*E", " --mtp-num-layers 3", "contradicts the hybrid pattern's 2 multi-token-prediction depths"),
])
def test_what_is_not_modelled_is_one_line(tmp_path, pattern, flags, says):
    path = tmp_path / "args.txt"
    path.write_text(ARGS.replace("ME*E/*E/*E", pattern).replace(" --mtp-num-layers 2", flags))
    with pytest.raises(ConfigError) as caught:
        read(path)
    assert says in str(caught.value)


def test_the_jax_profile_refuses_a_repeated_module():
    shape = replace(PRESETS["tiny"], mtp=2, mtp_repeated=True)
    rule = next(rule for rule in select("jax") if rule.name == "MTP modules of their own (jax)")
    assert not rule.holds(letters(Training(), shape))
    assert "jaxcheck's model builds one module per depth" in rule.message(letters(Training(), shape))
    assert rule.holds(letters(Training(), replace(shape, mtp=1)))  # one depth: one module either way
    assert all(rule.name != "MTP modules of their own (jax)" for rule in select("paper"))


@pytest.mark.skipif(not MB61.exists(), reason="../shared/data/measured is absent (reference data beside the clone)")
def test_mb61_reads_as_megatron_lm_builds_it():
    run = read(MB61)
    assert (run.model["L"], run.model["mtp"], run.model["mtp_repeated"]) == (14, 2, True)
    assert run.training["srelu_fusion"] is True
