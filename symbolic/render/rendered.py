"""A profile's formulas as people read them (simplified text and LaTeX, the buffer table), cached on disk like the
estimator code: a warm `mem4d formula` or `mem4d latex` imports no sympy."""

from __future__ import annotations

from pathlib import Path

from ..config.errors import ConfigError
from ..config.switches import Switches
from ..estimator.codegen import cached

_HERE = Path(__file__).resolve().parent
SOURCES = tuple(_HERE / name for name in ("rendered.py", "expressions.py", "formulas.py", "table.py"))


def rendered(profile: str, switches: Switches) -> dict:
    """{"title", "description", "formulas": [{name, doc, text, latex}], "buffers": rows or None, "phases": sums or
    None, "phase_names"} of a profile under these switches (`buffers` and `phases`: a buffer-table profile)."""
    return cached(profile, switches, lambda: _render(profile, switches), kind="rendered", sources=SOURCES)


def _render(profile: str, switches: Switches) -> dict:
    from ..recipes.jax.buffers import PHASES
    from ..recipes import load
    from . import expressions as render
    from .formulas import formulas

    module = load(profile)
    out = {
        "title": module.TITLE,
        "description": module.DESCRIPTION,
        "buffers": None,
        "phases": None,
        "phase_names": list(PHASES),
        "formulas": [
            {"name": item.name, "doc": item.doc, "text": render.text(item.expr), "latex": render.latex(item.expr)}
            for item in formulas(profile, switches)
        ],
    }
    if hasattr(module, "table"):
        from . import table

        out.update(buffers=table.rows(module, switches), phases=table.phases(module, switches))
    return out


def select(items: list[dict], name: str | None) -> list[dict]:
    """All rendered formulas, or the one called `name` (one-line ConfigError listing the names otherwise)."""
    if name is None:
        return items
    chosen = [item for item in items if item["name"] == name]
    if not chosen:
        raise ConfigError(f"unknown component {name!r} (choose from {', '.join(item['name'] for item in items)})")
    return chosen
