"""A compiled-step profile's buffer table as text rows: name, per-device shape, bytes per element, phases, bytes."""

from __future__ import annotations

import sympy as sp

from ..config.symbols import LATEX
from . import expressions as render


def _shape(extents: tuple) -> str:
    return "[" + ", ".join(sp.sstr(sp.sympify(x)) for x in extents) + "]" if extents else "scalar"


def _count(count: sp.Expr) -> int | str:
    """How many equal buffers a row is: an integer, or its expression where it depends on the configuration."""
    count = sp.sympify(count)
    return int(count) if count.is_Integer else sp.sstr(count)


def rows(module, sw) -> list[dict]:
    """Every buffer of the profile's table for these switches (arguments, outputs, the backend's temporaries)."""
    out = []
    for row in module.table(sw):
        out.append(
            {
                "name": row.name,
                "shape": _shape(row.shape),
                "width": sp.sstr(sp.sympify(row.width)),
                "count": _count(row.count),
                "phases": list(row.phases),
                "backend": row.backend,
                "doc": row.doc,
                "bytes": render.text(row.bytes),
                "latex": render.latex(row.bytes),
            }
        )
    return out


def phases(module, sw) -> list[dict]:
    """Each phase as the sum of the buffers live in it, and the peak XLA's heap must hold: the largest phase."""
    from ..recipes.jax.buffers import PHASES, on

    temps = on(module.temporaries(sw), sw.backend)
    out = []
    for phase in PHASES:
        names = [row.name for row in temps if phase in row.phases]
        out.append(
            {
                "name": f"phase.{phase}",
                "bytes": " + ".join(names),
                "latex": " + ".join(rf"\mathrm{{{n}}}".replace("_", r"\_") for n in names),
            }
        )
    return out + [
        {
            "name": "temp",
            "bytes": "Max(" + ", ".join(f"phase.{n}" for n in PHASES) + ")",
            "latex": r"\max(" + ", ".join(rf"\mathrm{{{n}}}".replace("_", r"\_") for n in PHASES) + ")",
        }
    ]


__all__ = ["rows", "phases", "LATEX"]
