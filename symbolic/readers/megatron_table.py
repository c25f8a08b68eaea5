"""Megatron-LM's 838 arguments as its parser defines them (megatron/training/arguments.py @ d98e8a64, listed in
../shared/data/trainers/megatron-lm-arguments.tsv and copied with mem4d's class into megatron_args.tsv): each is
`model` (read into the ModelShape), `train` (read into the Training), `harmless` (its reason) or `refused` (unless at
Megatron-LM's own default), and the value a file gives converted as that parser would."""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

TABLE = Path(__file__).with_name("megatron_args.tsv")
CLASSES = ("model", "train", "harmless", "refused")
LISTS = ("+", "*")  # nargs that take several values


@dataclass(frozen=True)
class Arg:
    """One row of the parser: its option strings, destination, type, default (as the parser prints it), nargs,
    argparse action, and mem4d's class with its one-line reason."""

    flags: tuple[str, ...]
    dest: str
    type: str
    default: str
    nargs: str
    action: str
    cls: str
    reason: str

    @property
    def row(self) -> str:
        """The row's key in the parser's table: its option strings as the TSV lists them."""
        return " ".join(self.flags)

    def megatron_default(self):
        """The parser's default as a Python value (None, a bool, a number or a string)."""
        return literal(self.default)


def literal(text: str):
    """'None' -> None, 'True'/'False' -> bool, numbers -> int/float, "'x'" and an enum's "<Kind.x: 5>" -> 'x', else
    the string."""
    enum = re.fullmatch(r"<\w+\.(\w+): .*>", text)
    if enum:
        return enum.group(1)
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1]
    if text in ("None", ""):
        return None
    if text in ("True", "False"):
        return text == "True"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


@cache
def table() -> dict[str, Arg]:
    """Every option string -> its Arg."""
    out = {}
    with open(TABLE, newline="") as file:
        for row in csv.DictReader(file, delimiter="\t"):
            arg = Arg(
                tuple(row["flags"].split()),
                row["dest"],
                row["type"],
                row["default"],
                row["nargs"],
                row["action"],
                row["class"],
                row["reason"],
            )
            for flag in arg.flags:
                out[flag] = arg
    return out


def convert(arg: Arg, flag: str, value):
    """The value the parser would store for `flag` given `value` (True for a bare flag; a YAML scalar or list; the
    strings of a text file), or None where the flag is not set (a YAML false on a switch); ValueError if malformed."""
    if arg.action in ("_StoreTrueAction", "_StoreFalseAction"):
        if value is True or value == [] or value == "true":
            return arg.action == "_StoreTrueAction"
        if value is False or value == "false":
            return None
        raise ValueError(f"{flag} is a switch: it takes no value (or true/false in YAML), got {value!r}")
    if arg.action == "BooleanOptionalAction":
        if value is True or value == []:
            return not flag.startswith("--no-")
        raise ValueError(f"{flag} is a switch: it takes no value, got {value!r}")
    items = _items(value)
    if arg.nargs in LISTS:
        return [_typed(arg, flag, item) for item in items]
    if len(items) != 1:
        raise ValueError(f"{flag} takes one value, got {len(items)}")
    return _typed(arg, flag, items[0])


def _items(value) -> list:
    """A value as the list of tokens a launcher passes: YAML's '[a b]' strings split as the functional tests' launcher
    splits them, lists as they are, a scalar alone."""
    if isinstance(value, list):
        return value
    if isinstance(value, str) and value.startswith("[") and value.endswith("]"):
        return value[1:-1].split()
    return [value]


def _typed(arg: Arg, flag: str, item):
    if isinstance(item, bool) or item is None:
        raise ValueError(f"{flag} takes a value, got {item!r}")
    if arg.type == "int":
        if isinstance(item, float) or not str(item).lstrip("-").isdigit():
            raise ValueError(f"{flag} takes an integer, got {item!r}")
        return int(item)
    if arg.type == "float":
        try:
            return float(item)
        except ValueError:
            raise ValueError(f"{flag} takes a number, got {item!r}") from None
    return item if isinstance(item, (int, float)) and arg.type not in ("str", "") else str(item)


@dataclass
class Args:
    """A file's arguments by destination (as Megatron-LM's parser stores them), the flag that set each, and the
    problems found while reading them (each '--flag value: why')."""

    path: Path
    values: dict[str, object] = field(default_factory=dict)
    flags: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def get(self, dest: str, default=None):
        """The value the file gives `dest`, else Megatron-LM's default (or `default` where that is None)."""
        if dest in self.values:
            return self.values[dest]
        rows = [arg for arg in table().values() if arg.dest == dest]
        value = rows[0].megatron_default() if rows else None
        return default if value is None else value

    def given(self, dest: str) -> bool:
        return dest in self.values

    def refuse(self, dest: str, why: str) -> None:
        """Note `dest` (as the file spells it, with its value) as not modelled, and why."""
        flag = self.flags.get(dest, "--" + dest.replace("_", "-"))
        value = self.get(dest)
        shown = (
            ""
            if value is None or isinstance(value, bool)
            else " " + (" ".join(map(str, value)) if isinstance(value, list) else str(value))
        )
        shown += "" if dest in self.values or not shown else " (Megatron-LM's default)"
        self.problems.append(f"{flag}{shown} ({why})")
