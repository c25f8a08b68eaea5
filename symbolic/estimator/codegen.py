"""Derive a profile's expressions once, lambdify them with cse=True, and cache the generated numpy source on disk."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Callable, Iterable

import numpy

from ..config.glossary import NAMES, STAGE_NAMES
from ..config.switches import Switches
from . import shipped


_HERE = Path(__file__).resolve().parent
_ROOT = _HERE.parent  # symbolic/


def cache_dir() -> Path:
    """$MEM4D_CACHE_DIR, else $XDG_CACHE_HOME/mem4d, else ~/.cache/mem4d."""
    if os.environ.get("MEM4D_CACHE_DIR"):
        return Path(os.environ["MEM4D_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mem4d"


def _source_files(profile: str) -> list[Path]:
    """The files a profile's expressions come from: config (glossary...), codegen, components, the registry and the
    shared recipe code, and every file of the profile's own package."""
    from ..recipes import PROFILES

    files = [_HERE / "codegen.py"] + sorted((_ROOT / "recipes").glob("*.py"))
    files += sorted((_ROOT / "config").glob("*.py")) + sorted((_ROOT / "components").rglob("*.py"))
    if profile in PROFILES:
        files += sorted((_ROOT / "recipes" / PROFILES[profile].package).glob("*.py"))
    return files


def cache_key(profile: str, switches: Switches, sources: Iterable[Path] = ()) -> str:
    """Hash of the symbolic sources (and `sources`, the code that turns expressions into what is cached), the
    installed sympy version, the profile and its switches."""
    return _switches_key(profile, switches, tuple(sources))


@functools.lru_cache(maxsize=None)
def _switches_key(profile: str, switches: Switches, sources: tuple[Path, ...]) -> str:
    """cache_key, once a process for each profile, switches and sources."""
    return key_of(profile, asdict(switches), sources)


def key_of(profile: str, fields: dict, sources: Iterable[Path] = ()) -> str:
    """cache_key of the switches' fields (asdict), as the shipped archive's manifest records them."""
    digest = hashlib.sha256(json.dumps([profile, sorted(fields.items())]).encode())
    digest.update(_sources_bytes(profile, tuple(sources)))
    digest.update(_sympy_version())
    return digest.hexdigest()[:24]


@functools.lru_cache(maxsize=None)
def _sources_bytes(profile: str, sources: tuple[Path, ...]) -> bytes:
    """Each source file's name and bytes, one after another, read once a process (a plan computes dozens of keys over
    the same hundred files; the process runs the code it imported at its start anyway)."""
    return b"".join(path.name.encode() + path.read_bytes() for path in [*_source_files(profile), *sources])


@functools.lru_cache(maxsize=None)
def _sympy_version() -> bytes:
    """The installed sympy's version (no metadata: empty, the sources alone key the cache), looked up once: from the
    name of the first sympy-<version>.dist-info folder on sys.path, where importlib.metadata finds it too (its
    version() parses the METADATA file with the email package, 0.05 s of imports), else through importlib.metadata."""
    for folder in sys.path:
        found = sorted(Path(folder or ".").glob("sympy-*.dist-info"))
        if found:
            return found[0].name.removeprefix("sympy-").removesuffix(".dist-info").encode()
    try:
        from importlib.metadata import version

        return version("sympy").encode()
    except Exception:  # noqa: BLE001
        return b""


# the printer's settings: terms printed in the order sympy holds them ("none": not sorted, a quarter of the printing
# time; deterministic across runs and hash seeds); benchmarks/bench_codegen.py times the sorted order against it
PRINTER = {"fully_qualified_modules": True, "allow_unknown_functions": False, "order": "none"}


