"""Profile `paper` against the published closed form of Fujii, Watanabe, Yokota 2024 (arXiv 2411.06465).

Source of truth: the formula printed in the paper (and DESIGN.md), whose heads are h/a wide: the profile's head
width dh is set to h/a before comparing. Tolerance: exact (sympy simplify(diff) == 0), or 0.5 byte where a float64
estimate is rounded to an integer.
"""

import json
import subprocess
import sys

import sympy as sp

from symbolic.components import in_flight, layer_activation, total
from symbolic.config.glossary import inputs_for
from symbolic.config.shapes import PRESETS
from symbolic.config.switches import Switches
from symbolic.config.symbols import B_a, B_g, B_l, B_o, B_w, L, a, b, c, d, dh, f, h, k, m, p, s, t, v, vpp
from symbolic.config.training import Training
from symbolic.estimator.estimate import estimate
from symbolic.recipes.megatron import profile as paper

PUBLISHED = (6 + 12 / (d * c)) * (
    h * v / t + (2 * L / p) * h**2 * ((1 + k / a + sp.Rational(3, 2) * f / h) / t + 1 / h)
) + (s * b * h / (t * c)) * ((12 + 4 * k / a + 8 * f / h) * L + 8 * p + 4 * (1 + v / h))
DEFAULT_BYTES = {B_w: 2, B_g: 4, B_o: 12, B_a: 2, B_l: 4, dh: h / a}  # and the paper's head width


def paper_total(sw: Switches = Switches(overheads=False)) -> sp.Expr:
    return total(paper.components(sw))


def _pipelined(expr: sp.Expr) -> sp.Expr:
    """`expr` at p = 1 + r, r > 0: a pipeline (the published form's first stage holds no head)."""
    return expr.subs(p, 1 + sp.Symbol("r", positive=True))


def test_total_equals_published_formula_when_m_ge_p():
    """Defaults (dist opt, flash, SP, no recompute, 1F1B, no overheads), p > 1, m = p + q with q > 0: identical."""
    q = sp.Symbol("q", positive=True)
    for m_value in (p, p + q):
        diff = paper_total().subs(DEFAULT_BYTES).subs({vpp: 1, m: m_value}) - PUBLISHED
        assert sp.simplify(_pipelined(diff)) == 0


def test_at_p_1_the_head_is_counted_where_the_published_form_omits_it():
    """p = 1: the one stage holds the final norm and the LM head, h + h v / t parameters, that the published form
    (its first stage) leaves out; they cost B_w + B_g + B_o / (d c) bytes each (exact)."""
    diff = (paper_total().subs(DEFAULT_BYTES).subs({vpp: 1, m: 1}) - PUBLISHED).subs(p, 1)
    assert sp.simplify(diff - (2 + 4 + 12 / (d * c)) * (h + h * v / t)) == 0


def test_components_read_as_in_the_paper():
    """Each term of the published formula is one named component (exact)."""
    parts = {
        part.name: part.expr.subs(DEFAULT_BYTES).subs({vpp: 1, m: p})
        for part in paper.components(Switches(overheads=False))
    }
    params = h * v / t + (2 * L / p) * h**2 * ((1 + k / a + sp.Rational(3, 2) * f / h) / t + 1 / h)
    expected = {
        "weights": 2 * params,
        "gradients": 4 * params,
        "optimizer": 12 * params / (d * c),
        "activations": s * b * h / (t * c) * (12 + 4 * k / a + 8 * f / h) * L,
        "embedding_input": s * b * h / (t * c) * 8 * p,
        "output_layer": s * b * h / (t * c) * 4 * (1 + v / h),
    }
    assert set(parts) == set(expected)
    for name, expr in expected.items():
        assert sp.simplify(_pipelined(parts[name] - expr)) == 0, name


def test_per_layer_activation_is_the_papers():
    """Flash + SP, bf16: s*b*h*(12 + 4k/a + 8f/h)/(t*c) per layer per micro batch (exact)."""
    diff = layer_activation(Switches()).subs({B_a: 2, dh: h / a}) - s * b * h * (12 + 4 * k / a + 8 * f / h) / (t * c)
    assert sp.simplify(diff) == 0


def test_exact_stages_place_tensors_where_megatron_allocates_them():
    """First stage: 8*s*b int64 ids per in-flight micro batch, no output layer; last: one micro batch + output layer."""
    sw = Switches(overheads=False)
    first = {x.name: x.expr for x in paper.stage_components(sw, "first")}
    last = {x.name: x.expr for x in paper.stage_components(sw, "last")}
    middle = {x.name: x.expr for x in paper.stage_components(sw, "middle")}
    assert sp.simplify(first["embedding_input"] - 8 * s * b * in_flight(0) / c) == 0
    assert first["output_layer"] == 0 and last["embedding_input"] == 0 and middle["output_layer"] == 0
    assert sp.simplify(last["output_layer"].subs({B_a: 2, B_l: 4}) - 4 * s * b * h * (1 + v / h) / (t * c)) == 0
    one_f_one_b = {vpp: 1, m: 1 + sp.Symbol("q", positive=True)}  # m >= 1 micro batch
    assert sp.simplify((last["activations"] - (L / p) * layer_activation(sw)).subs(one_f_one_b)) == 0
    assert sp.simplify((middle["activations"] - sp.Min(m, p - 1) * (L / p) * layer_activation(sw)).subs(vpp, 1)) == 0


def test_estimate_total_equals_formula_for_llama3_70b():
    """The done-when configuration: estimate's integer total vs the published formula in exact rationals (<= 0.5 byte)."""
    shape = PRESETS["llama3-70b"]
    training = Training(d=8, t=8, p=4, c=2, s=8192, b=1, gbs=1024)
    values = {sp.Symbol(n, positive=True): sp.Integer(x) for n, x in inputs_for(shape, training).items()}
    exact = PUBLISHED.xreplace(values)
    result = estimate(shape, training, overheads=False)
    assert abs(result.bytes["total"] - exact) <= sp.Rational(1, 2)


def test_cli_json_total_is_the_formula():
    """`mem4d estimate --profile paper --no-overheads --json`: "total" equals the formula (<= 0.5 byte, rounding)."""
    cmd = [
        sys.executable,
        "-m",
        "symbolic.cli",
        "estimate",
        "--model",
        "llama2-13b",
        "--dp",
        "4",
        "--tp",
        "4",
        "--pp",
        "2",
        "--cp",
        "2",
        "--seq",
        "8192",
        "--mbs",
        "2",
        "--gbs",
        "64",
        "--profile",
        "paper",
        "--no-overheads",
        "--json",
    ]
    out = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    shape = PRESETS["llama2-13b"]
    values = {
        sp.Symbol(n, positive=True): sp.Integer(x)
        for n, x in inputs_for(shape, Training(d=4, t=4, p=2, c=2, s=8192, b=2, gbs=64)).items()
    }
    assert abs(out["bytes"]["total"] - PUBLISHED.xreplace(values)) <= sp.Rational(1, 2)
