"""The rule table as JavaScript: each rule's predicate and message run once on tracers that record the operations
(the page's letters), so the page checks the same rows the CLI does, not a copy of them."""

from __future__ import annotations

import json
from types import SimpleNamespace

from ..config import rules
from ..config.errors import ConfigError
from ..recipes import select


class Untraceable(Exception):
    """A rule branches on a value (Python's `if`/`and`/`or`): it cannot be recorded as one expression."""


def _code(x) -> str:
    """JavaScript of a tracer, or of a constant the rule combined with one."""
    if isinstance(x, Js):
        return x.code
    if isinstance(x, (bool, type(None))) or type(x).__name__ == "bool_":
        return "true" if x else "false"
    if isinstance(x, (int, float, str)):
        return json.dumps(x)
    raise Untraceable(f"constant of type {type(x).__name__}")


def _logic(a, b, op: str):
    """a | b or a & b, folding a constant true/false (what the page holds fixed)."""
    consts = [bool(v) for v in (a, b) if not isinstance(v, Js)]
    if consts and op == "||" and any(consts):
        return True
    if consts and op == "&&" and not all(consts):
        return False
    live = [v for v in (a, b) if isinstance(v, Js)]
    return live[0] if len(live) == 1 else Js(f"({live[0].code} {op} {live[1].code})")


class Js:
    """A value the page supplies at run time, recording what a rule computes of it as JavaScript source."""

    __array_priority__ = 1000

    def __init__(self, code: str):
        self.code = code

    def __bool__(self):
        if _DECISIONS:
            return _DECISIONS[-1](self)
        raise Untraceable(self.code)

    def _bin(self, other, op, swap=False):
        a, b = (_code(other), self.code) if swap else (self.code, _code(other))
        return Js(f"({a} {op} {b})")

    __add__ = lambda s, o: s._bin(o, "+")  # noqa: E731
    __radd__ = lambda s, o: s._bin(o, "+", True)  # noqa: E731
    __sub__ = lambda s, o: s._bin(o, "-")  # noqa: E731
    __rsub__ = lambda s, o: s._bin(o, "-", True)  # noqa: E731
    __mul__ = lambda s, o: s._bin(o, "*")  # noqa: E731
    __rmul__ = lambda s, o: s._bin(o, "*", True)  # noqa: E731
    __truediv__ = lambda s, o: s._bin(o, "/")  # noqa: E731
    __mod__ = lambda s, o: s._bin(o, "%")  # noqa: E731
    __rmod__ = lambda s, o: s._bin(o, "%", True)  # noqa: E731
    __eq__ = lambda s, o: s._bin(o, "===")  # noqa: E731
    __ne__ = lambda s, o: s._bin(o, "!==")  # noqa: E731
    __lt__ = lambda s, o: s._bin(o, "<")  # noqa: E731
    __le__ = lambda s, o: s._bin(o, "<=")  # noqa: E731
    __gt__ = lambda s, o: s._bin(o, ">")  # noqa: E731
    __ge__ = lambda s, o: s._bin(o, ">=")  # noqa: E731
    __or__ = __ror__ = lambda s, o: _logic(s, o, "||")  # noqa: E731
    __and__ = __rand__ = lambda s, o: _logic(s, o, "&&")  # noqa: E731
    __hash__ = None

    def __floordiv__(self, other):
        return Js(f"Math.floor({self.code} / {_code(other)})")

    def __rfloordiv__(self, other):
        return Js(f"Math.floor({_code(other)} / {self.code})")

    def __invert__(self):
        return Js(f"!{self.code}")

    logical_not = __invert__  # numpy's logical_not on an object calls this

    def __format__(self, spec: str) -> str:
        return "${" + (f"fmt({self.code}, {json.dumps(spec)})" if spec else self.code) + "}"

    def __str__(self):
        return "${" + self.code + "}"


class _Branch(Exception):
    """A message branched on a value not decided yet."""


_DECISIONS: list = []  # the branch taken at each bool() of a tracer while a message runs (explore)


def _template(text: str) -> str:
    return "`" + text.replace("\\", "\\\\").replace("`", "\\`") + "`"


def _explore(fn, x, prefix: tuple = ()) -> str:
    """fn(x) (a message) as one JavaScript expression: where it branches on a tracer (Python's if/or), each way is
    run in turn and joined by the condition, so `L % (p vpp)`'s hint reads as the CLI prints it."""
    asked: list[str] = []

    def decide(tracer):
        asked.append(tracer.code)
        if len(asked) <= len(prefix):
            return prefix[len(asked) - 1]
        raise _Branch

    _DECISIONS.append(decide)
    try:
        return _template(fn(x))
    except _Branch:
        pass
    finally:
        _DECISIONS.pop()
    cond = asked[len(prefix)]
    return f"({cond} ? {_explore(fn, x, prefix + (True,))} : {_explore(fn, x, prefix + (False,))})"


def _isin(value, values, isin):
    """numpy.isin of a tracer: whether the page's value is one of `values`."""
    return Js(f"{json.dumps(list(values))}.includes({value.code})") if isinstance(value, Js) else isin(value, values)


def _not(x):
    return ~x if isinstance(x, Js) else not x


def tracers(fixed: dict, letters: tuple[str, ...]) -> SimpleNamespace:
    """A namespace as rules.letters makes one: `letters` read from the page's x (tracers), the rest `fixed`."""
    return SimpleNamespace(**fixed, **{name: Js(f"x.{name}") for name in letters})


def trace(rule: rules.Rule, x: SimpleNamespace) -> dict | None:
    """{name, holds: JS source, message: a JS expression of x} of one rule; None where it holds whatever the page sets."""
    import numpy as np

    saved, np.logical_not = np.logical_not, _not  # numpy's own would ask the tracer for a bool
    isin, np.isin = np.isin, lambda v, values: _isin(v, values, isin)
    try:
        holds = rule.holds(x)
        message = _explore(rule.message, x) if isinstance(holds, Js) else ""
    except Untraceable as err:
        raise ConfigError(f"rule {rule.name!r} cannot be evaluated in the page: it branches on {err}") from None
    finally:
        np.logical_not, np.isin = saved, isin
    if not isinstance(holds, Js):
        if bool(holds):
            return None
        raise ConfigError(f"rule {rule.name!r} breaks under every setting the page offers")
    return {"name": rule.name, "holds": holds.code, "message": message}


def rules_js(profile: str, fixed: dict, letters: tuple[str, ...]) -> list[dict]:
    """Every rule binding `profile` that the page's letters can break, traced (rules.letters' names)."""
    x = tracers(fixed, letters)
    return [row for row in (trace(rule, x) for rule in select(profile)) if row is not None]
