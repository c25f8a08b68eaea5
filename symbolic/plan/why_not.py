"""Why no configuration of a cluster is valid: each factorisation's broken rules at its least constrained choices
(why_not, plan's listing on stdout), or the one rule every factorisation breaks (shared_reason, plan's one line)."""

from __future__ import annotations

import numpy as np

from ..config.parallel import ZERO_STAGES
from ..recipes.registry import DEFAULT_PROFILE, select
from .enumerate import GRID, Cluster, factorisations, grid_letters, least_constrained_grid, split_choices
from .experts import expert_columns


def why_not(
    cluster: Cluster,
    profile: str = DEFAULT_PROFILE,
    limit: int | None = None,
    zero: tuple[int, ...] = ZERO_STAGES,
    balance: bool = True,
) -> tuple[list[str], int]:
    """One line per factorisation (d, t, p, c) of N (the first `limit` of them) naming every rule it breaks with
    vpp = 1 and b = 1 under the ZeRO stage and split that break the fewest (uneven stages on a tie: plan balances
    them), and how many factorisations there are.

    vpp = 1 and b = 1 are the least constrained choices (a larger vpp or b only adds rules), so a factorisation
    that breaks a rule here has no valid configuration at all.
    """
    fac = factorisations(cluster.gpus)
    grid, ok = least_constrained_grid(cluster, fac, profile, zero, balance)
    by_name = {rule.name: rule for rule in select(profile)}
    combos = len(zero) * len(split_choices(balance))
    broken = np.stack([~holds for holds in ok.values()]).reshape(len(ok), -1, combos)  # rule x factorisation x combo
    best = np.argmin(broken.sum(axis=0) - 0.5 * (grid["split"] > 0).reshape(-1, combos), axis=1)
    lines = []
    for i in range(min(len(fac["d"]), len(fac["d"]) if limit is None else limit)):
        j = i * combos + best[i]
        x = grid_letters(
            cluster,
            {name: grid[name][j].item() for name in GRID if name in grid}
            | {
                name: np.asarray(value).reshape(-1)[j if np.ndim(value) else 0].item()
                for name, value in expert_columns(grid).items()
            },
            profile,
        )
        names = [name for name, holds in ok.items() if not holds[j]]
        lines.append(
            f"dp={x.d} tp={x.t} pp={x.p} cp={x.c}: "
            + ("; ".join(by_name[name].message(x) for name in names) if names else "valid")
        )
    return lines, len(fac["d"])


def shared_reason(cluster: Cluster, profile: str = DEFAULT_PROFILE, zero: tuple[int, ...] = ZERO_STAGES) -> str | None:
    """The message (at the first factorisation) of a rule that every factorisation breaks at its least constrained
    choices (why_not's), e.g. a flag the model has no use for; None when no one rule rules them all out."""
    fac = factorisations(cluster.gpus)
    grid, ok = least_constrained_grid(cluster, fac, profile, zero, True)
    everywhere = [name for name, holds in ok.items() if not np.any(holds)]
    if not everywhere:
        return None
    x = grid_letters(
        cluster,
        {name: grid[name][0].item() for name in GRID if name in grid}
        | {name: np.asarray(value).reshape(-1)[0].item() for name, value in expert_columns(grid).items()},
        profile,
    )
    return {rule.name: rule for rule in select(profile)}[everywhere[0]].message(x)
