"""The lambdified estimator against sympy substitution, broadcasting, totals, monotonicity, and the disk cache.

Sources of truth: the profile's sympy expressions evaluated in exact rationals; tolerance 1e-12 relative
(float64 evaluation of the same expressions). Sums and monotonicity are exact on the integer estimates.
"""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symbolic.components import total
from symbolic.config.errors import ConfigError
from symbolic.config.glossary import inputs_for
from symbolic.config.shapes import PRESETS
from symbolic.config.switches import Switches
from symbolic.config.symbols import BY_NAME
from symbolic.config.training import Training
from symbolic.config.stages import STAGES
from symbolic.estimator.estimate import estimate
from symbolic.estimator.vectorized import estimator
from estimator_cases import SWITCHES, configs
from symbolic.recipes import load


ROOT = Path(__file__).resolve().parent.parent


def est_for(sw: Switches):
    return estimator("paper", sw)


def exact(expr: sp.Expr, values: dict) -> float:
    return float(expr.xreplace({BY_NAME[n]: sp.Rational(x) for n, x in values.items()}))


@settings(max_examples=25, deadline=None)
@given(values=configs, which=st.integers(0, len(SWITCHES) - 1))
def test_lambdified_equals_sympy(values, which):
    """Every output, main and per stage, equals exact sympy substitution to 1e-12 relative."""
    sw = SWITCHES[which]
    module = load("paper")
    parts = module.components(sw)
    reference = {x.name: x.expr for x in parts} | {"total": total(parts)}
    for stage in STAGES:
        stage_parts = module.stage_components(sw, stage)
        reference |= {f"{stage}.{x.name}": x.expr for x in stage_parts} | {f"{stage}.total": total(stage_parts)}
    est = est_for(sw)
    got = est(**values) | est.stages(**values)
    assert set(got) == set(reference)
    for name, expr in reference.items():
        assert got[name] == pytest.approx(exact(expr, values), rel=1e-12, abs=0), name


