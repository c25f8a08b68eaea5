"""torchtitan's pipeline terms and async TP's workspace (symbolic/recipes/torchtitan/pipeline.py), each against a value
worked by hand from the code it cites (torch 2.13 pipelining/stage.py, _fully_shard, _symmetric_memory): exact, the
expressions being integers in bytes (tolerance 0)."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
import sympy as sp

from symbolic.cli.entry import main
from symbolic.config import symbols as S
from symbolic.recipes.torchtitan.pipeline import (
    accumulated_gradients,
    input_gradients,
    output_chunks,
    stage_buffers,
    step_end,
    symmetric_workspace,
)

ROOT = Path(__file__).resolve().parents[1]
SHAPE = {S.B_a: 2, S.B_g: 4, S.b: 1, S.s: 1024, S.h: 64, S.c: 1, S.t: 2}  # a boundary tensor: 2*1024*64/2 = 65536 B


def value(expr: sp.Expr, **extra) -> int:
    at = {key: sp.Integer(x) for key, x in {**SHAPE, **{getattr(S, k): v for k, v in extra.items()}}.items()}
    return int(expr.xreplace(at))  # numbers in: no assumptions asked, as subs does


@pytest.mark.parametrize(
    "p,m,k,vpp,expected",
    [
        (2, 2, 2, 1, 4 * 1000 - 300),  # rank 0 of p 2, m 2: both micro batches in flight before the first backward
        (2, 3, 2, 1, 4 * 1000),  # m > k: a third forward refills the schedule after the first backward
        (2, 4, 2, 2, 4 * 1000),  # interleaved: counted without the drained micro batch (upper bound)
        (1, 8, 8, 1, 0),  # no pipeline: FSDP2 reduce-scatters every backward (its sync left on)
    ],
)
def test_accumulated_gradients_are_fp32_unsharded_less_a_drained_micro_batch(p, m, k, vpp, expected):
    """1000 unsharded parameters, 300 bytes of one micro batch's activations: B_g = 4 bytes each (reduce_dtype fp32,
    to_accumulated_grad_if_needed), one micro batch fewer in flight where all m ran before the first backward."""
    part = accumulated_gradients(sp.Integer(1000), sp.Integer(300), sp.Integer(k))
    assert value(part.expr, p=p, m=m, vpp=vpp) == expected


def test_activations_larger_than_the_gradients_leave_the_in_flight_peak():
    part = accumulated_gradients(sp.Integer(10), sp.Integer(300), sp.Integer(2))
    assert value(part.expr, p=2, m=2, vpp=1) == 0  # max(k A, (k - 1) A + G) = k A where G < A


@pytest.mark.parametrize("stage,count", [("first", 8), ("middle", 4 + 8), ("last", 8 - 4), ("only", 0)])
def test_stage_buffers_per_micro_batch(stage, count):
    """m = 8 micro batches, k = 4 in flight, p = 4: the first stage keeps 8 gradient receive buffers, a middle one 4
    more activation buffers than its in-flight inputs and 8 gradient buffers, the last its 4 activation buffers not
    in flight; each [1, 1024/2, 64] bf16 = 65536 bytes."""
    expr = stage_buffers(stage, sp.Integer(4)).expr
    assert value(expr, p=4 if stage != "only" else 1, m=8) == count * 65536


@pytest.mark.parametrize(
    "stage,each", [("first", 65536), ("middle", 65536), ("last", 2 * 1024 * 136 // 2), ("only", 0)]
)
def test_output_chunks_keep_every_micro_batch_output(stage, each):
    """output_chunks holds all m = 8 outputs to the step's end: a bf16 [1, 1024/2, 64] boundary tensor (65536 B), on
    the last stage the bf16 logits [1, 1024, 136/2]; none without a pipeline."""
    expr = output_chunks(stage).expr
    assert value(expr, p=4 if stage != "only" else 1, m=8, v=136) == 8 * each


@pytest.mark.parametrize(
    "stage,p,m,count",
    [("middle", 4, 8, 8 - 4), ("last", 4, 8, 8 - 4), ("middle", 4, 3, 0), ("first", 4, 8, 0), ("only", 1, 8, 0)],
)
def test_input_gradients_of_the_micro_batches_whose_backward_ended(stage, p, m, count):
    """k = 4 in flight: the m - k = 4 micro batches whose backward ended before the peak each leave their input's
    gradient in the receive buffer's .grad (stage_backward, cleared at the next step), a bf16 [1, 1024/2, 64] =
    65536 B; none where m <= k (the peak comes first), on the first stage (token ids) or without a pipeline."""
    expr = input_gradients(stage, sp.Integer(4)).expr
    assert value(expr, p=p, m=m) == count * 65536


@pytest.mark.parametrize(
    "stage,freed,expected", [("last", 10**6, 8 * 139264 + 5000 - 10**6), ("last", 2 * 10**6, 0), ("middle", 4000, 1000)]
)
def test_step_end_is_the_merged_logits_and_sharded_grads_beyond_what_the_step_freed(stage, freed, expected):
    """At the step's end the last stage cats its m = 8 bf16 logits [1, 1024, 136/2] (139264 B each, merge_chunks) and
    every stage holds its sharded gradients (5000 B here), reduce-scattered by the last backward; the excess over
    what is freed by then (the last: 10^6 B freed leaves 119112 B more, 2 x 10^6 B none; a middle stage: 1000 B)."""
    assert value(step_end(stage, sp.Integer(freed), sp.Integer(5000)).expr, p=4, m=8, v=136) == expected


def test_step_end_is_none_without_a_pipeline():
    """At p = 1 FSDP2 reduce-scatters every backward: the gradients are counted in `gradients` (nothing here)."""
    assert value(step_end("only", sp.Integer(0), sp.Integer(5000)).expr, p=1, m=8, v=136) == 0


def test_block_backward_has_no_reduce_scatter_input_under_the_pipeline():
    """With p > 1 FSDP2's post_backward (reduce_grads off) adds the bf16 gradient into the accumulated fp32 one: a
    block's backward holds B_a per parameter, not B_a + B_g (the fp32 reduce-scatter input of p = 1)."""
    from symbolic.components.weights import layer_params
    from symbolic.config.switches import Switches
    from symbolic.recipes.torchtitan.fsdp2 import block_backward

    sw = Switches(recompute="full")
    at = {S.h: 48, S.f: 112, S.a: 6, S.k: 2, S.dh: 8, S.v: 136, S.s: 1024, S.b: 1, S.c: 1, S.t: 1}
    at |= {S.B_a: 2, S.B_g: 4, S.n_ac: 1}
    pipe = block_backward(sw, False).xreplace({**at, S.p: 2})
    flat = block_backward(sw, False).xreplace({**at, S.p: 1})
    assert int(flat - pipe) == 4 * int(layer_params(sw).xreplace(at))


def test_async_tp_workspace_is_twice_a_reduce_scatter_chunk():
    """fused_matmul_reduce_scatter asks 2 x out_chunks[0] bytes: 2 x [b s/(c t), h] bf16 = 131072 B; none at t = 1."""
    expr = symmetric_workspace().expr
    assert value(expr) == 2 * 65536
    assert value(expr, t=1) == 0


def _run(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, err.getvalue()


def test_async_tp_needs_compile_and_tensor_parallelism():
    code, err = _run(
        "estimate", "--model", "llama3-8b", "--gpus", "8", "--tp", "2", "--recipe", "torchtitan", "--tp-comm-overlap"
    )
    assert code == 2 and err.count("\n") == 1 and "it needs --compile" in err, err


def test_the_405b_job_files_read_async_tp_as_its_workspace():
    from symbolic.readers.torchtitan import read

    for row in ("TT-13", "TT-15", "TT-16"):
        training = read(str(ROOT / "records" / "published" / "torchtitan" / f"{row}.toml"), []).training
        assert training["tp_comm_overlap"] is True and training["compile"] and training["tp"] == 8
