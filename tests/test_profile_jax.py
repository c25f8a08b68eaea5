"""Profile `jax` (pure sympy): the buffer table's structure, byte widths from the jax dtypes, and the CLI paths that
take --profile jax.

Sources of truth: jaxcheck's implementation as described in symbolic/recipes/jax/profile.py (hand-computed byte counts for a
small shape below), sympy identities of the table (exact), and the estimator's contract that lambdified numbers equal
the sympy expressions (exact).
"""

import dataclasses
import subprocess
import sys

import pytest
import sympy as sp

from symbolic.recipes.jax.step import jax_widths
from symbolic.config.glossary import inputs_for
from symbolic.config.shapes import ModelShape
from symbolic.config.switches import Switches
from symbolic.config.symbols import BY_NAME
from symbolic.config.training import Training
from symbolic.config.training_checks import RECOMPUTE
from symbolic.estimator.estimate import estimate
from symbolic.recipes.jax import profile as prof

SHAPE = ModelShape("t", h=48, f=112, a=6, k=2, L=4, v=144)


def _training(**kw) -> Training:
    return dataclasses.replace(Training(**kw), **jax_widths())


def _widths(training: Training) -> dict:
    return {name: getattr(training, name) for name in ("weight_bytes", "grad_bytes", "opt_bytes", "act_bytes")}


def test_byte_widths_follow_dtypes():
    """fp32 params -> 4 bytes weights and gradients, Adam mu + nu 8; bf16 compute -> 2."""
    assert _widths(Training(**jax_widths())) == {"weight_bytes": 4, "grad_bytes": 4, "opt_bytes": 8, "act_bytes": 2}
    assert _widths(Training(**jax_widths("bfloat16", "float32"))) == {
        "weight_bytes": 2,
        "grad_bytes": 2,
        "opt_bytes": 4,
        "act_bytes": 4,
    }


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
    assert zero["params"] == base["params"] and zero["block_grads"] == base["block_grads"]


@pytest.mark.parametrize("recompute", RECOMPUTE)
def test_lambdified_equals_sympy(recompute):
    """The cached numpy estimator gives the sympy expressions' values (rounded to bytes)."""
    tr = _training(d=2, t=2, p=2, c=2, s=128, gbs=8, recompute=recompute)
    est = estimate(SHAPE, tr, "jax", overheads=False).bytes
    subs = {BY_NAME[name]: value for name, value in inputs_for(SHAPE, tr).items()}
    for part in prof.components(Switches(recompute=recompute, zero=1, overheads=False)):
        assert est[part.name] == int(round(float(sp.sympify(part.expr).xreplace(subs)))), part.name