@pytest.mark.parametrize("profile, which", [("paper", 9), ("jax", 8)])
def test_generated_source_is_lambdifys(profile, which):
    """codegen writes each function with lambdify's own function printer, without lambdify's argument sorting and
    exec: the source is the string sympy.lambdify (with the same printer and CSE) gives, for the main function and
    a stage's (its extra letters). Source of truth: sympy.lambdify and inspect.getsource; exact."""
    from symbolic.config.glossary import STAGE_NAMES
    from symbolic.estimator import codegen

    spec = importlib.util.spec_from_file_location("bench_codegen", ROOT / "benchmarks" / "bench_codegen.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    sw, module = SWITCHES[which], load(profile)
    for exprs, extra in (
        ([x.expr for x in module.components(sw)], ()),
        ([x.expr for x in module.stage_components(sw, "first")], STAGE_NAMES),
    ):
        assert codegen._lambdify_source(exprs, "_f", extra) == bench.through_lambdify(exprs, "_f", extra)


def test_printed_and_or_max_min_broadcast_a_scalar_beside_an_array():
    """And, Or, Max and Min of an array (a plan row's Le_r) and a scalar (a term its switches fixed) evaluate
    elementwise: sympy's own NumPyPrinter stacks the arguments (logical_and.reduce((a, b)), amax((a, b))) and raised
    "inhomogeneous shape" in `plan --megatron` on a Muon file (MB-53 without --no-gradient-accumulation-fusion).
    Source of truth: the same expressions evaluated per element in Python; exact."""
    from symbolic.estimator import codegen

    x, y = sp.symbols("x y")
    exprs = [
        sp.And(x > 0, y > 1, evaluate=False),
        sp.Or(x > 2, y > 1, evaluate=False),
        sp.Max(x, y, evaluate=False),
        sp.Min(x, y, evaluate=False),
    ]
    source = codegen._printer_class()(codegen.PRINTER)
    fn = sp.lambdify([x, y], exprs, modules="numpy", printer=source)
    xs = np.array([-1.0, 1.0, 3.0])
    got = fn(xs, 2.0)
    want = [[bool(e.subs({x: v, y: 2})) if e.is_Boolean else float(e.subs({x: v, y: 2})) for v in xs] for e in exprs]
    assert [list(np.broadcast_to(g, xs.shape)) for g in got] == want


def test_named_arrays_broadcast_and_constants_too():
    est = estimator("paper")
    values = inputs_for(PRESETS["llama3-8b"], Training()) | {
        "t": np.array([[1], [2], [4]]),
        "d": np.array([1, 2, 4, 8]),
    }
    out = est(**values)
    assert list(out) == list(est.components) and est.components[-1] == "total"
    for name, array in out.items():
        assert array.shape == (3, 4) and array.dtype == np.float64, name
    assert np.all(out["cuda_context"] == out["cuda_context"][0, 0])
    scalar = est(**inputs_for(PRESETS["llama3-8b"], Training()))
    assert all(x.shape == () for x in scalar.values())


def test_unknown_or_missing_inputs_are_config_errors():
    est = estimator("paper")
    values = inputs_for(PRESETS["tiny"], Training())
    with pytest.raises(ConfigError, match="unknown"):
        est(**values, z=1)
    with pytest.raises(ConfigError, match="missing"):
        est(**{n: x for n, x in values.items() if n != "h"})
    with pytest.raises(ConfigError, match="profile"):
        estimator("nope")


@pytest.mark.parametrize(
    "training",
    [
        Training(),
        Training(d=2, t=4, p=4, c=2, gbs=64, s=4096),
        Training(t=2, p=2, vpp=2, gbs=8, recompute="full", flash_attn=False),
    ],
)
def test_totals_are_sums_of_components(training):
    """Exact on integers: bytes["total"] and every stage total are the sums of their parts."""
    result = estimate(PRESETS["tiny"], training)
    assert result.bytes["total"] == sum(x for n, x in result.bytes.items() if n != "total")
    for stage in result.stages:
        assert stage["bytes"]["total"] == sum(x for n, x in stage["bytes"].items() if n != "total")
    vec = estimator("paper")(**inputs_for(PRESETS["tiny"], Training()))
    assert vec["total"] == pytest.approx(sum(vec[n] for n in vec if n != "total"), rel=1e-12)


@pytest.mark.parametrize("sw", SWITCHES)
def test_weights_and_optimizer_never_grow_with_t_p_c(sw):
    """Per GPU, for the paper total and each stage: doubling t, p or c never increases weights or optimizer bytes."""
    rng = np.random.default_rng(0)
    n = 2000
    values = {
        "s": 8192,
        "b": rng.integers(1, 8, n),
        "h": rng.choice([2048, 4096, 8192], n),
        "f": rng.integers(1000, 60000, n),
        "a": 64,
        "k": rng.choice([1, 8, 64], n),
        "L": rng.integers(1, 128, n),
        "v": rng.integers(1000, 260000, n),
        "d": rng.integers(1, 64, n),
        "t": rng.choice([1, 2, 4], n),
        "p": rng.choice([3, 4, 8], n),
        "c": rng.choice([1, 2, 4], n),
        "m": rng.integers(1, 64, n),
        "vpp": rng.integers(1, 3, n),
        "B_w": 2,
        "B_g": 4,
        "B_o": 12,
        "B_a": 2,
        "B_l": 4,
        "B_q": 1,
        "B_c": 2,
    }
    layers = values["L"]
    values |= {
        "dh": 128,
        "s_p": 0,
        "n_ac": 1,
        "E": 8,
        "k_e": 2,
        "f_e": rng.integers(1000, 20000, n),
        "f_s": 0,
        "L_e": layers,
        "C_f": 1.0,
        "d_l": 0,
        "q_r": 1536,
        "kv_r": 512,
        "d_r": 64,
        "d_v": 128,
        "n_mtp": 1,
        "n_i": 64,
        "d_i": 128,
        "k_i": 2048,
        "L_g": layers * 3 // 4,
        "n_gk": 16,
        "n_gv": 32,
        "d_gk": 128,
        "d_gv": 128,
        "K_c": 4,
        "L_m": layers // 2,
        "L_o": layers // 2,
        "L_n": layers - layers // 2,
        "n_m": 128,
        "d_m": 64,
        "d_s": 128,
        "g_m": 8,
        "P_v": 595_266_800,
        "A_v": 2_004_864,
        "n_v": 1024,
        "L_w": layers // 2,
        "k_w": 8,
        "e": rng.choice([1, 2, 8], n),
        "t_e": 1,
    }
    est = est_for(sw)
    base = est(**values) | est.stages(**values)
    for letter in ("t", "p", "c"):
        grown = est(**(values | {letter: values[letter] * 2}))
        grown |= est.stages(**(values | {letter: values[letter] * 2}))
        for name in base:
            if name.split(".")[-1] in ("weights", "optimizer", "expert_weights", "expert_optimizer"):
                assert np.all(grown[name] <= base[name] * (1 + 1e-12)), (letter, name)


def test_as_json_schema_and_fit_rule():
    result = estimate(PRESETS["llama3-70b"], Training(d=8, t=8, p=4, c=2, s=8192, b=1, gbs=1024))
    report = result.as_json(80 * 2**30, 0.8)
    assert {"profile", "model", "param_count", "config", "bytes", "stages", "gpu_mem_bytes", "fits"} <= set(report)
    assert [s["stage"] for s in report["stages"]] == ["first", "middle", "last"]
    assert report["fits"] is (report["bytes"]["total"] < 0.8 * 80 * 2**30)
    assert result.as_json(report["bytes"]["total"], 1.0)["fits"] is False


def test_overrides_replace_a_component():
    plain = estimate(PRESETS["tiny"], Training(d=2))
    changed = estimate(PRESETS["tiny"], Training(d=2), overrides={"cuda_context": 2**29})
    assert changed.bytes["cuda_context"] == 2**29
    assert changed.bytes["total"] - plain.bytes["total"] == 2**29 - plain.bytes["cuda_context"]
    with pytest.raises(ConfigError, match="cannot override"):
        estimate(PRESETS["tiny"], Training(), overrides={"nope": 1})


def test_cached_estimate_never_imports_sympy_or_jax(tmp_path):
    """Second process with a warm cache: estimate runs without sympy (the < 1 s start of `mem4d estimate`)."""
    code = (
        "import sys; from symbolic.estimator.estimate import estimate; from symbolic.config.shapes import PRESETS; "
        "from symbolic.config.training import Training; estimate(PRESETS['tiny'], Training()); "
        "print('sympy' in sys.modules, 'jax' in sys.modules)"
    )
    env = os.environ | {"MEM4D_CACHE_DIR": str(tmp_path), "MEM4D_NO_SHIPPED": "1"}  # a derivation, not the release's
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    second = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert first.stdout.split() == ["True", "False"]
    assert second.stdout.split() == ["False", "False"]
    assert len(list(tmp_path.glob("paper-*.json"))) == 1
