"""The package's layers, kept by a test: each module imports only from its own layer and the
layers below it, and never takes a private name from another module.

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
# The rule registry discovers the rule modules by importing their package: the one arrow
# that points up, and only inside a function (``engine.rule.all_rules``).
DISCOVERY = {("torchlint.engine.rule", "torchlint.rules")}


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield name, path


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def _imports(module: str, path: pathlib.Path):
    """(imported module, names, line) for every import in the file, relative ones resolved."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
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


def test_the_layer_test_sees_a_wrong_import(tmp_path, monkeypatch):
    """The checker itself: an analysis module importing the training model is caught."""
    bad = tmp_path / "bad.py"
    bad.write_text("from torchlint.torchmodel.training import training_model\nfrom torchlint.engine.files import _x\n")
    monkeypatch.setitem(MODULES, "torchlint.analysis.bad", bad)
    with pytest.raises(AssertionError, match="torchmodel is above analysis"):
        test_imports_point_down_the_layers("torchlint.analysis.bad")
    with pytest.raises(AssertionError, match="_x from torchlint.engine.files"):
        test_no_private_names_taken_from_another_module("torchlint.analysis.bad")


def test_every_module_sits_in_a_layer():
    loose = [m for m in MODULES if m != "torchlint" and _layer(m) not in (*FLOORS, "sanitizer")]
    assert not loose, f"modules outside the layers: {loose}"
