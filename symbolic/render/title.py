"""The title line of a command's table, read off its --json report (no sympy, no rich: the cached estimate imports it)."""

from __future__ import annotations


def config_line(report: dict) -> str:
    """A table's title: '<model>, <N> parameters: dp=... tp=... ...', every key of a --json report's "config"."""
    config = " ".join(
        f"{key}={','.join(map(str, value)) if isinstance(value, (list, tuple)) else value}"
        for key, value in report["config"].items()
        if key != "model"
    )
    return f"{report['model']}, {report['param_count']:,} parameters: {config}"
