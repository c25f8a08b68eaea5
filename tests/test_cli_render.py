"""What `mem4d formula` shows a person: every part of an expression survives the rich table (no markup eaten)."""

import subprocess
import sys


def _formula(*args: str) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "symbolic.cli", "formula", *args],
        capture_output=True,
        text=True,
        env={"COLUMNS": "200", "PATH": "", "MEM4D_NO_COLOR": "1"},
        check=True,
    )
    return out.stdout


def test_indicator_brackets_are_printed_not_taken_as_markup():
    """Source of truth: the communicators component is 2**29 * ([c > 1] + [d > 1] + [p > 1] + [t > 1])."""
    text = _formula("communicators")
    for axis in "cdpt":
        assert f"[{axis} > 1]" in text


def test_a_nested_piecewise_is_named_once_and_every_name_is_used():
    """A Piecewise inside another (torchtitan's accumulated gradients: the in-flight activations inside `vpp < 2`)
    is named inside the outer one's definition, and no `where` defines a name that nothing reads (the outer's name
    used to swallow the inner, whose definition was printed unused). Source of truth: the names in the text; exact."""
    import re

    import sympy as sp

    from symbolic.render.expressions import text

    x, y, z = sp.symbols("x y z", positive=True)
    inner = sp.Piecewise((x * y, y > 2), (x, True))
    outer = sp.Piecewise((inner + z, z > 1), (z, True))
    out = text(sp.Max(0, outer - x) + y)
    names = re.findall(r"where (n_\d+) =", out)
    assert len(names) == 2, out
    for name in names:  # each defined name is read in the body or in another definition
        assert len(re.findall(rf"\b{name}\b", out)) >= 2, out
