"""Profile `jax`, XLA:CPU's 1F1B rows (pure sympy): which buffers XLA:CPU holds in which phase of a tick, as read in
its dumps, and that XLA:GPU's table has none of them.

Sources of truth: the CPU dumps named in each test and in the rows' docs (symbolic/recipes/jax/onef1b_cpu.py, zero.py);
every assertion is exact.
"""

import sympy as sp

from symbolic.config.switches import Switches
from symbolic.recipes.jax import profile as prof


def test_cpu_rows_of_1f1b_are_its_own():
    """Under 1F1B XLA:CPU holds no stack of every iteration (GPipe's stacks_widened and iteration_slice are gone) but
    its own rows read from its dumps of grids/derive-1f1b.toml (and of the first CPU holdouts, once evaluated): the
    fp32 rings copied again, the backward's ring slot sliced out (none with one slot, K = 1), one layer's and the
    head's weights widened back to fp32 (once more under full remat; for the whole step with one layer per stage), the
    logits gradient transposed, and the lookup gradient's sum over d*c (an all-reduce XLA:CPU keeps over one device
    too); XLA:GPU's 1F1B table has none of them (exact)."""
    from symbolic.config.symbols import L, c, d, m, p

    cpu = {row.name: row for row in prof.on(prof.temporaries(Switches(backend="cpu", overheads=False)), "cpu")}
    gpu = {row.name for row in prof.on(prof.temporaries(Switches(backend="gpu", overheads=False)), "gpu")}
    own = {
        "ring_copies",
        "slot_slice",
        "layer_widened",
        "layer_widened_recompute",
        "layer_widened_hoisted",
        "logits_grad_transposed",
        "head_widened",
        "lookup_grad_summed",
    }
    assert own <= set(cpu) and not own & gpu and not {"stacks_widened", "iteration_slice"} & set(cpu)
    assert cpu["slot_slice"].bytes.subs({m: 1, p: 4}) == 0 and cpu["slot_slice"].bytes.subs({m: 1, p: 1}) == 0
    assert cpu["slot_slice"].bytes.subs({m: 2, p: 4}) != 0
    assert cpu["lookup_grad_summed"].bytes.subs({d: 1, c: 1}) != 0 and cpu["lookup_grad_summed"].bytes.subs(d, 2) != 0
    assert (
        cpu["layer_widened_hoisted"].bytes.subs({L: 4, p: 4}) != 0
        and cpu["layer_widened_hoisted"].bytes.subs({L: 8, p: 4}) == 0
    )  # one layer per stage only
    full = {row.name: row for row in prof.temporaries(Switches(backend="cpu", overheads=False, recompute="full"))}
    assert cpu["layer_widened_recompute"].bytes == 0 and full["layer_widened_recompute"].bytes != 0


# XLA:CPU's 1F1B loss, read in ten CPU dumps (symbolic.recipes.jax.onef1b_cpu.lookup_held): (d, c, ZeRO stage) -> whether
# the lookup gradient is made before the loss and held through it for the all-reduce at the tick's end
HELD = {
    (2, 1, 1): True,  # derive-1f1b's moe-mixtral-1024 d2 e2 p2 full zero1 (wrapped_scatter.8 720-747, logits at 726)
    (2, 1, 3): True,  # derive-1f1b's llama2-7b d2 t2 p2 full zero3 (wrapped_scatter.1 706-746, logits at 711)
    (4, 1, 2): True,  # derive-hybrid's qwen3.5-moe-768 d4 e2 p1 full zero2 (wrapped_scatter.22 3003-3030)
    (1, 4, 0): True,  # holdout-1f1b-2's two-layer d1 p2 c4 full (wrapped_scatter.1 518-545, logits at 524)
    (2, 2, 3): True,  # holdout-cpu-1f1b-2's two-layer d2 p2 c2 full zero3 (all-reduce.237: the head's, the lookup's)
    (2, 2, 1): False,  # derive-1f1b's llama3-8b d2 t2 p2 c2 full zero1 (psum_invariant.17 at 690, logits at 695)
    (2, 2, 0): False,  # the same split without ZeRO: the head gradient reduced over d and c one at a time
    (1, 1, 0): False,  # tiny d1 p1 none (the lookup's gradient joins its accumulator before the logits at 660)
}


