"""The rich Console and Table every command prints with: text printed literally (no rich markup, control characters
escaped); a table never cuts a number (wider than a terminal: columns give way, named in a note; into a file or a
pipe: printed as wide as it needs); a closed stdout raised as BrokenPipeError (the CLI's exit 141, one policy for
every command) where rich's own Console raises SystemExit(1) with no message."""

from __future__ import annotations

import os
import re

from rich import box
from rich.console import Console as _Console
from rich.measure import Measurement
from rich.table import Table as _Table
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
        probe = _Console(**{k: v for k, v in kwargs.items() if k in ("file", "stderr")})
        if min_width is not None and not probe.is_terminal:  # into a file or a pipe; a terminal keeps its width
            kwargs["width"] = max(min_width, probe.width)
        super().__init__(**kwargs)

    def render_str(self, text: str, **kwargs) -> Text:
        """Every string a table or print renders (titles, cells, lines) goes through here: escaped to one line. A
        header or cell that wraps on purpose passes a rich Text instead."""
        return super().render_str(literal(text), **kwargs)

    def print(self, *objects, **kwargs) -> None:
        """rich's print, each Table fitted first (`fit`): on a terminal, the columns that give way noted below it."""
        for item in objects:
            if isinstance(item, _Table) and "width" not in kwargs:
                width, dropped = fit(self, item)
                kept, self.width = self.width, width  # rich's print(width=) is capped at the console's own width
                try:
                    super().print(item, **kwargs)
                finally:
                    self.width = kept
                if dropped:
                    super().print(_note(item, dropped, self.width), **kwargs)
            else:
                super().print(item, **kwargs)

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError("stdout closed")


class Table(_Table):
    """rich's Table, with the order in which its columns give way on a terminal too narrow to show every number whole
    (`give_way`: column indices, first to go first; default: from the right, never the first column) and how to see
    them all (`see`, e.g. "--json")."""

    def __init__(self, *args, see: str = "--json", **kwargs):
        kwargs.setdefault("title_justify", "left")
        super().__init__(*args, **kwargs)
        self.give_way: list[int] | None = None
        self.see = see


def _ranges(console: _Console, table: _Table) -> list[Measurement]:
    """Each column's narrowest and natural width, padding included (rich cuts a cell only below the narrowest)."""
    for index, column in enumerate(table.columns):  # after columns gave way: first and last decide the edge padding
        column._index = index
    options = console.options.update_width(10**6)
    return [table._measure_column(console, options, column) for column in table.columns]


def _needed(console: _Console, table: _Table) -> int:
    """The narrowest width at which every cell of `table` shows whole."""
    return sum(r.minimum for r in _ranges(console, table)) + table._extra_width


def fit(console: _Console, table: _Table) -> tuple[int, list]:
    """The width to print `table` at and the columns removed from it so that no cell is cut: into a file or a pipe,
    its natural width (a row a line, for grep); on a terminal, its width, the columns giving way (Table.give_way) until the rest fit.
    The columns' widths are then fixed (`_pin`): rich's own shrinking takes no account of a column's narrowest."""
    natural = sum(r.maximum for r in _ranges(console, table)) + table._extra_width  # every row on one line
    width = console.width if console.is_terminal else max(console.width, natural)
    dropped: list = []
    if _needed(console, table) > width:  # a terminal too narrow: first the vertical rules go, then columns
        table.box, table.show_edge = box.SIMPLE_HEAD, False
        columns = list(table.columns)
        given = getattr(table, "give_way", None) or []
        order = [*given, *(i for i in range(len(columns) - 1, 0, -1) if i not in given)]  # never the first column
        for index in order:
            if _needed(console, table) <= width:
                break
            dropped.append(columns[index])
            table.columns[:] = [c for c in columns if not any(c is d for d in dropped)]
    _pin(console, table, width)
    return width, dropped


def _pin(console: _Console, table: _Table, width: int) -> None:
    """Where `table` is wider than `width` at its natural widths: each column at its narrowest, the room left given to
    the columns that need least of it to reach their natural width first (fewest wrapped cells)."""
    ranges = _ranges(console, table)
    room = width - table._extra_width - sum(r.minimum for r in ranges)
    if sum(r.maximum for r in ranges) + table._extra_width <= width or room < 0:
        return
    widths = [r.minimum for r in ranges]
    for i in sorted(range(len(ranges)), key=lambda i: ranges[i].maximum - ranges[i].minimum):
        give = min(room, ranges[i].maximum - widths[i])
        widths[i], room = widths[i] + give, room - give
    for index, (column, w) in enumerate(zip(table.columns, widths)):
        column.width = w - table._get_padding_width(index)


def _note(table: _Table, dropped: list, width: int) -> str:
    """The line under a table whose columns gave way: which, and how to see them."""
    names = ", ".join(str(column.header).replace("\n", "_") for column in dropped)
    see = getattr(table, "see", "--json")
    return (
        f"{len(dropped)} column{'s' * (len(dropped) > 1)} not shown at {width} columns, so that no number is cut: "
        f"{names} (a wider terminal, `| less -S`, or {see} shows every column)"
    )
