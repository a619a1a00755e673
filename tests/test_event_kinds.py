"""Event kinds are an enum, not strings: a rule or model that compares an event's ``kind`` with a
string (``e.kind == "step"``) would silently never match, so the source is checked for it."""

from __future__ import annotations

import ast
import pathlib

import pytest

from torchlint.torchmodel.events import EventKind

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "torchlint"
KIND_NAMES = {kind.value for kind in EventKind}


def _strings(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [s for elt in node.elts for s in _strings(elt)]
    if isinstance(node, ast.Call) and node.args:  # frozenset({...})
        return _strings(node.args[0])
    return []


def string_kinds(source: str) -> list[str]:
    """``line: text`` of every comparison of a ``.kind`` with an event kind spelled as a string,
    and every ``Event(...)`` built with a string kind."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(isinstance(side, ast.Attribute) and side.attr == "kind" for side in sides):
                if any(s in KIND_NAMES for side in sides for s in _strings(side)):
                    found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Event":
            if node.args and _strings(node.args[0]):
                found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


@pytest.mark.parametrize(
    "path",
    sorted(p for p in PACKAGE.rglob("*.py") if "sanitizer" not in p.parts),
    ids=lambda p: str(p.relative_to(PACKAGE)),
)
def test_no_event_kind_is_spelled_as_a_string(path):
    found = string_kinds(path.read_text())
    assert not found, "compare with EventKind members, not strings:\n" + "\n".join(found)


def test_the_check_sees_string_kinds():
    source = 'a = e.kind == "step"\nb = e.kind in ("backward", "opaque_step")\nc = Event("eval", node)\nd = u.kind == "guard"\n'
    assert [line.split(":")[0] for line in string_kinds(source)] == ["1", "2", "3"]
