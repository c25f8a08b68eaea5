"""The named formulas a profile exposes to people: its components, total, per-layer tensors and stage totals."""
from __future__ import annotations

from ..components import Component, layer_activation, total
from ..config.errors import ConfigError
from ..config.training import STAGES
from ..profiles import load


def formulas(profile: str, sw: Switches) -> list[Component]:
    """Components of the most loaded GPU, "total", "layer" with its tensors ("layer.q", ...), and "<stage>.total"."""
    module = load(profile)
    parts = module.components(sw)
    out = list(parts) + [Component("total", total(parts), f"sum of the components above ({module.TITLE})")]
    out.append(Component("layer", layer_activation(sw),
                         f"activation bytes one layer keeps for one micro batch ({sw.recompute} recompute)"))
    out += [Component(f"layer.{part.name}", part.expr, part.doc) for part in module.layer_tensors(sw)]
    for stage in STAGES:
        stage_parts = module.stage_components(sw, stage)
        out.append(Component(f"{stage}.total", total(stage_parts), f"exact total of one GPU of the {stage} stage"))
    return out


def select(items: list[Component], name: str | None) -> list[Component]:
    """All formulas, or the one called `name` (one-line ConfigError listing the names otherwise)."""
    if name is None:
        return items
    chosen = [item for item in items if item.name == name]
    if not chosen:
        raise ConfigError(f"unknown component {name!r} (choose from {', '.join(item.name for item in items)})")
    return chosen