@pytest.mark.parametrize(
    "cmd",
    [
        ["formula", "--profile", "jax", "--recompute", "full"],
        ["formula", "--profile", "jax", "--backend", "cpu"],
        ["estimate", "--profile", "jax", "--model", "tiny", "--seq", "256"],
        ["latex", "--profile", "jax", "--model", "tiny", "--seq", "256"],
    ],
)
def test_cli_takes_profile_jax(cmd):
    proc = subprocess.run([sys.executable, "-m", "symbolic.cli", *cmd], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout.replace("\\_", "_")  # the LaTeX report escapes underscores
    assert "block_grads" in text and "residual_stacks" in text


def test_tied_arguments_and_outputs_by_hand():
    """A tied model holds no LM head leaf: params 4 x param_count (which counts the matrix once), 11 leaves in the
    output tuple (3 x 11 + 2 pointers)."""
    tied = ModelShape("tied", h=48, f=112, a=6, k=2, L=4, v=144, tied=True)
    est = estimate(tied, _training(s=64, b=1, gbs=1, zero=0), "jax", overheads=False).bytes
    assert est["params"] == 4 * tied.param_count and est["adam_moments"] == 8 * tied.param_count
    assert est["loss_and_tuple"] == 4 + 8 * (3 * 11 + 2)


@pytest.mark.parametrize("backend", ["gpu", "cpu"])
@pytest.mark.parametrize("recompute", RECOMPUTE)
def test_total_is_arguments_output_and_the_largest_phase(recompute, backend):
    """Sum of the components == arguments + output + max over phases of the live temporaries (exact, at two points:
    one where the backward phase is the peak and one with an s x s-free long sequence)."""
    from symbolic.recipes.jax.buffers import PHASES

    sw = Switches(recompute=recompute, overheads=False, backend=backend)
    total = sum(x.expr for x in prof.components(sw))
    fixed = sum(x.bytes for x in prof.arguments(sw) + prof.outputs(sw))
    phases = prof.phase_bytes(sw)
    assert set(phases) == set(PHASES)
    for point in ({"m": 4, "p": 2, "s": 4096}, {"m": 1, "p": 1, "s": 256}):
        at = {
            **{
                BY_NAME[k]: v
                for k, v in inputs_for(
                    SHAPE, _training(d=2, t=2, c=2, recompute=recompute, s=point["s"], gbs=2 * point["m"])
                ).items()
            },
            BY_NAME["p"]: point["p"],
            BY_NAME["m"]: point["m"],
        }
        peak = max(sp.sympify(e).xreplace(at) for e in phases.values())
        assert sp.simplify(sp.sympify(total).xreplace(at) - (sp.sympify(fixed).xreplace(at) + peak)) == 0


def test_backend_rows_are_switched_by_the_target():
    """XLA:CPU's fp32 widening and iteration slice only on cpu; XLA:GPU's relayout copy only on gpu (GPipe's: 1F1B
    has no relayout phase)."""
    names = lambda backend: {
        row.name for row in prof.table(Switches(backend=backend, overheads=False, schedule="gpipe"))
    }
    assert {"stacks_widened", "iteration_slice"} <= names("cpu") and "relayout_copy" not in names("cpu")
    assert "relayout_copy" in names("gpu") and not {"stacks_widened", "iteration_slice"} & names("gpu")


def test_one_f_one_b_table_holds_rings_of_min_m_p_and_no_stack_of_every_iteration():
    """Under 1F1B the residual rings are K = min(m, p) micro batches of the stage's L/p layers (exact), GPipe's rows of
    every iteration or micro batch are gone, and nothing in the temporaries grows with m once m >= p."""
    import sympy as sp

    from symbolic.config.symbols import L, m, p

    rows = {row.name: row for row in prof.temporaries(Switches(overheads=False))}
    gpipe = {row.name: row for row in prof.temporaries(Switches(overheads=False, schedule="gpipe"))}
    per_micro = gpipe["residual_stacks"].bytes / (m + p - 1)
    assert sp.simplify(rows["residual_stacks"].bytes - sp.Min(m, p) * per_micro) == 0
    assert not {"stage_outputs", "embeddings", "output_grads", "iteration_grads", "relayout_copy"} & set(rows)
    expr = prof.peak(prof.on(list(rows.values()), "gpu"))
    values = {L: 32, p: 4, **{s: 64 for s in expr.free_symbols if s not in (L, m, p)}}
    heap = lambda mm: expr.xreplace({**values, m: mm})  # noqa: E731
    assert heap(4) == heap(64) and heap(3) < heap(4)


# XLA:GPU's padding of v/t in the logits gradient's product with the head, read in H100-target dumps: (v, t, b, s, c,
# h) -> the padded width, or None where no padded operand existed
PADDED = {
    (40002, 1, 1, 1024, 1, 1024): 40016,  # derive-1f1b-ep-zero's moe3-derive-vocab-40002-1024 d4 e2 p2 full zero3
    (40002, 1, 1, 2048, 2, 1024): 40016,  # derive-vocab 1, c 2
    (40002, 1, 1, 2048, 1, 1024): None,  # derive-vocab 0: 128 tiles, v/t (132 - 128) < 196000
    (30001, 1, 1, 1024, 1, 1024): 30008,  # derive-vocab 2
    (30001, 1, 1, 2048, 1, 1024): None,  # derive-vocab 3
    (30001, 1, 2, 1024, 1, 1024): None,  # derive-vocab 4, b 2
    (50000, 2, 1, 1024, 1, 768): 25008,  # derive-vocab 5: 8 divides 25000, 48 tiles pad it to 16
    (30002, 2, 1, 1024, 1, 1792): 15008,  # derive-vocab 6: 112 tiles
    (30002, 2, 1, 2048, 1, 1792): None,  # derive-vocab 7: 224 tiles
    (50000, 2, 1, 1024, 1, 1536): None,  # holdout-hybrid's qwen3.5-1536 d4 t2: 8 divides 25000 at 96 tiles
    (50004, 1, 1, 2048, 1, 1024): 50008,  # holdout-vocab's moe3-vocab-50004-1024 at 128 tiles
}


def test_vocab_padding_bound_is_the_h100_targets_sm_count():
    """The padding bound's SMS is the streaming multiprocessors of the card the rows were read on: the H100 target's
    core_count, one fact with two homes (the symbolic side cannot read the compile target), held equal here (exact)."""
    import re

    from jaxcheck.targets import load
    from symbolic.recipes.jax.onef1b_gpu import SMS

    assert int(re.search(r"core_count:\s*(\d+)", load("h100-80gb").config).group(1)) == SMS


def test_vocab_padding_follows_xla_gpu_dumps_and_lives_in_the_cotangent_phase():
    """XLA:GPU pads the fp32 operands of the logits gradient's product with the head along v/t where it splits that
    product (under 132 output tiles, v/t (132 - tiles) >= 196000), one row per padding multiple. Source of truth: the
    padded widths in the dumps listed in PADDED; the rows are zero exactly where XLA padded nothing, else one of them
    is both operands [b s/c + h, width] in fp32 with the width within 16 columns of XLA's (XLA splits very long v/t
    once more than the rows do: 40002 went to 40016, the row says 40008). They live in loss_input_grad, where the
    logits are gone and the rows live across the loss are live too, and on XLA:GPU only."""
    from symbolic.config.symbols import b, c, h, s, t, v

    rows = {row.name: row for row in prof.on(prof.temporaries(Switches(backend="gpu", overheads=False)), "gpu")}
    padded = ("vocab_padded", "vocab_padded_16", "vocab_padded_32")
    pad = sum(rows[name].bytes for name in padded)
    for (vv, tt, bb, ss, cc, hh), width in PADDED.items():
        got = int(pad.subs({v: vv, t: tt, b: bb, s: ss, c: cc, h: hh}))
        if width is None:
            assert got == 0, (vv, tt, bb, ss, cc, hh)
        else:
            rows_of_operands = bb * ss // cc + hh
            assert got % (4 * rows_of_operands) == 0 and abs(got // (4 * rows_of_operands) - width) <= 16, (
                (vv, tt, bb, ss, cc, hh),
                got // (4 * rows_of_operands),
                width,
            )
    assert all(rows[name].phases == ("loss_input_grad",) for name in padded)
    live = {name for name, row in rows.items() if "loss_input_grad" in row.phases}
    assert {"logits_grad", "residual_stacks", "block_grads", "head_grad"} <= live and "logits" not in live
    assert not set(padded) & {
        row.name for row in prof.on(prof.temporaries(Switches(backend="cpu", overheads=False)), "cpu")
    }


def test_iteration_slice_vanishes_with_one_iteration():
    """With m + p - 1 = 1 XLA removes the pipeline loop, so XLA:CPU copies no iteration slice (exact)."""
    from symbolic.config.symbols import m, p

    row = next(
        r
        for r in prof.temporaries(Switches(backend="cpu", overheads=False, schedule="gpipe"))
        if r.name == "iteration_slice"
    )
    assert row.bytes.subs({m: 1, p: 1}) == 0 and row.bytes.subs({m: 2, p: 1}) != 0


@pytest.mark.parametrize("recompute", RECOMPUTE)
def test_flash_phases_grow_linearly_in_s(recompute):
    """Flash attention (the default): no phase grows with s^2 once s exceeds the key block (exact; a choice between
    numbers, such as vocab_padded's width and padding multiple, whose condition reads s, bounded by its largest)."""
    from symbolic.recipes.jax.step import FLASH_BLOCK
    from symbolic.config.symbols import s

    numbers = lambda e: isinstance(e, sp.Piecewise) and all(arg.expr.is_number for arg in e.args)
    for live in prof.phase_bytes(Switches(recompute=recompute, overheads=False)).values():
        long = sp.sympify(live).replace(lambda e: isinstance(e, sp.Min), lambda e: sp.Integer(FLASH_BLOCK))
        long = long.replace(numbers, lambda e: max(arg.expr for arg in e.args))
        assert sp.degree(sp.expand(long), s) <= 1, live


def test_every_buffer_is_documented_and_live_somewhere():
    for backend in ("gpu", "cpu"):
        for row in prof.table(Switches(backend=backend, overheads=False)):
            assert row.doc and "\n" not in row.doc and row.phases, row.name
