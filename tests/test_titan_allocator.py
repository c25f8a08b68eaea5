"""What torchtitan's reserved peak holds beyond its live tensors (symbolic/recipes/torchtitan/allocator.py), each
against a value worked by hand from the code it cites (torch 2.6.0 FSDP2 _fsdp_collectives.py / _fsdp_param_group.py,
tensor/parallel/loss.py, CUDACachingAllocator.cpp get_free_block): exact, the expressions being integers in bytes
(tolerance 0)."""

from __future__ import annotations

import sympy as sp

from symbolic.components.weights import layer_params, mixer_params, mlp_params
from symbolic.config import symbols as S
from symbolic.config.switches import Switches
from symbolic.estimator.estimate import POOL_SLACK, memory_kinds
from symbolic.recipes.torchtitan.allocator import allgather_cache, freed_logits
from symbolic.recipes.torchtitan.fsdp2 import block_backward, loss_backward

# sizes that all differ (DESIGN.md): a block of h 48, f 112, a 6, k 2; 136-token vocabulary; 1024 tokens
SHAPE = {S.h: 48, S.f: 112, S.a: 6, S.k: 2, S.dh: 8, S.v: 136, S.L: 4, S.s: 1024, S.b: 2, S.c: 1, S.t: 1, S.p: 1}
SHAPE |= {S.d: 4, S.B_a: 2, S.B_g: 4, S.B_l: 4, S.B_w: 4, S.B_o: 8, S.m: 1, S.vpp: 1, S.n_ac: 1}


def value(expr: sp.Expr, **extra) -> int:
    at = {key: sp.Integer(x) for key, x in {**SHAPE, **{getattr(S, k): v for k, v in extra.items()}}.items()}
    return int(sp.sympify(expr).xreplace(at))  # xreplace: numbers in, no assumptions asked (subs is 10x slower)


def test_freed_logits_is_the_bf16_logits_where_the_loss_is_the_larger_moment():
    """1024 x 2 tokens x 1360 logits: the loss's backward (3 fp32 [b s, v]) is 33 MB, a full-checkpointed block's
    backward far less, so the pool keeps the freed bf16 logits, 2 x 2048 x 1360 bytes, beyond the live tensors; at
    t = 2 (loss_parallel: four fp32 tensors) the logits of v/t columns."""
    sw = Switches(recompute="full")
    assert value(loss_backward(), v=1360) > value(block_backward(sw, True), v=1360) + 2 * 2048 * 1360
    assert value(freed_logits(sw).expr, v=1360) == 2 * 2048 * 1360
    assert value(freed_logits(sw).expr, v=1360, t=2) == 2 * 2048 * 680
    assert value(freed_logits(sw).expr, v=1360, p=2) == 0  # the pipeline keeps its logits (output_chunks)


def test_freed_logits_vanish_where_a_block_backward_is_larger_by_the_logits():
    """At 2 tokens a micro batch the LM head's bf16 gradient [v, h] (in the block moment) outgrows the loss's
    3 fp32 [b s, v] by more than the logits: the loss is then not the peak and leaves nothing reserved beyond it."""
    sw = Switches(recompute="full")
    extra = {"s": 2}
    loss, block = value(loss_backward(), **extra), value(block_backward(sw, True), **extra)
    assert block > loss + 2 * 4 * 136
    assert value(freed_logits(sw).expr, **extra) == 0


def test_allgather_cache_is_one_block_resharding_two_gathered_none_unsharded():
    """One block's bf16 weights (B_a = 2 bytes each) per cached flat buffer; with Float8 all-gather its linear weights
    one byte each; two at p > 1 (the stage stays gathered), none where d c = 1 (no all-gather)."""
    sw = Switches(recompute="full", zero=3)
    block = value(2 * layer_params(sw))
    assert value(allgather_cache(sw).expr) == block
    assert value(allgather_cache(sw).expr, p=2) == 2 * block
    assert value(allgather_cache(sw).expr, d=1) == 0
    fp8 = Switches(recompute="full", zero=3, fp8="tensorwise", fp8_gather=True)
    assert value(allgather_cache(fp8).expr) == block - value(mixer_params(fp8) + mlp_params(fp8))


def test_both_are_reserved_not_allocated():
    """memory_kinds: allocated leaves them out, reserved holds them."""
    kinds = memory_kinds({"weights": 100, "allgather_cache": 7, "freed_logits": 11, "total": 118})
    assert {"allgather_cache", "freed_logits"} <= set(POOL_SLACK)
    assert (kinds["allocated_bytes"], kinds["reserved_bytes"]) == (100, 118)
