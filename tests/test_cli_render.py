"""What `mem4d formula` shows a person: every part of an expression survives the rich table (no markup eaten)."""
import subprocess
import sys


def _formula(*args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "symbolic.cli", "formula", *args], capture_output=True, text=True,
                         env={"COLUMNS": "200", "PATH": "", "MEM4D_NO_COLOR": "1"}, check=True)
    return out.stdout


def test_indicator_brackets_are_printed_not_taken_as_markup():
    """Source of truth: the communicators component is 2**29 * ([c > 1] + [d > 1] + [p > 1] + [t > 1])."""
    text = _formula("communicators")
    for axis in "cdpt":
        assert f"[{axis} > 1]" in text
