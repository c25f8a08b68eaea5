"""The rich Console every command prints with: text printed literally (no rich markup, control characters escaped),
and a closed stdout raised as BrokenPipeError (the CLI's exit 141, one policy for every command) where rich's own
Console raises SystemExit(1) with no message."""
from __future__ import annotations

import os
import re

from rich.console import Console as _Console
from rich.text import Text

# C0 controls (newline and tab included), DEL and C1 controls: what could move the cursor, colour the terminal, set
# its title or forge an output line when a name from a downloaded config.json holds it
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def literal(text: str) -> str:
    """`text` with every control character written as its Python escape (ESC -> \\x1b, newline -> \\n): one line,
    nothing a terminal would act on."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


class Console(_Console):
    """rich's Console, MEM4D_NO_COLOR honoured, strings printed as written (markup off: `[v2]` stays), control
    characters escaped, a closed pipe passed on as BrokenPipeError."""

    def __init__(self, min_width: int | None = None, **kwargs):
        kwargs.setdefault("no_color", bool(os.environ.get("MEM4D_NO_COLOR")))
        kwargs.setdefault("markup", False)
        if min_width is not None:
            kwargs["width"] = max(min_width, _Console().width)
        super().__init__(**kwargs)

    def render_str(self, text: str, **kwargs) -> Text:
        """Every string a table or print renders (titles, cells, lines) goes through here: escaped to one line. A
        header or cell that wraps on purpose passes a rich Text instead."""
        return super().render_str(literal(text), **kwargs)

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError("stdout closed")
