"""The package's layers, kept by a test: each module imports only from its own layer and the
layers below it, never takes a private name from another module, and no module imports itself
back through others (no import cycles).

From the top floor down: ``cli`` -> ``rules`` -> ``engine`` -> ``torchmodel`` -> ``analysis``.
``analysis`` is generic Python and knows nothing of PyTorch; ``torchmodel`` holds the PyTorch
knowledge; ``engine`` runs rules over files; ``rules`` ask questions of the models below and never
of each other. ``sanitizer`` stands apart: nothing of the linter imports it, and it imports
nothing of the linter (only ``cli`` dispatches to it, for ``torchlint run``).
"""

from __future__ import annotations

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "torchlint"

# Higher floors may import lower ones.
FLOORS = {"analysis": 0, "torchmodel": 1, "engine": 2, "rules": 3, "cli": 4, "__main__": 4}
# The rule and fix registries discover the rule modules by importing their package: the one arrow
# that points up, and only inside a function (``engine.rule.all_rules``, ``engine.fixers.all_fixes``).
DISCOVERY = {("torchlint.engine.rule", "torchlint.rules"), ("torchlint.engine.fixers", "torchlint.rules")}


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield name, path


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def _imports(module: str, path: pathlib.Path, typing_only: bool = True):
    """(imported module, names, line) for every import in the file, relative ones resolved; without
    ``typing_only``, not the imports under ``if TYPE_CHECKING:`` (they never run)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    skipped = set()
    if not typing_only:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
                skipped.update(id(sub) for stmt in node.body for sub in ast.walk(stmt))
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [], node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [a.name for a in node.names]
            # ``from torchlint import rules`` imports a module, not a name.
            yield target, names, node.lineno


MODULES = dict(_modules())


def _is_module(name: str) -> bool:
    return name in MODULES


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down_the_layers(module):
    layer = _layer(module)
    wrong = []
    for target, names, line in _imports(module, MODULES[module]):
        targets = [f"{target}.{n}" if _is_module(f"{target}.{n}") else target for n in names] or [target]
        for imported in targets:
            if not imported.startswith("torchlint.") or (module, imported) in DISCOVERY:
                continue
            other = _layer(imported)
            if layer == "sanitizer" or other == "sanitizer":
                if layer != other and not (layer == "cli" or module == "torchlint"):
                    wrong.append(f"line {line}: {imported} (the sanitizer stands apart)")
                continue
            if layer in FLOORS and other in FLOORS and FLOORS[other] > FLOORS[layer]:
                wrong.append(f"line {line}: {imported} ({other} is above {layer})")
    assert not wrong, f"{module} imports up the layers:\n" + "\n".join(wrong)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _layer(m) != "sanitizer"))
def test_no_private_names_taken_from_another_module(module):
    private = [
        f"line {line}: {name} from {target}"
        for target, names, line in _imports(module, MODULES[module])
        if target.startswith("torchlint")
        for name in names
        if name.startswith("_") and not name.startswith("__") and not _is_module(f"{target}.{name}")
    ]
    assert not private, f"{module} takes private names:\n" + "\n".join(private)


def _imported_modules(module: str) -> set[str]:
    """The package's modules ``module`` imports when it runs (at import time or in a function)."""
    found = set()
    for target, names, _ in _imports(module, MODULES[module], typing_only=False):
        for imported in [f"{target}.{n}" if _is_module(f"{target}.{n}") else target for n in names] or [target]:
            # The root package (`from torchlint import __version__`) is no cycle: Python imports a
            # package before any module in it, whatever the module imports.
            if imported == "torchlint":
                continue
            if _is_module(imported) and imported != module and (module, imported) not in DISCOVERY:
                found.add(imported)
    return found


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or through others (Tarjan's
    strongly connected components of more than one module), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def test_no_import_cycles():
    """A module never imports itself back (even through a function-level import): each one can be
    read, tested and moved with only what it imports."""
    cycles = import_cycles({module: _imported_modules(module) for module in MODULES})
    assert not cycles, "modules that import each other:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_check_sees_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert import_cycles(graph) == [["a", "b", "c"]]


def test_the_layer_test_sees_a_wrong_import(tmp_path, monkeypatch):
    """The checker itself: an analysis module importing the training model is caught."""
    bad = tmp_path / "bad.py"
    bad.write_text("from torchlint.torchmodel.roles import object_roles\nfrom torchlint.engine.files import _x\n")
    monkeypatch.setitem(MODULES, "torchlint.analysis.bad", bad)
    with pytest.raises(AssertionError, match="torchmodel is above analysis"):
        test_imports_point_down_the_layers("torchlint.analysis.bad")
    with pytest.raises(AssertionError, match="_x from torchlint.engine.files"):
        test_no_private_names_taken_from_another_module("torchlint.analysis.bad")


def test_every_module_sits_in_a_layer():
    loose = [m for m in MODULES if m != "torchlint" and _layer(m) not in (*FLOORS, "sanitizer")]
    assert not loose, f"modules outside the layers: {loose}"
