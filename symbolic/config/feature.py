"""How a model feature is declared (features.py, one `feature(...)` line each): what the field's metadata holds, and
how the rule table may read it (NAME, LETTER). No sympy."""

from __future__ import annotations

from dataclasses import MISSING, field

NAME, LETTER = "name", "letter"  # how the rule table reads a feature: under its field name, or its glossary letter


def feature(
    default=MISSING,
    doc: str = "",
    *,
    letter: str | None = None,
    keys: tuple[str, ...] = (),
    rule=None,
    choices: tuple[str, ...] = (),
    switch: bool = False,
    after: str | None = None,
):
    """One ModelShape field: its default (none: required), what it is, its glossary letter, the config.json keys it is
    read from, whether the rules read it (NAME, LETTER; None: not), the values it accepts (a named choice: ModelShape
    refuses any other), and whether it is also Architecture's switch of the same name, read unchanged (a count as
    whether it is above 0); `after` puts that switch after the one named, not in the table's order (architecture.py)."""
    return field(
        default=default,
        metadata={
            "doc": doc,
            "letter": letter,
            "keys": keys,
            "rule": rule,
            "choices": choices,
            "switch": switch,
            "after": after,
        },
    )
