"""The sanitizer's modules form no import cycle: checks reach the session only
through the interface module (check.py), never by importing core.py.

Every import counts, also one inside a function (a lazy import closes a circle
just the same); only imports under ``if TYPE_CHECKING:`` are left out, because
they never run.
"""

from __future__ import annotations

import ast
from pathlib import Path

import torchlint.sanitizer

PACKAGE = "torchlint.sanitizer"
ROOT = Path(torchlint.sanitizer.__file__).parent


def _module_name(path: Path) -> str:
    return PACKAGE if path.name == "__init__.py" else f"{PACKAGE}.{path.stem}"


def _is_type_checking_block(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


def _imported(node: ast.AST, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The package's own modules that one import statement loads."""
    found: set[str] = set()
    if isinstance(node, ast.Import):
        found = {alias.name for alias in node.names}
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = module if is_package else module.rsplit(".", 1)[0]
            for _ in range(node.level - 1):
                base = base.rsplit(".", 1)[0]
            target = f"{base}.{node.module}" if node.module else base
        else:
            target = node.module or ""
        found = {target}
        # `from . import core` loads the module core, not just the package.
        found |= {f"{target}.{alias.name}" for alias in node.names}
    elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module" and node.args:
        first = node.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            name = first.value
            found = {f"{PACKAGE}{name}" if name.startswith(".") else name}
    # The package itself is not an edge: Python initialises a parent package
    # before any of its modules, whoever imports what.
    return {name for name in found if name in known and name not in (module, PACKAGE)}


def module_imports(source: str, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The package's own modules that ``module`` imports, anywhere in its code."""
    edges: set[str] = set()
    pending = list(ast.parse(source).body)
    while pending:
        node = pending.pop()
        if _is_type_checking_block(node):
            pending.extend(node.orelse)
            continue
        edges |= _imported(node, module, is_package, known)
        pending.extend(ast.iter_child_nodes(node))
    return edges


def import_graph() -> dict[str, set[str]]:
    files = {_module_name(path): path for path in ROOT.glob("*.py")}
    known = set(files)
    return {
        module: module_imports(path.read_text(encoding="utf-8"), module, path.name == "__init__.py", known)
        for module, path in files.items()
    }


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a list of modules (first == last), or None."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                return path[path.index(target) :] + [target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        path.pop()
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state:
            cycle = visit(module)
            if cycle:
                return cycle
    return None


def test_the_sanitizer_has_no_import_cycle():
    graph = import_graph()
    assert f"{PACKAGE}.core" in graph and graph[f"{PACKAGE}.core"], "the scan found core.py and its imports"
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_checks_do_not_import_the_core():
    graph = import_graph()
    core = f"{PACKAGE}.core"
    importers = sorted(module for module, targets in graph.items() if core in targets)
    # Only the package's lazy re-export and what starts sessions (the runner, the pytest plugin) may load core.py.
    assert importers == [PACKAGE, f"{PACKAGE}.pytest_plugin", f"{PACKAGE}.runner"]


def test_the_cycle_finder_finds_lazy_and_indirect_cycles():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"b"}}) is None
    source = "def f():\n    from .core import Session\nif TYPE_CHECKING:\n    from .training import X\n"
    module = f"{PACKAGE}.check"
    known = {module, f"{PACKAGE}.core", f"{PACKAGE}.training"}
    assert module_imports(source, module, False, known) == {f"{PACKAGE}.core"}
