"""The recompute choices plan searches: none, full, and the selective ones a recipe has (Megatron-Core's
--recompute-modules sets, torchtitan's per-layer --ac-every), those the rule table allows for the model.

Megatron (the paper profile): its default selective set (core_attn), and every set made of the modules that rerun
no matmul (layernorm, and moe_act with routed experts) with or without core_attn and mla_up_proj (with MLA). A set
without the matmul-free modules holds more than the same set with them and costs the proxy the same (it counts
matmul FLOPs; a module's dropped tensors outweigh the one layer of them its backward recomputes), so the proxy would
rank it just below; with flash attention core_attn drops nothing (no s x s tensor) and only adds time, so those sets
are left out too, but the default and the set of every module the model has (the least a selective layer holds, the
one Megatron-LM's DeepSeek-V3 recipe names: core_attn,mla_up_proj,layernorm,moe_act). torchtitan: op-level
selective (its default) and every n-th block for n = 2 to AC_EVERY (1 is full checkpointing; beyond 8 fewer than
one block in eight is checkpointed)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from ..config import rules
from ..recipes.registry import select
from ..config.training import RECIPE_FIELDS
from ..config.training_checks import RECOMPUTE

AC_EVERY = 8  # the largest --ac-every plan searches
FREE = ("layernorm", "moe_act")  # modules that rerun no matmul (the proxy's recompute time counts matmul FLOPs)


@dataclass(frozen=True)
class Policy:
    """One recompute choice: the policy, Megatron-Core's --recompute-modules, torchtitan's --ac-every."""

    recompute: str  # none | selective | full
    modules: str = RECIPE_FIELDS["recompute_modules"]  # what selective recompute reruns (Megatron)
    ac_every: int | None = None  # selective: every n-th block checkpointed (torchtitan)

    @property
    def fields(self) -> dict:
        """The Training fields this choice sets."""
        return {"recompute": self.recompute, "recompute_modules": self.modules, "ac_every": self.ac_every}

    @property
    def label(self) -> str:
        """How plan's table names it: the policy, and what selective reruns where it is not the default."""
        if self.ac_every is not None:
            return f"{self.recompute} every {self.ac_every}"
        if self.modules != RECIPE_FIELDS["recompute_modules"]:
            return f"{self.recompute} {self.modules}"
        return self.recompute


def _module_sets(shape, flash_attn: bool) -> list[str]:
    """Megatron's selective sets plan searches (module docstring), RECOMPUTE_MODULES' order within each."""
    from ..config.training_checks import RECOMPUTE_MODULES, canonical_modules

    free = [name for name in FREE if name != "moe_act" or shape.E]
    optional = ["mla_up_proj"] if shape.mla else []
    if not flash_attn:
        optional.insert(0, "core_attn")
    sets = [RECIPE_FIELDS["recompute_modules"]]
    every = ["core_attn", *free, *(["mla_up_proj"] if shape.mla else [])]
    for n in range(len(optional) + 1):
        for extra in itertools.combinations(optional, n):
            sets.append(canonical_modules(",".join(free + list(extra))))
    sets.append(canonical_modules(",".join(every)))
    return [s for s in dict.fromkeys(sets) if all(name in RECOMPUTE_MODULES for name in s.split(","))]


def candidates(shape, flash_attn: bool) -> list[Policy]:
    """Every choice of module docstring's, before the rule table: none, the selective ones, full."""
    selective = [Policy("selective", modules) for modules in _module_sets(shape, flash_attn)]
    selective += [Policy("selective", ac_every=n) for n in range(2, min(AC_EVERY, shape.L) + 1)]
    return [Policy("none"), *selective, Policy("full")]


def policies(profile: str, shape, flash_attn: bool = True) -> tuple[Policy, ...]:
    """The choices the profile's rules allow for the model: each rule that reads only the recompute fields and the
    model's letters (those that read a parallel size are plan's grid masks) must hold."""
    out = []
    for policy in candidates(shape, flash_attn):
        x = SimpleNamespace(**{**RECIPE_FIELDS, **policy.fields}, flash_attn=flash_attn, **rules.model_letters(shape))
        if all(_holds(rule, x) for rule in select(profile)):
            out.append(policy)
    return tuple(out)


def _holds(rule, x) -> bool:
    """Whether the rule holds for x; True where it reads a letter x lacks (a grid column: checked per row)."""
    try:
        return bool(rule.holds(x))
    except AttributeError:
        return True


def worth_searching(policy: Policy, p, L: int):
    """Where plan searches the choice for rows of p stages (True, or a boolean array): an --ac-every n only where the
    widest stage of the most even split, ceil(L/p) layers, has a block it checkpoints (n at most that) and where it
    checkpoints fewer of them than n - 1 does (else the rows would repeat n - 1's figures)."""
    if policy.ac_every is None:
        return True
    n, widest = policy.ac_every, -(-L // np.asarray(p))
    return (n <= widest) & ((n == 2) | (widest // n != widest // (n - 1)))


def label_of(config: dict) -> str:
    """A row's recompute choice as plan's table names it, from its JSON "config" (the recompute fields are there
    where they are not their defaults)."""
    return Policy(config["recompute"], config.get("recompute_modules", Policy.modules), config.get("ac_every")).label


SHORT = {"core_attn": "attn", "layernorm": "ln", "moe_act": "act", "mla_up_proj": "up"}
ABBREVIATIONS = (
    "sel. is selective (core attention recomputed), sel. followed by the modules Megatron-Core recomputes "
    "where they are not the default (attn core_attn, ln layernorm, act moe_act, up mla_up_proj), sel./n "
    "torchtitan's every n-th block (--ac-every n)"
)


def short_label(config: dict) -> str:
    """label_of abbreviated for a narrow table (ABBREVIATIONS says how)."""
    policy = Policy(config["recompute"], config.get("recompute_modules", Policy.modules), config.get("ac_every"))
    if policy.recompute != "selective":
        return policy.recompute
    if policy.ac_every is not None:
        return f"sel./{policy.ac_every}"
    if policy.modules == Policy.modules:
        return "sel."
    return "sel. " + ",".join(SHORT[name] for name in policy.modules.split(","))


def recompute_index(policy: Policy) -> int:
    """The policy's index into RECOMPUTE (plan's "recompute" column)."""
    return RECOMPUTE.index(policy.recompute)
