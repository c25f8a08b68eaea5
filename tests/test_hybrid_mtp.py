"""A hybrid pattern's multi-token-prediction depths after '/' and --mtp-use-repeated-layer, as Megatron-LM reads and
builds them.

Source of truth: Megatron-LM d98e8a64 (megatron-core 0.16.1 has neither) models/hybrid/hybrid_layer_allocation.py
parse_hybrid_pattern ("<main>/<mtp>/<mtp>": one depth per pattern after a '/'), training/arguments.py (the pattern's
depth count overrides --mtp-num-layers), transformer/multi_token_prediction.py MultiTokenPredictionBlock
(_build_layers builds one layer under mtp_use_repeated_layer, forward runs self.layers[0] at every depth).
Hand counts on a tiny shape; exact."""

from dataclasses import replace
from pathlib import Path

import pytest
import sympy as sp

from symbolic.components.mtp import mtp_activations, mtp_moe_layers, mtp_params
from symbolic.config.errors import ConfigError
from symbolic.config.rules import letters
from symbolic.config.shapes import PRESETS, ModelShape
from symbolic.config.switches import Switches
from symbolic.config.symbols import m, n_mtp
from symbolic.config.training import Training
from symbolic.readers.megatron import read
from symbolic.recipes.registry import select

ARGS = (
    "--hybrid-layer-pattern ME*E/*E/*E --mamba-num-heads 4 --mamba-head-dim 16 --mamba-state-dim 8 "
    "--mamba-num-groups 2 --hidden-size 64 --num-attention-heads 4 --group-query-attention --num-query-groups 2 "
    "--vocab-size 128 --seq-length 64 --bf16 --micro-batch-size 1 --position-embedding-type none "
    "--normalization RMSNorm --squared-relu --num-experts 4 --moe-router-topk 2 --moe-ffn-hidden-size 48 "
    "--disable-bias-linear --mtp-num-layers 2\n"
)
# one module (h 64, dh 16, k 2, E 4, f_e 48, RMSNorm): enorm, hnorm, final norm 3 h; eh_proj 2 h h; attention q, o
# h a dh each and k, v h k dh each, its norm h; the router h E, 4 squared-ReLU experts 2 h f_e each, the MoE norm h
MODULE = 3 * 64 + 2 * 64 * 64 + (2 * 64 * 64 + 2 * 64 * 32 + 64) + (64 * 4 + 4 * 2 * 64 * 48 + 64)
MB61 = (
    Path(__file__).resolve().parents[1].parent
    / "shared"
    / "data"
    / "measured"
    / "megatron"
    / "nemotron__nemotron3_5_lightning_no_load_optim_tp1_pp1_cp1_ep4_dgx_gb200_1N4G.model_config.yaml"
)


def _shape(path: Path, extra: str = "") -> ModelShape:
    path.write_text(ARGS + extra)
    return ModelShape(**read(path).model)


def test_a_repeated_module_holds_one_modules_weights_and_every_depths_tensors(tmp_path):
    own, one = _shape(tmp_path / "own.txt"), _shape(tmp_path / "one.txt", "--mtp-use-repeated-layer\n")
    assert (own.mtp, one.mtp, own.mtp_modules, one.mtp_modules) == (2, 2, 2, 1)
    assert own.param_count - one.param_count == MODULE == 45632  # one module, counted by hand above
    assert own.mtp_count == MODULE  # what the two-part layer counts for one module
    sw_own, sw_one = Switches.of(Training(), shape=own), Switches.of(Training(), shape=one)
    assert (sw_own.mtp_repeated, sw_one.mtp_repeated) == (False, True)
    # the states the last stage holds: n_mtp modules' or one; its MoE layers' experts likewise
    assert sp.simplify(mtp_params(sw_own) - n_mtp * mtp_params(sw_one)) == 0
    assert (mtp_moe_layers(sw_own), mtp_moe_layers(sw_one)) == (n_mtp, 1)
    # the tensors: every depth's, repeated or not (autograd keeps each call's)
    assert sp.simplify(mtp_activations(m, sw_own).expr - mtp_activations(m, sw_one).expr) == 0


@pytest.mark.parametrize(
    "pattern, flags, says",
    [
        ("ME*E/M*/M*", "", "depths of an attention and an MoE block ('/*E' each) are modelled, got '/M*/M*'"),
        ("ME*E/*E/*", "", "got '/*E/*'"),
        ("ME*E/*E/*E", " --mtp-num-layers 3", "contradicts the hybrid pattern's 2 multi-token-prediction depths"),
    ],
)
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


def test_a_pattern_without_mamba_blocks_reads_no_mamba_sizes(tmp_path):
    """A hybrid pattern of attention, MLP and MoE blocks alone (no 'M'): Megatron-Core builds no Mamba mixer
    (hybrid_layer_allocation.py: one block per character), so the --mamba-* sizes describe nothing and the model is
    read (it was refused as 'ssm_heads ... describe Mamba-2 layers, but the model has none'). Exact."""
    path = tmp_path / "no_m.txt"
    path.write_text(ARGS.replace("ME*E/*E/*E", "*-*E").replace(" --mtp-num-layers 2", ""))
    shape = ModelShape(**read(path).model)
    assert (shape.mamba_layers, shape.mamba, shape.ssm_heads) == ((), 0, 0)
    assert (shape.mlpless_layers, shape.mixerless_layers, shape.L) == ((0, 2), (1, 3), 4)
