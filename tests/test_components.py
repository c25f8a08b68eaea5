"""Component structure: names, one-line docs, which divisor each tensor gets, stage parameters vs the real model.

Sources of truth: DESIGN.md's per-layer tensor list, Korthikanti et al. 2022 for the SP/TP regions, and
ModelShape.param_count (checked against published counts) for the stage parameters. Tolerance: exact.
"""

import itertools

import pytest
import sympy as sp

from symbolic.components import layer_tensors, stage_params
from symbolic.config.errors import ConfigError
from symbolic.config.shapes import PRESETS
from symbolic.config.switches import Switches
from symbolic.config.symbols import L, a, c, dh, f, h, k, p, t, v
from symbolic.config.parallel import ZERO_STAGES
from symbolic.config.training_checks import RECOMPUTE
from symbolic.config.stages import STAGES
from symbolic.recipes import PROFILES, load

LLAMA_TENSORS = "norm1_input qkv_input q k v attn_out norm2_input mlp_input gate up swiglu down_input".split()
SWITCH_VALUES = {
    "recompute": RECOMPUTE,
    "flash_attn": (True, False),
    "sp": (True, False),
    "zero": ZERO_STAGES,
    "overheads": (True, False),
}


def pairwise(values: dict) -> list[dict]:
    """Switch sets in which every value of every switch meets every value of every other at least once (greedy: of
    the full product, the set covering the most uncovered pairs, until none is left); 12 of the 96 here."""
    names = list(values)
    pairs = lambda x: {(i, x[a], j, x[b]) for i, a in enumerate(names) for j, b in enumerate(names) if i < j}  # noqa: E731
    product = [dict(zip(names, combo)) for combo in itertools.product(*values.values())]
    left, chosen = set().union(*(pairs(x) for x in product)), []
    while left:
        best = max(product, key=lambda x: len(pairs(x) & left))
        chosen.append(best)
        left -= pairs(best)
    return chosen


COVERING_SWITCHES = [Switches(**x) for x in pairwise(SWITCH_VALUES)]


@pytest.mark.parametrize("zero", ZERO_STAGES)
@pytest.mark.parametrize("profile", list(PROFILES))
def test_every_component_has_a_one_line_doc(profile, zero):
    """Every component of switch sets covering every pair of switch values (pairwise: a component that two
    switches bring in is built: the same names and docs as the full product of 96, which took 31 worker-seconds,
    checked 2026-12-04), one ZeRO stage per test."""
    module = load(profile)
    for sw in (sw for sw in COVERING_SWITCHES if sw.zero == zero):
        parts = module.components(sw) + module.layer_tensors(sw)
        parts += [x for stage in STAGES for x in module.stage_components(sw, stage)]
        for part in parts:
            assert part.doc.strip() and "\n" not in part.doc, part.name
            assert isinstance(part.expr, sp.Expr), part.name


def test_llama_layer_names_its_tensors_one_by_one():
    assert [x.name for x in layer_tensors(Switches())] == LLAMA_TENSORS
    assert [x.name for x in layer_tensors(Switches(flash_attn=False))] == LLAMA_TENSORS[:6] + [
        "softmax"
    ] + LLAMA_TENSORS[6:]
    assert [x.name for x in layer_tensors(Switches(recompute="full"))] == ["layer_input"]


def test_sequence_parallel_decides_the_divisor_outside_tp_regions():
    """Norm and MLP inputs: /t only with SP; Q, K, V, attention output, MLP intermediates: always /t; all /c."""
    for sp_on in (True, False):
        parts = {x.name: x.expr for x in layer_tensors(Switches(sp=sp_on, flash_attn=False))}
        for name, expr in parts.items():
            tp_region = name not in ("norm1_input", "qkv_input", "norm2_input", "mlp_input")
            assert sp.degree(sp.denom(sp.together(expr)), t) == (1 if tp_region or sp_on else 0), name
            assert sp.degree(sp.denom(sp.together(expr)), c) == 1, name


def test_overheads_switch_adds_the_named_buffers():
    names = lambda sw: [x.name for x in load("paper").components(sw)]  # noqa: E731
    base = ["weights", "gradients", "optimizer", "activations", "embedding_input", "output_layer"]
    assert names(Switches(overheads=False)) == base
    assert names(Switches()) == base + ["communicators", "cuda_context", "cublas_workspaces", "fragmentation"]
    assert "dist_opt_allgather" in names(Switches(zero=2))  # Megatron-LM FSDP's bucket, assumed


def test_distributed_optimizer_shards_over_d_times_c():
    opt = {
        sw.zero: x.expr
        for sw in (Switches(), Switches(zero=0))
        for x in load("paper").components(sw)
        if x.name == "optimizer"
    }
    d = sp.Symbol("d", positive=True)
    assert sp.simplify(opt[1] * d * c - opt[0]) == 0


@pytest.mark.parametrize("name", ["tiny", "llama2-7b", "llama3-8b", "llama3-70b"])
def test_stage_parameters_add_up_to_the_model(name):
    """first + (p-2) middle + last stages at t = 1 hold exactly ModelShape.param_count (untied presets, dh = h/a)."""
    shape = PRESETS[name]
    values = {h: shape.h, f: shape.f, a: shape.a, k: shape.k, L: shape.L, v: shape.v, dh: shape.dh, t: 1}
    for p_value in (2, 4):
        per_stage = {st: stage_params(st).subs(values).subs(p, p_value) for st in STAGES}
        assert per_stage["first"] + (p_value - 2) * per_stage["middle"] + per_stage["last"] == shape.param_count
    assert stage_params("only").subs(values) == shape.param_count


def test_unknown_recompute_is_a_config_error():
    with pytest.raises(ConfigError):
        Switches(recompute="some")