def _lambdify_source(exprs: list, name: str, extra: tuple[str, ...] = ()) -> str:
    """numpy source of one function of the glossary's NAMES (then `extra` letters) returning a tuple of the
    expressions, written as sympy's lambdify writes it (its function printer, CSE first) without what lambdify does
    around it: sorting the arguments to look for names that need replacing (none does: every glossary letter is a
    plain symbol whose name is an identifier), then executing the source and reading it back (a quarter of a
    derivation's time; the source is the same string, test_estimator checks it against lambdify's)."""
    from ..config.symbols import BY_NAME

    args = [BY_NAME[n] for n in NAMES + extra]
    cses, reduced = CSE(tuple(exprs))
    return _function_printer()(_printer_class()(PRINTER), False).doprint(name, args, reduced, cses=cses)


@functools.lru_cache(maxsize=None)
def _function_printer():
    """sympy's lambdify function printer, with its argument names taken as they are (lambdify's own _preprocess
    sorts the arguments and substitutes dummies for names that are no identifiers: the glossary has none)."""
    from sympy.utilities.lambdify import _EvaluatorPrinter

    class FunctionPrinter(_EvaluatorPrinter):
        def _preprocess(self, args, expr, cses=(), _dummies_dict=None):
            assert all(arg.is_symbol and self._is_safe_ident(str(arg)) for arg in args)
            return [str(arg) for arg in args], expr

    return FunctionPrinter


def _cse_unevaluated(exprs, order: str = "none"):
    """sympy's common-subexpression elimination with the rebuilt expressions left unevaluated: the same terms, without
    re-running Max's and Piecewise's argument collapsing (factor_terms) on every rebuilt node, most of a derive's time
    (median 1.9x faster than sympy's default: benchmarks/bench_codegen.py), and the subexpressions taken in the order
    they come rather than sorted (order "none": derivations 1.3x faster, the generated code as fast; the generated
    code computes the same values: golden.py's 40 cases, plan's among them, equal byte for byte)."""
    import sympy as sp

    with sp.evaluate(False):
        return sp.cse(exprs, order=order)


CSE = _cse_unevaluated  # what lambdify eliminates common subexpressions with (benchmarks/bench_codegen.py swaps it)


def _printer_class():
    """NumPyPrinter that prints Piecewise as nested numpy.where, an Iverson bracket [x > 1] as numpy.greater(x, 1)
    (select() builds lists of full-size arrays; where/greater are several times cheaper and give the same numbers), and
    And, Or, Max and Min as nested binary ufuncs that broadcast."""
    import sympy as sp
    from sympy.printing.numpy import NumPyPrinter

    class Printer(NumPyPrinter):
        def _print_Piecewise(self, expr):
            pieces = list(expr.args)
            if pieces[-1].cond is not sp.true:
                return super()._print_Piecewise(expr)
            if len(pieces) == 2 and pieces[0].expr == 1 and pieces[1].expr == 0:
                return f"(1.0*{self._print(pieces[0].cond)})"
            out = self._print(pieces[-1].expr)
            for piece in reversed(pieces[:-1]):
                out = f"numpy.where({self._print(piece.cond)}, {self._print(piece.expr)}, {out})"
            return out

        def _fold(self, ufunc: str, args) -> str:
            """args folded through a binary ufunc, which broadcasts a scalar against an array (NumPyPrinter's
            `amax((a, b), axis=0)` and `logical_and.reduce((a, b))` stack their arguments first and fail on
            operands of different shapes: a plan row's array beside a constant the row's switches fixed)."""
            out = self._print(args[0])
            for arg in args[1:]:
                out = f"{ufunc}({out}, {self._print(arg)})"
            return out

        def _print_And(self, expr):
            return self._fold("numpy.logical_and", expr.args)

        def _print_Or(self, expr):
            return self._fold("numpy.logical_or", expr.args)

        def _print_Max(self, expr):
            return self._fold("numpy.maximum", expr.args)

        def _print_Min(self, expr):
            return self._fold("numpy.minimum", expr.args)

    return Printer


