"""The named formulas a profile exposes to people: its components, total, per-layer tensors and stage totals."""

from __future__ import annotations

from ..components import Component, total
from ..config.switches import Switches
from ..config.kinds import present
from ..config.symbols import BY_NAME, L_r, Le_r, m_r, r
from ..config.stages import STAGES
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
    out += [
        Component(
            f"phase.{ph}",
            sp.Add(*(name(row.name) for row in temps if ph in row.phases)),
            f"temporaries live in the {ph} phase",
        )
        for ph in PHASES
    ]
    temp = sp.Max(*(name(f"phase.{ph}") for ph in PHASES))
    out.append(Component("temp", temp, "XLA's heap of temporaries: the largest phase"))
    out.append(
        Component(
            "total",
            sp.Add(*(name(row.name) for row in fixed)) + name("temp"),
            f"arguments + output + temp ({module.TITLE})",
        )
    )
    return out + _layer(module, sw)


def _layer(module, sw: Switches) -> list[Component]:
    """The component "layer", the activation bytes one layer keeps for one micro batch, and its tensors ("layer.q")."""
    tensors = module.layer_tensors(sw)
    base = (
        " (a layer of softmax attention and a dense MLP: the hybrid's other layer kinds are counted as their "
        "differences from it)"
        if present(sw)
        else ""
    )
    doc = f"activation bytes one layer keeps for one micro batch ({sw.recompute} recompute){base}"
    return [Component("layer", total(tensors), doc)] + [Component(f"layer.{t.name}", t.expr, t.doc) for t in tensors]


KIND_NAMES = {
    "Lg_r": "Gated DeltaNet layers",
    "Lm_r": "Mamba-2 layers",
    "Lo_r": "layers of an MLP alone",
    "Ln_r": "layers of a mixer alone",
    "Lw_r": "sliding-window layers of their own KV heads",
    "Lb_r": "layers in BF16 outside the FP8 context",
    "Lbe_r": "MoE layers among those in BF16",
}


def formulas(profile: str, sw: Switches) -> list[Component]:
    """Components of the most loaded GPU, "total", "layer" with its tensors ("layer.q", ...), "<stage>.total" of an
    even split, "rank.in_flight" (m_r) and "<stage>.uneven" (the stage total in L_r, m_r) (a buffer-table profile:
    table_formulas)."""
    module = load(profile)
    if hasattr(module, "table"):
        return table_formulas(module, sw)
    parts = module.components(sw)
    out = list(parts) + [Component("total", total(parts), f"sum of the components above ({module.TITLE})")]
    out += _layer(module, sw)
    moe = module.moe_layer_tensors(sw) if hasattr(module, "moe_layer_tensors") else []
    if moe:
        out.append(
            Component(
                "moe_layer",
                total(moe),
                f"activation bytes one MoE layer keeps for one micro batch ({sw.recompute} recompute)",
            )
        )
        out += [Component(f"moe_layer.{part.name}", part.expr, part.doc) for part in moe]
    for kind, what in (("linear_layer", "Gated DeltaNet layer"), ("mamba_layer", "Mamba-2 layer")):
        tensors = getattr(module, f"{kind}_tensors")(sw) if hasattr(module, f"{kind}_tensors") else []
        if tensors:
            out.append(
                Component(
                    kind,
                    total(tensors),
                    f"activation bytes one {what} keeps for one micro batch ({sw.recompute} recompute)",
                )
            )
            out += [Component(f"{kind}.{part.name}", part.expr, part.doc) for part in tensors]
    for stage in STAGES:
        stage_parts = module.stage_components(sw, stage)
        out.append(Component(f"{stage}.total", total(stage_parts), f"exact total of one GPU of the {stage} stage"))
    out.append(
        Component(
            "rank.in_flight",
            module.in_flight(r, sw),
            "micro batches (of a whole stage) in flight on pipeline rank r at its peak: m_r below",
        )
    )
    for stage in STAGES[:3]:
        kinds = {name: BY_NAME[name] for name in present(sw)}
        stage_parts = module.stage_components(
            sw, stage, L_r, m_r, Le_r if sw.moe else None, **({"kinds": kinds} if kinds else {})
        )
        named = (["Le_r MoE layers"] if sw.moe else []) + [f"{name} {KIND_NAMES[name]}" for name in kinds]
        held = "L_r layers" + (
            f" (of them {', '.join(named)})" if kinds else " (Le_r of them MoE layers)" if sw.moe else ""
        )
        out.append(
            Component(
                f"{stage}.uneven",
                total(stage_parts),
                f"exact total of one GPU of a {stage} stage "
                f"holding {held} and m_r in-flight micro batches (--stage-layers)",
            )
        )
    return out
