"""The parallel sizes of a job as one value, the groups derived from them, and what each ZeRO stage shards; no sympy.

One definition serves every caller: a Parallel of ints (one job: Training.parallel), of numpy arrays (plan's
candidates) or of sympy symbols (the formulas: `Parallel.symbols()`) gives the same groups, so a group size is never
written twice."""

from __future__ import annotations

from dataclasses import dataclass

# ZeRO stage (Rajbhandari et al. 2020) by name, the stage's number as --zero takes it: NO_ZERO shards nothing over the
# d c data-parallel ranks; ZERO_OPTIMIZER (1) the optimizer states (Megatron's distributed optimizer); ZERO_GRADIENTS
# (2) also the gradients; ZERO_WEIGHTS (3) also the weights (torch FSDP FULL_SHARD)
NO_ZERO, ZERO_OPTIMIZER, ZERO_GRADIENTS, ZERO_WEIGHTS = 0, 1, 2, 3
ZERO_SHARDS: dict[int, frozenset[str]] = {
    NO_ZERO: frozenset(),
    ZERO_OPTIMIZER: frozenset({"optimizer"}),
    ZERO_GRADIENTS: frozenset({"optimizer", "gradients"}),
    ZERO_WEIGHTS: frozenset({"optimizer", "gradients", "weights"}),
}
ZERO_STAGES = tuple(ZERO_SHARDS)


class Sharding:
    """What a config's ZeRO stage (its `zero` field) shards, by name (ZERO_SHARDS): Training and Switches alike."""

    zero: int

    def shards(self, state: str) -> bool:
        """Whether `state` (optimizer, gradients, weights) is sharded over the d c data-parallel ranks."""
        return state in ZERO_SHARDS[self.zero]

    @property
    def dist_opt(self) -> bool:
        """Optimizer states sharded over d c (ZeRO stage 1 or higher: Megatron's distributed optimizer)."""
        return self.shards("optimizer")

    @property
    def sharded_grads(self) -> bool:
        """Gradients sharded over d c (ZeRO-2 and 3): each rank keeps the reduce-scattered slice."""
        return self.shards("gradients")

    @property
    def sharded_weights(self) -> bool:
        """Weights sharded over d c (ZeRO-3, FSDP): gathered layer by layer where they are used."""
        return self.shards("weights")


def _ratio(n, m):
    """n / m, exact: an int for ints (the rule table has checked that m divides n), else a true quotient."""
    return n // m if isinstance(n, int) and isinstance(m, int) else n / m


@dataclass(frozen=True)
class Parallel:
    """The spelled-out degrees (glossary letters): d data, t tensor (+ sequence), p pipeline, c context, e expert,
    t_e expert tensor parallel; the groups they make are properties (Megatron-Core parallel_state; Liu et al. 2025,
    MoE Parallel Folding: experts e x t_e over the d t c ranks of a stage)."""

    d: object = 1
    t: object = 1
    p: object = 1
    c: object = 1
    e: object = 1
    t_e: object = 1

    @classmethod
    def symbols(cls) -> "Parallel":
        """The sympy twin: every degree its glossary symbol (config.symbols)."""
        from . import symbols

        return cls(symbols.d, symbols.t, symbols.p, symbols.c, symbols.e, symbols.t_e)

    @property
    def world(self):
        """GPUs (devices) in the job: d t p c."""
        return self.d * self.t * self.p * self.c

    @property
    def stage_ranks(self):
        """The ranks of one pipeline stage: d t c."""
        return self.d * self.t * self.c

    @property
    def zero_group(self):
        """The ranks a ZeRO stage shards over: the d c data-parallel (and context-parallel) ranks."""
        return self.d * self.c

    @property
    def expert_ranks(self):
        """The ranks one MoE layer's experts span: e t_e."""
        return self.e * self.t_e

    @property
    def edp(self):
        """Expert data-parallel size: the d t c ranks of a stage over the e t_e that hold one copy of the experts."""
        return _ratio(self.stage_ranks, self.expert_ranks)