def derive(profile: str, switches: Switches) -> dict:
    """Build the expressions of a profile under these switches and return names + generated sources (uncached): the
    main function (the most loaded GPU's components and total, of NAMES), one function per stage kind (its
    components and total, of NAMES and STAGE_NAMES: its layers, in-flight micro batches, MoE layers and a hybrid's
    kinds) with its
    total alone (what plan's split search reads many times), and the in-flight count
    of rank r (of NAMES and r)."""
    from ..components import total
    from ..config.kinds import present
    from ..config.symbols import BY_NAME, L_r, Le_r, m_r, r
    from ..config.stages import STAGES
    from ..recipes import load

    module = load(profile)
    parts = module.components(switches)
    main = [part.expr for part in parts] + [total(parts)]
    stages = {}
    for stage in STAGES:
        kinds = {name: BY_NAME[name] for name in present(switches)}  # a hybrid's (only Megatron-LM's recipe has them)
        stage_parts = module.stage_components(switches, stage, L_r, m_r, Le_r, **({"kinds": kinds} if kinds else {}))
        stages[stage] = {
            "outputs": [part.name for part in stage_parts] + ["total"],
            "source": _lambdify_source(
                [part.expr for part in stage_parts] + [total(stage_parts)], f"_{stage}", STAGE_NAMES
            ),
            "total_source": _lambdify_source([total(stage_parts)], f"_{stage}_total", STAGE_NAMES),
        }
    return {
        "inputs": list(NAMES),
        "components": [part.name for part in parts] + ["total"],
        "main_source": _lambdify_source(main, "_main"),
        "stages": stages,
        "in_flight_source": _lambdify_source([module.in_flight(r, switches)], "_in_flight", ("r",)),
    }


def compile_source(source: str, name: str):
    """Execute generated source in a namespace holding only numpy and functools; return the function."""
    namespace = {"numpy": numpy, "functools": functools, "builtins": __builtins__}
    exec(compile(source, f"<mem4d {name}>", "exec"), namespace)  # noqa: S102  (our own generated code)
    return namespace[name]


def derived(profile: str, switches: Switches) -> dict:
    """derive() through the on-disk cache. On a hit nothing imports sympy (`mem4d estimate` starts in well under a
    second)."""
    return cached(profile, switches, lambda: derive(profile, switches))


def cache_name(profile: str, switches: Switches, kind: str = "", sources: Iterable[Path] = (), extra: str = "") -> str:
    """The cache file's name: kind, profile, switches and `extra`'s hash, then cache_key."""
    extra_tag = hashlib.sha256(extra.encode()).hexdigest()[:12] if extra else ""
    tag = "-".join(filter(None, (kind, profile, switches.tag(), extra_tag)))
    return f"{tag}-{cache_key(profile, switches, sources)}.json"


def cached(
    profile: str,
    switches: Switches,
    build: Callable[[], dict],
    kind: str = "",
    sources: Iterable[Path] = (),
    extra: str = "",
) -> dict:
    """build() through the on-disk cache: one JSON file per kind (estimator code: "", rendered text: "rendered", a
    report's formulas: "report"), profile, switches and `extra` (what else the result depends on), keyed by
    cache_key (the symbolic sources and `sources`), so any edit of a formula invalidates it; an unreadable or
    unwritable cache only costs the build time. A miss is looked up in the shipped archive (shipped.py) before
    it is built; a build a terminal waits a second for is announced there."""
    path = cache_dir() / cache_name(profile, switches, kind, sources, extra)
    tag = path.name.rsplit("-", 1)[0]
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        pass
    result = shipped.lookup(path.name)  # what the release derived, under the same name (stale ones: other names)
    if result is not None:
        return result
    started = shipped.NOTICE.start(path.parent)
    try:
        result = build()
    finally:
        shipped.NOTICE.stop(started)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        for stale in path.parent.glob(f"{tag}-*.json"):  # built from older sources
            stale.unlink(missing_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as tmp:
            json.dump(result, tmp)
        os.replace(tmp.name, path)
    except OSError:
        pass
    return result
