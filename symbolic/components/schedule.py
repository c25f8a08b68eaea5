"""Pipeline schedule: how many micro batches of a stage's L/p layers are alive at its peak (1F1B and interleaved 1F1B)."""

from __future__ import annotations

import sympy as sp

from ..config.symbols import m, p, vpp
from ..config.stages import STAGES, stage_rank

RANK = {stage: sp.sympify(stage_rank(stage, p)) for stage in STAGES}  # the rank that stands for each stage


def in_flight(rank: sp.Expr) -> sp.Expr:
    """Micro batches of one full stage (L/p layers) whose activations rank `rank` holds at its peak.

    1F1B (Narayanan et al. 2021; Megatron-LM schedules.py): rank r runs p - r - 1 warm-up forwards, so it holds
    min(m, p - r) micro batches. Interleaved with vpp chunks per rank: rank r holds min(m*vpp, 2(p - r - 1) +
    (vpp - 1)p + 1) chunks of L/(p*vpp) layers; on rank 0 with m*vpp large, p*(1 + (p - 1)/(p*vpp)) stage-equivalents
    (Korthikanti et al. 2022)."""
    one_f_one_b = sp.Min(m, p - rank, evaluate=False)
    interleaved = sp.Min(m * vpp, p * (vpp + 1) - 2 * rank - 1, evaluate=False) / vpp
    return sp.Piecewise((interleaved, vpp > 1), (one_f_one_b, True))


def interleave_factor() -> sp.Expr:
    """First-stage penalty of the interleaved schedule, 1 + (p - 1)/(p*vpp), (Korthikanti et al. 2022) for m*vpp >= p*vpp + p - 1."""
    return 1 + (p - 1) / (p * vpp)
