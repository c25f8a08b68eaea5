"""Profile `jax` (pure sympy): structure, byte widths from the jax dtypes, and the CLI paths that take --profile jax.

Sources of truth: jaxcheck's implementation as described in symbolic/profiles/jax.py (hand-computed byte counts for a
small shape below), and the estimator's contract that lambdified numbers equal the sympy expressions (exact).
"""
import dataclasses
import subprocess
import sys

import pytest
import sympy as sp

from symbolic.config.dtypes import jax_widths
from symbolic.config.glossary import inputs_for
from symbolic.config.shapes import ModelShape
from symbolic.config.switches import Switches
from symbolic.config.symbols import BY_NAME
from symbolic.config.training import RECOMPUTE, Training
from symbolic.estimator.estimate import estimate
from symbolic.profiles import jax as prof

SHAPE = ModelShape("t", h=48, f=112, a=6, k=2, L=4, v=144)


def _training(**kw) -> Training:
    return dataclasses.replace(Training(**kw), **jax_widths())


def test_byte_widths_follow_dtypes():
    """fp32 params -> 4 bytes weights and gradients, Adam mu + nu 8; bf16 compute -> 2."""
    assert jax_widths() == {"weight_bytes": 4, "grad_bytes": 4, "opt_bytes": 8, "act_bytes": 2}
    assert jax_widths("bfloat16", "float32") == {"weight_bytes": 2, "grad_bytes": 2, "opt_bytes": 4, "act_bytes": 4}


@pytest.mark.parametrize("recompute", RECOMPUTE)
def test_every_component_is_documented_grouped_and_stage_independent(recompute):
    sw = Switches(recompute=recompute, overheads=False)
    parts = prof.components(sw)
    assert all(part.doc and "\n" not in part.doc for part in parts)
    assert {prof.group_of(part.name) for part in parts} == {"argument", "output", "temp"}
    assert [p.name for p in prof.stage_components(sw, "first")] == [p.name for p in parts]
    assert all(part.doc for part in prof.layer_tensors(sw))


def test_params_and_arguments_by_hand():
    """d=t=p=c=1, s=64, b=1, m=1: params = 4 bytes x param_count (one device holds everything), Adam 8 x + 4,
    batch 2 x 4 x s; the loss and 38-entry output tuple table are 4 + 8*38 bytes (hand count of jaxcheck's outputs)."""
    tr = _training(s=64, b=1, gbs=1, zero=0)
    est = estimate(SHAPE, tr, "jax", overheads=False).bytes
    assert est["params"] == 4 * SHAPE.param_count
    assert est["adam_moments"] == 8 * SHAPE.param_count and est["adam_count"] == 4
    assert est["batch"] == 2 * 4 * 64
    assert est["loss_and_tuple"] == 4 + 8 * 38


def test_zero1_divides_moments_by_d_c():
    base = estimate(SHAPE, _training(d=2, c=2, s=64, gbs=2, zero=0), "jax", overheads=False).bytes
    zero = estimate(SHAPE, _training(d=2, c=2, s=64, gbs=2, zero=1), "jax", overheads=False).bytes
    assert zero["adam_moments"] * 4 == base["adam_moments"]
    assert zero["params"] == base["params"] and zero["layer_grads"] == base["layer_grads"]


@pytest.mark.parametrize("recompute", RECOMPUTE)
def test_lambdified_equals_sympy(recompute):
    """The cached numpy estimator gives the sympy expressions' values (rounded to bytes)."""
    tr = _training(d=2, t=2, p=2, c=2, s=128, gbs=8, recompute=recompute)
    est = estimate(SHAPE, tr, "jax", overheads=False).bytes
    subs = {BY_NAME[name]: value for name, value in inputs_for(SHAPE, tr).items()}
    for part in prof.components(Switches(recompute=recompute, zero=1, overheads=False)):
        assert est[part.name] == int(round(float(sp.sympify(part.expr).xreplace(subs)))), part.name


