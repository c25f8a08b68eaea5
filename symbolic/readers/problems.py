"""The one line a trainer's file is refused in: every argument or key mem4d does not model, named at once."""

from __future__ import annotations

from ..config.errors import ConfigError

MAX_NAMED = 12  # problems named in full in one line; the rest counted


def refuse(path, problems: list[str], noun: str, version: str = "") -> None:
    """Raise one ConfigError line naming each distinct problem of the file at `path` (the first MAX_NAMED in full),
    `noun` the thing each names (argument, key), `version` the trainer's release its table was read from; or nothing."""
    problems = list(dict.fromkeys(problems))
    if not problems:
        return
    shown = "; ".join(problems[:MAX_NAMED]) + (
        f"; and {len(problems) - MAX_NAMED} more" if problems[MAX_NAMED:] else ""
    )
    nouns = noun if len(problems) == 1 else f"{noun}s"
    where = f" ({version})" if version else ""
    raise ConfigError(f"{path}: {len(problems)} {nouns} mem4d does not model or cannot read{where}: {shown}")
