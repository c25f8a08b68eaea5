"""Imports run one way: no cycle among the modules of symbolic/ and jaxcheck/, and the rooms depend in one direction.

Source of truth: the import statements themselves, parsed with `ast` (module level and inside functions; `if
TYPE_CHECKING:` blocks are skipped, they never run), and the calls that import by name, `importlib.import_module("x")`
and `__import__("x")`, whose name is a constant. An edge goes to the deepest module an import names. Exact for those;
a call whose name is computed cannot be read, so each such call is listed below with the modules it may load.
"""

import ast
import fnmatch
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("symbolic", "jaxcheck")
JAX = ("jax", "jaxlib", "flax", "optax", "jaxcheck")
ENTRY_POINTS = ("symbolic.cli",)  # the command line; its shared flags are symbolic.flags, a layer below jaxcheck
# the imports by a computed name, (module, the prefix of every module it may load): the CLI's commands, and a
# recipe's profile module loaded by the registry on first use
DYNAMIC = {"symbolic.cli.entry": "symbolic.cli.[!_]*", "symbolic.recipes": "symbolic.recipes.*.profile"}


def _modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = _modules()


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _by_name(node: ast.AST) -> ast.expr | None:
    """The name argument of a call that imports by name (importlib.import_module, import_module, __import__)."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = ast.unparse(node.func)
    return node.args[0] if func in ("importlib.import_module", "import_module", "__import__") else None


def _imports(tree: ast.AST, module: str, is_package: bool, top_only: bool) -> list[str]:
    """Absolute names imported by the statements and import calls under `tree` (not descending into functions if
    top_only)."""
    found = []
    for node in ast.iter_child_nodes(tree):
        if _is_type_checking(node) or (top_only and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))):
            continue
        name = _by_name(node)
        if isinstance(name, ast.Constant) and isinstance(name.value, str):
            found.append(name.value)
        elif name is not None:
            found.append(DYNAMIC.get(module, "?"))  # computed: DYNAMIC names what it may load ("?" fails below)
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = module.split(".") if is_package else module.split(".")[:-1]
                here = here[: len(here) - node.level + 1]
                base = ".".join(here + ([base] if base else []))
            found += [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
        found += _imports(node, module, is_package, top_only)
    return found


def _graph(top_only: bool = False) -> dict[str, set[str]]:
    graph = {}
    for module, path in MODULES.items():
        names = _imports(ast.parse(path.read_text()), module, path.name == "__init__.py", top_only)
        graph[module] = set(names)
    return graph


def _internal(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _targets(name: str) -> set[str]:
    """The internal modules an imported name loads: its deepest module, or every module a DYNAMIC pattern matches."""
    if "*" in name:
        return set(fnmatch.filter(MODULES, name))
    return {t for t in [_internal(name)] if t}


def test_every_import_by_a_computed_name_is_declared():
    """A computed import_module name is one the graph cannot follow: each such call sits in a module of DYNAMIC."""
    assert all("?" not in names for names in _graph().values()), [m for m, n in _graph().items() if "?" in n]


def test_no_import_cycle():
    graph = {m: {t for name in names for t in _targets(name) if t != m} for m, names in _graph().items()}
    state: dict[str, int] = {}  # 1 on the stack, 2 done

    def visit(module: str, stack: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                cycle = stack[stack.index(target) :] + [target]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if target not in state:
                visit(target, stack + [target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


def test_symbolic_never_imports_jax_at_module_level():
    """Not even the CLI: compile, verify and sweep import jaxcheck inside their functions."""
    bad = [
        (m, name)
        for m, names in _graph(top_only=True).items()
        if m.startswith("symbolic")
        for name in names
        if name.split(".")[0] in JAX
    ]
    assert not bad, bad


def test_rooms_depend_one_way():
    """symbolic (outside cli) never imports jaxcheck; jaxcheck.model never imports the cross-check; only the command
    line imports symbolic.cli (jaxcheck.distributed takes its flags from symbolic.flags)."""
    bad = []
    for module, names in _graph().items():
        for name in names:
            if module.startswith("symbolic") and not module.startswith("symbolic.cli") and name.startswith("jaxcheck"):
                bad.append((module, name))
            if module.startswith("jaxcheck.model") and name.startswith("jaxcheck.crosscheck"):
                bad.append((module, name))
            if name.startswith("symbolic.cli") and not module.startswith(ENTRY_POINTS):
                bad.append((module, name))
    assert not bad, bad