@pytest.mark.parametrize("cmd", [["formula", "--profile", "jax", "--recompute", "full"],
                                 ["estimate", "--profile", "jax", "--model", "tiny", "--seq", "256"],
                                 ["latex", "--profile", "jax", "--model", "tiny", "--seq", "256"]])
def test_cli_takes_profile_jax(cmd):
    proc = subprocess.run([sys.executable, "-m", "symbolic.cli", *cmd], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "activations_at_peak" in proc.stdout or "activations" in proc.stdout


def test_peak_is_the_largest_live_set_unfused():
    """Unfused attention (flash_attn off), XLA's temp holds the maximum over program points: one scan iteration -> no
    pipeline loop (XLA removes a trip-count-1 loop); entering the backward layer scan, remat none holds the bf16 stacks
    plus an fp32 copy of the probabilities stack (XLA:CPU buffer assignment, tiny d1 t2 c4 s2048), which outweighs the
    end of forward when L/p > 1; several -> remat none's fp32 copies of the stacks plus one iteration's slice outweigh
    the bf16 stacks, so the backward set is the peak (exact sympy identities, no tolerance)."""
    from symbolic.config.symbols import B_a, B_g, L, a, b, c, f, h, k, m, p, s, t, v

    sw = Switches(recompute="none", flash_attn=False, overheads=False)
    shape = {B_a: 2, B_g: 4, L: 4, a: 6, b: 1, c: 1, f: 112, h: 48, k: 2, s: 64, t: 1, v: 144}
    peak = next(x.expr for x in prof.components(sw) if x.name == "activations_at_peak")
    one = {**shape, m: 1, p: 1}
    from symbolic.components.jaxstep import held, scores
    stacks_and_probs32 = (L * (sum(x.expr for x in held(sw, B_a)) + scores(4)) + prof._layer_grads()
                          + prof._head_update(sw))
    assert prof.backward_set(sw).subs(one) == stacks_and_probs32.subs(one)
    for at in (one, {**shape, m: 4, p: 2}):
        assert peak.subs(at) == prof.backward_set(sw).subs(at) > max(prof.forward_set(sw).subs(at),
                                                                     prof.loss_set(sw).subs(at))
    names = [x.name for x in prof.layer_tensors(sw)]
    assert "scores_exp" in names  # jax saves it; XLA's stacks do not hold it
    assert [x.name for x in held(sw, 4)] == [n for n in names if n != "scores_exp"]


@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
def test_flash_sets_have_no_s_squared_term_and_stacks_are_fp32(recompute):
    """Flash attention (the default): no live set grows with s^2 once s exceeds the key block (the score blocks are
    [s/c, FLASH_BLOCK]); the backward set holds the residual stacks in fp32 (XLA:CPU converts them) and, with one
    iteration, only that iteration's slice; with several, also the third fp32 buffer per stacked weight and the fp32
    cotangent of the stage outputs (exact sympy identities)."""
    from symbolic.components.jaxstep import held, tokens
    from symbolic.config.step import FLASH_BLOCK
    from symbolic.config.symbols import L, h, m, p, s

    sw = Switches(recompute=recompute, overheads=False)
    assert "scores" not in [x.name for x in prof.layer_tensors(sw)]
    for live in (prof.forward_set(sw), prof.loss_set(sw), prof.backward_set(sw)):
        long = live.subs({m: 3, p: 2}).replace(lambda e: isinstance(e, sp.Min), lambda e: sp.Integer(FLASH_BLOCK))
        assert sp.degree(sp.expand(long), s) == 1, live  # s >= FLASH_BLOCK: Min(s, FLASH_BLOCK) = FLASH_BLOCK
    iteration = (L / p) * sum(x.expr for x in held(sw, 4, gathered_kv=True))
    attention = prof._attention_backward(sw) + prof._head_update(sw)
    assert sp.simplify(prof.backward_set(sw).subs({m: 1, p: 1}) - (iteration + attention).subs(p, 1)) == 0
    several = 5 * iteration + attention + prof._layer_grads() + 4 * tokens(h, 4, sw.sp)  # 4 iterations + slice
    assert sp.simplify(prof.backward_set(sw).subs({m: 3, p: 2}) - several.subs(p, 2)) == 0
