"""argparse for `mem4d`: bad usage is one line and exit 2, --help shows every default, conflicting flags are refused."""

from __future__ import annotations

import argparse
import re


class HelpFormatter(argparse.HelpFormatter):
    """Appends "(default: X)" to every option whose help does not show its default already (on/off switches and
    options without a default excepted)."""

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if (
            "%(default)" in text
            or "(default:" in text
            or default is None
            or default is argparse.SUPPRESS
            or isinstance(default, bool)
            or default == []
            or not action.option_strings
        ):
            return text
        return text + " (default: %(default)s)"


def _recorded(base: type) -> type:
    """`base` (an argparse store action) that refuses a second flag setting the same destination to another value:
    the same flag given twice (`--dp 2 ... --dp 4`, where argparse lets the last win silently) or two aliases
    (`--zero 0 --dist-opt`). Flags that agree pass; list flags (action "append", e.g. `--overhead`) are not recorded."""

    class Recorded(base):
        def __call__(self, parser, namespace, values, option_string=None):
            super().__call__(parser, namespace, values, option_string)
            value = getattr(namespace, self.dest)
            shown = option_string if self.nargs == 0 else f"{option_string} {values}"
            flag, before, shown_before = parser.given.get(self.dest, (option_string, value, shown))
            if before != value and flag == option_string:
                parser.error(f"{flag} given twice ({shown_before}, then {shown}): give it once")
            if before != value:
                parser.error(f"{shown_before} and {shown} conflict (both set {self.dest}): give one")
            parser.given[self.dest] = (option_string, value, shown)

    Recorded.__name__ = f"Recorded{base.__name__}"
    return Recorded


_ACTIONS = {
    None: argparse._StoreAction,
    "store": argparse._StoreAction,
    "store_const": argparse._StoreConstAction,
    "store_true": argparse._StoreTrueAction,
    "store_false": argparse._StoreFalseAction,
}


class Parser(argparse.ArgumentParser):
    """argparse that reports bad usage as one line and exit 2 (no usage dump), shows every default in --help, and
    refuses two flags that set one option to different values (`--dp 2 --dp 4`, `--recompute none --remat full`,
    `--zero 0 --dist-opt`), whichever flags they are: every store action records which flag set its destination."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        for name, action in _ACTIONS.items():
            self.register("action", name, _recorded(action))
        self.given: dict[str, tuple[str, object, str]] = {}  # dest -> (flag, value, as given)
        # a value starting with "-" and a digit is a value (`--gpu-mem -80GiB`, `--stage-layers -1,81`), refused by the
        # flag's own check, not "expected one argument" (argparse takes only "-5" and "-0.5" for numbers)
        self._negative_number_matcher = re.compile(r"^-\.?\d")

    def parse_known_args(self, args=None, namespace=None):
        self.given = {}
        return super().parse_known_args(args, namespace)

    def error(self, message):
        from ..render.console import literal

        self.exit(2, f"{self.prog}: error: {literal(message)}\n")
