"""The 1F1B clock of jaxcheck.model.onef1b against Megatron-LM's schedule.

Sources of truth: Megatron-LM's forward_backward_pipelining_without_interleaving (rank r runs p - r - 1 warm-up
forwards, so it holds min(m, p - r) micro batches: symbolic.components.schedule.in_flight, exact integers). That
the compiled 1F1B step's temp bytes do not grow with m is checked in notebooks/crosscheck.ipynb (llama3-8b t2 p4 on
XLA:GPU, m = 4 and m = 8: equal, exactly; run by tests/test_notebook_crosscheck.py), not compiled a second time here.
"""

import itertools

import pytest
import sympy as sp

from symbolic.components.schedule import in_flight
from symbolic.config.symbols import m as m_, p as p_, vpp


@pytest.mark.parametrize("p,m", list(itertools.product(range(1, 7), range(1, 13))))
def test_clock_holds_megatrons_in_flight_count_on_every_rank(p, m):
    from jaxcheck.model.onef1b import Clock

    clock = Clock(p, m)
    counts = [clock.in_flight(r) for r in range(p)]
    paper = [int(in_flight(sp.Integer(r)).subs({m_: m, p_: p, vpp: 1})) for r in range(p)]
    assert counts == paper == [min(m, p - r) for r in range(p)]
    assert clock.slots == max(counts)  # the ring: the most loaded rank's count, on every stage


@pytest.mark.parametrize("p,m", [(1, 5), (2, 3), (4, 8), (5, 2)])
def test_each_stage_runs_each_micro_batch_once_forward_then_backward(p, m):
    """Every (stage, micro batch) has one forward tick and one later-or-equal backward tick; the forward reaches stage
    r one tick after stage r - 1, the backward one tick after stage r + 1; no two live micro batches share a slot."""
    import numpy as np

    from jaxcheck.model.onef1b import Clock

    clock = Clock(p, m)
    fwd, bwd = {}, {}
    for tau in range(clock.ticks):
        for table, backward in ((fwd, False), (bwd, True)):
            micro, valid = clock.micro(tau, backward)
            for r in np.flatnonzero(np.asarray(valid)):
                assert (r, int(micro[r])) not in table
                table[(r, int(micro[r]))] = tau
    assert set(fwd) == set(bwd) == set(itertools.product(range(p), range(m)))
    for (r, i), tau in fwd.items():
        assert bwd[(r, i)] >= tau
        assert r == 0 or fwd[(r - 1, i)] == tau - 1
        assert r == p - 1 or bwd[(r + 1, i)] == bwd[(r, i)] - 1
    for r in range(p):
        for tau in range(clock.ticks):
            live = [i for i in range(m) if fwd[(r, i)] <= tau <= bwd[(r, i)]]
            assert len({i % clock.slots for i in live}) == len(live)
