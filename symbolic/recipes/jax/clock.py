"""The 1F1B clock's shape in the `jax` profile (jaxcheck.model.onef1b): the phases of one tick, the update after the
tick loop, and the slots of the residual rings."""

from __future__ import annotations

import sympy as sp

from ...config.symbols import m, p
from .buffers import PHASES

UPDATE = ("update", "update_gather")  # AdamW after the tick loop (ZeRO-2: then the all-gather of the updated layers)
# the phases of one 1F1B tick (recipes.jax.onef1b): the buffer table's but GPipe's relayout and the update, in order
# (the first stage's lookup, the stages' forward, the last stage's loss, with MTP its modules' backward after the
# heads', loss_modules, the stages' backward, the lookup's gradient); what the tick loop carries is live in all of them
TICK = tuple(phase for phase in PHASES if phase not in ("relayout", *UPDATE))
K = sp.Min(m, p, evaluate=False)  # residual ring slots per stage: the most loaded stage's in-flight micro batches


def in_flight() -> sp.Expr:
    """Micro batches whose residuals every stage's ring holds: K = min(m, p), rank 0's 1F1B count (rank r needs
    min(m, p - r); one SPMD program has one shape on every device)."""
    return K