def test_cpu_1f1b_loss_follows_its_dumps():
    """XLA:CPU's 1F1B loss as read in its dumps: the lookup gradient held through the loss where its all-reduce over
    d*c joins the head gradient's (HELD), the head's compute-dtype cast freed at the logits product and its fp32
    widening after the head's backward (neither live at the all-reduce that ends the tick, where the head gradient
    and its sum are), no reduce-scattered head gradient in the loss (the tick all-reduces it), the head gradient a
    ZeRO shard where d*c divides p (tick_slices), the fp32 ring copies only in the layer loop, and with one layer per
    stage that layer's fresh gradients held to that all-reduce. Source of truth: the dumps named in the rows' docs and
    in HELD (exact)."""
    from symbolic.config.symbols import L, c, d, p
    from symbolic.recipes.jax.onef1b_cpu import lookup_held

    for (dd, cc, zero), held in HELD.items():
        assert lookup_held(Switches(backend="cpu", zero=zero)).subs({d: dd, c: cc}) == (1 if held else 0), (dd, cc)
    for zero in (1, 2):
        cpu = {
            row.name: row
            for row in prof.on(prof.temporaries(Switches(backend="cpu", overheads=False, zero=zero)), "cpu")
        }
        assert "head_cast" not in {r for r, row in cpu.items() if {"loss_input_grad", "loss_head"} & set(row.phases)}
        assert "backward_embed" not in cpu["head_cast"].phases + cpu["head_widened"].phases
        assert {"loss", "loss_head"} <= set(cpu["lookup_grad_early"].phases)
        assert "loss" not in cpu["ring_copies"].phases and "backward_weights" in cpu["ring_copies"].phases
        assert "head_grad_scattered" not in cpu
        assert cpu["head_grad_at_reduce"].phases == ("backward_embed",)
        held_layer = cpu["layer_grads_held"].bytes
        assert held_layer.subs({L: 4, p: 4, d: 2}) != 0 and held_layer.subs({L: 8, p: 4, d: 2}) == 0
        assert held_layer.subs({L: 4, p: 4, d: 1, c: 1}) == 0
    zero2 = {row.name: row for row in prof.temporaries(Switches(backend="cpu", overheads=False, zero=2))}
    micro = zero2["head_grad_micro"].bytes
    assert micro.subs({d: 2, c: 1, p: 2}) * 2 == micro.subs({d: 2, c: 1, p: 3})  # llama2-7b d2 p2: f32[16000,2048]
    gpu = {row.name for row in prof.on(prof.temporaries(Switches(backend="gpu", overheads=False, zero=2)), "gpu")}
    assert "head_grad_scattered" in gpu and not {"lookup_grad_early", "head_grad_at_reduce"} & gpu


def test_xla_cpu_frees_the_slot_slice_and_pending_residuals_before_the_attention_backward():
    """On XLA:CPU a 1F1B layer's pending residuals are written into their ring, and the backward's slot slices freed,
    before its attention backward (derive-1f1b's tiny p4 none, tied-1024 t2 p2 selective and llama3-8b d2 p4 none
    dumps): both rows live in backward_weights only there, while on XLA:GPU the pending residuals span both
    backward phases (exact)."""
    cpu = {row.name: row for row in prof.on(prof.temporaries(Switches(backend="cpu", overheads=False)), "cpu")}
    gpu = {row.name: row for row in prof.on(prof.temporaries(Switches(backend="gpu", overheads=False)), "gpu")}
    assert cpu["slot_slice"].phases == cpu["pending_residuals"].phases == ("backward_weights",)
    assert gpu["pending_residuals"].phases == ("backward_attention", "backward_weights")


def test_xla_cpu_frees_the_head_copies_before_the_last_all_reduce():
    """No compute-dtype or fp32 copy of the LM head is live at XLA:CPU's tick-end all-reduce of the head and lookup
    gradients (backward_embed; ten MTP dumps, grids/derive-mtp-cpu.toml's six among them, and holdout-cpu-1f1b-2's
    two-layer d2 p2 c2 zero3: wrapped_convert.19 freed at 611, convert_convert_fusion.8 at 626, the all-reduce at 627).
    Without MTP, where the lookup gradient is not held for that all-reduce, its backward runs before the loss with
    both copies live (llama3-8b d2 t2 p2 c2 full zero1: psum_invariant.17 at 690, the cast live to 695, the widened
    head to 710): head_copies_at_lookup, their bytes exactly, there only (exact)."""
    from symbolic.config.symbols import B_a, c, d, h, t, v
    from symbolic.components.base import FP32
    from symbolic.recipes.jax.clock import TICK

    for mtp in (False, True):
        rows = {
            row.name: row for row in prof.on(prof.temporaries(Switches(backend="cpu", overheads=False, mtp=mtp)), "cpu")
        }
        assert set(rows["head_widened"].phases) | {"backward_embed"} == set(TICK)
        for name in ("head_cast", "head_widened"):
            assert "backward_embed" not in rows[name].phases, (name, mtp)
        assert ("head_copies_at_lookup" in rows) is not mtp
    rows_cpu = {row.name: row for row in prof.temporaries(Switches(backend="cpu", overheads=False, zero=1))}
    lookup = rows_cpu["head_copies_at_lookup"]
    assert lookup.phases == ("backward_embed",)
    assert sp.simplify(lookup.bytes.subs({d: 2, c: 2}) - (B_a + FP32) * h * v / t) == 0
    assert lookup.bytes.subs({d: 2, c: 1}) == 0
