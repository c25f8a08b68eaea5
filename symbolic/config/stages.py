"""A GPU's place in the pipeline: the stage kinds and the rank that stands for each; no sympy."""

from __future__ import annotations

STAGES = ("first", "middle", "last", "only")  # a GPU's place in the pipeline; only: p = 1, one stage holds everything


def stage_rank(stage: str, p):
    """The pipeline rank that stands for a stage of p stages (p an int or a sympy symbol): 0, 1, p - 1, or 0."""
    return {"first": 0, "middle": 1, "last": p - 1, "only": 0}[stage]


def stage_exists(stage: str, p):
    """Whether a GPU of this stage exists with p pipeline stages (p an int or an array): only at p = 1, first and
    last from p = 2, middle from p = 3."""
    return {"only": p == 1, "first": p >= 2, "last": p >= 2, "middle": p >= 3}[stage]


def stage_of(rank: int, p: int) -> str:
    """The stage kind of pipeline rank `rank` of p: only (p = 1), first, last, or middle."""
    return "only" if p == 1 else "first" if rank == 0 else "last" if rank == p - 1 else "middle"
