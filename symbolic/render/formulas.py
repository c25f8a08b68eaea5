"""The named formulas a profile exposes to people: its components, total, per-layer tensors and stage totals."""
from __future__ import annotations

from ..components import Component, total
from ..config.switches import Switches
from ..config.symbols import L_r, Le_r, Lg_r, m_r, r
from ..config.training import STAGES
from ..recipes import load


def table_formulas(module, sw: Switches) -> list[Component]:
    """A buffer-table profile (jax): each buffer's bytes, each phase as the sum of its buffers' names, temp as the
    largest phase, total as arguments + output + temp (names stand for the rows above, so each line stays short)."""
    import sympy as sp

    from ..recipes.jax.buffers import PHASES, on

    name = lambda n: sp.Symbol(n, positive=True)
    fixed = module.arguments(sw) + module.outputs(sw)
    temps = on(module.temporaries(sw), sw.backend)
    out = [row.component() for row in fixed + temps]
    out += [Component(f"phase.{ph}", sp.Add(*(name(row.name) for row in temps if ph in row.phases)),
                      f"temporaries live in the {ph} phase") for ph in PHASES]
    temp = sp.Max(*(name(f"phase.{ph}") for ph in PHASES))
    out.append(Component("temp", temp, "XLA's heap of temporaries: the largest phase"))
    out.append(Component("total", sp.Add(*(name(row.name) for row in fixed)) + name("temp"),
                         f"arguments + output + temp ({module.TITLE})"))
    out.append(Component("layer", total(module.layer_tensors(sw)),
                         f"activation bytes one layer keeps for one micro batch ({sw.recompute} recompute)"))
    return out + [Component(f"layer.{part.name}", part.expr, part.doc) for part in module.layer_tensors(sw)]


def formulas(profile: str, sw: Switches) -> list[Component]:
    """Components of the most loaded GPU, "total", "layer" with its tensors ("layer.q", ...), "<stage>.total" of an
    even split, "rank.in_flight" (m_r) and "<stage>.uneven" (the stage total in L_r, m_r) (a buffer-table profile:
    table_formulas)."""
    module = load(profile)
    if hasattr(module, "table"):
        return table_formulas(module, sw)
    parts = module.components(sw)
    out = list(parts) + [Component("total", total(parts), f"sum of the components above ({module.TITLE})")]
    out.append(Component("layer", total(module.layer_tensors(sw)),
                         f"activation bytes one layer keeps for one micro batch ({sw.recompute} recompute)"))
    out += [Component(f"layer.{part.name}", part.expr, part.doc) for part in module.layer_tensors(sw)]
    moe = module.moe_layer_tensors(sw) if hasattr(module, "moe_layer_tensors") else []
    if moe:
        out.append(Component("moe_layer", total(moe), f"activation bytes one MoE layer keeps for one micro batch "
                             f"({sw.recompute} recompute)"))
        out += [Component(f"moe_layer.{part.name}", part.expr, part.doc) for part in moe]
    linear = module.linear_layer_tensors(sw) if hasattr(module, "linear_layer_tensors") else []
    if linear:
        out.append(Component("linear_layer", total(linear), f"activation bytes one Gated DeltaNet layer keeps for one "
                             f"micro batch ({sw.recompute} recompute)"))
        out += [Component(f"linear_layer.{part.name}", part.expr, part.doc) for part in linear]
    for stage in STAGES:
        stage_parts = module.stage_components(sw, stage)
        out.append(Component(f"{stage}.total", total(stage_parts), f"exact total of one GPU of the {stage} stage"))
    out.append(Component("rank.in_flight", module.in_flight(r, sw),
                         "micro batches (of a whole stage) in flight on pipeline rank r at its peak: m_r below"))
    for stage in STAGES[:3]:
        kinds = {"linear_layers": Lg_r} if sw.gdn else {}
        stage_parts = module.stage_components(sw, stage, L_r, m_r, Le_r if sw.moe else None, **kinds)
        held = "L_r layers" + {(True, False): " (Le_r of them MoE layers)", (False, True): " (Lg_r of them Gated "
                               "DeltaNet layers)", (True, True): " (Le_r of them MoE and Lg_r Gated DeltaNet layers)",
                               (False, False): ""}[(sw.moe, sw.gdn)]
        out.append(Component(f"{stage}.uneven", total(stage_parts), f"exact total of one GPU of a {stage} stage "
                             f"holding {held} and m_r in-flight micro batches (--stage-layers)"))
    return out
