"""The folders a script puts on ``sys.path`` itself, computed from its own location.

A script kept in a sub-folder (``scripts/train.py``) often imports the project's package from the
folder above it after ``sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))``
or ``sys.path.insert(0, str(Path(__file__).resolve().parents[1]))``: Python then finds the package
there, and so does ``analysis.project``. Only what the code shows counts: a statement of the
module's top level whose path is built from ``__file__`` and constant strings with ``os.path``
(``abspath``, ``realpath``, ``normpath``, ``dirname``, ``join``, ``split(...)[0]``) or ``pathlib``
(``Path(__file__)``, ``.resolve()``, ``.absolute()``, ``.parent``, ``.parents[n]``, ``/``), directly or
through a top-level name assigned once. A path from the environment, the working directory or a
parameter is unknown and ignored.
"""

from __future__ import annotations

import ast
import os

from torchlint.analysis.imports import ImportResolver

_NORMALISING = frozenset({"os.path.abspath", "os.path.realpath", "os.path.normpath", "str", "os.fspath"})
_PATHS = frozenset({"pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath"})
_SAME_PATH_METHODS = frozenset({"resolve", "absolute", "expanduser"})


def added_search_dirs(tree: ast.Module, path: str) -> tuple[str, ...]:
    """The directories (real absolute paths, in order) that the top level of the module at ``path``
    appends or inserts into ``sys.path``, where the code shows them."""
    imports = ImportResolver(n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom)))
    added: list[ast.expr] = []
    for statement in tree.body:
        call = statement.value if isinstance(statement, ast.Expr) else None
        if not isinstance(call, ast.Call) or call.keywords:
            continue
        target = imports.qualname(call.func)
        if target == "sys.path.append" and len(call.args) == 1:
            added.append(call.args[0])
        elif target == "sys.path.insert" and len(call.args) == 2:
            added.append(call.args[1])
    if not added:
        return ()  # most modules: no need to walk the whole tree for names bound once
    evaluator = _PathEvaluator(imports, os.path.realpath(path), _assigned_once(tree))
    found: list[str] = []
    for expr in added:
        value = evaluator.value(expr)
        if isinstance(value, str) and os.path.isabs(value):
            directory = os.path.realpath(value)
            if directory not in found:
                found.append(directory)
    return tuple(found)


def _assigned_once(tree: ast.Module) -> dict[str, ast.expr]:
    """Top-level names bound once in the whole module, by a plain assignment (``root = os.path.dirname(...)``)."""
    stores: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            stores[node.id] = stores.get(node.id, 0) + 1
    return {
        node.targets[0].id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and stores.get(node.targets[0].id) == 1
    }


class _PathEvaluator:
    """The value of a path expression: a string, a ``_Path`` (pathlib), or None (unknown)."""

    def __init__(self, imports: ImportResolver, file: str, names: dict[str, ast.expr]):
        self.imports = imports
        self.file = file
        self.names = names
        self._depth = 0

    def value(self, expr: ast.expr):
        if self._depth > 8:
            return None
        self._depth += 1
        try:
            return self._value(expr)
        finally:
            self._depth -= 1

    def _value(self, expr: ast.expr):
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            return expr.value
        if isinstance(expr, ast.Name):
            if expr.id == "__file__":
                return self.file
            bound = self.names.get(expr.id)
            return self.value(bound) if bound is not None else None
        if isinstance(expr, ast.Subscript):
            return self._subscript(expr)
        if isinstance(expr, ast.Attribute):
            inner = self.value(expr.value)
            if isinstance(inner, _Path) and expr.attr == "parent":
                return _Path(os.path.dirname(inner.path))
            return None
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Div):
            left, right = self.value(expr.left), self.value(expr.right)
            if isinstance(left, _Path) and isinstance(right, str):
                return _Path(os.path.normpath(os.path.join(left.path, right)))
            return None
        if isinstance(expr, ast.Call) and not expr.keywords:
            return self._call(expr)
        return None

    def _subscript(self, expr: ast.Subscript):
        index = expr.slice
        if not (isinstance(index, ast.Constant) and isinstance(index.value, int) and index.value >= 0):
            return None
        if isinstance(expr.value, ast.Call) and self.imports.qualname(expr.value.func) == "os.path.split":
            parts = [self.value(a) for a in expr.value.args]
            if len(parts) == 1 and isinstance(parts[0], str) and index.value <= 1:
                return os.path.split(parts[0])[index.value]
            return None
        if isinstance(expr.value, ast.Attribute) and expr.value.attr == "parents":
            inner = self.value(expr.value.value)
            if isinstance(inner, _Path):
                path = inner.path
                for _ in range(index.value + 1):
                    path = os.path.dirname(path)
                return _Path(path)
        return None

    def _call(self, call: ast.Call):
        args = [self.value(a) for a in call.args]
        if isinstance(call.func, ast.Attribute) and call.func.attr in _SAME_PATH_METHODS and not call.args:
            inner = self.value(call.func.value)
            return inner if isinstance(inner, _Path) else None
        name = self.imports.qualname(call.func) or (call.func.id if isinstance(call.func, ast.Name) else None)
        if name in _PATHS and len(args) == 1 and isinstance(args[0], str):
            return _Path(os.path.abspath(args[0]))
        if any(a is None for a in args):
            return None
        strings = [a.path if isinstance(a, _Path) else a for a in args]
        if name in _NORMALISING and len(strings) == 1:
            return os.path.normpath(os.path.abspath(strings[0]))
        if name == "os.path.dirname" and len(strings) == 1:
            return os.path.dirname(strings[0])
        if name == "os.path.join" and strings:
            return os.path.normpath(os.path.join(*strings))
        return None


class _Path:
    """A ``pathlib`` path value (kept apart from strings: ``.parent`` means something only on it)."""

    __slots__ = ("path",)

    def __init__(self, path: str):
        self.path = path
