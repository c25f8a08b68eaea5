"""The rich Console every command prints with: a closed stdout raises BrokenPipeError (the CLI's exit 141, one
policy for every command) where rich's own Console raises SystemExit(1) with no message."""
from __future__ import annotations

import os

from rich.console import Console as _Console


class Console(_Console):
    """rich's Console, MEM4D_NO_COLOR honoured, a closed pipe passed on as BrokenPipeError."""

    def __init__(self, min_width: int | None = None, **kwargs):
        kwargs.setdefault("no_color", bool(os.environ.get("MEM4D_NO_COLOR")))
        if min_width is not None:
            kwargs["width"] = max(min_width, _Console().width)
        super().__init__(**kwargs)

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError("stdout closed")
