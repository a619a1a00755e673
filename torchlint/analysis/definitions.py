"""Functions and classes as things to ask about, wherever they are defined.

A :class:`Definition` is one ``def`` or ``class`` statement together with the parsed file it
belongs to (its :class:`~torchlint.analysis.context.FileContext`), so a question about it is
always answered in that file: its own imports, its own parents. It is what
``analysis.callgraph.resolve_call`` returns for "which function does this call run" and what
``analysis.summaries`` keys per-function facts on.

``module_names(ctx)`` is what a module defines at its top level, as another module would see it
through an import: functions, classes, the names its own imports bind (re-exports), and plain
aliases (``Net = ResNet``).
"""

from __future__ import annotations

import ast
import builtins
import os
from typing import TYPE_CHECKING, NamedTuple

from torchlint.analysis.imports import ImportBinding

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

DefNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
FUNCTION_NODES = (ast.FunctionDef, ast.AsyncFunctionDef)


def file_key(ctx: FileContext) -> str:
    """The path that names ``ctx``'s file in keys and dependency lists: the real absolute path
    for files of a project (a file reached through two spellings is one file), else as given."""
    if ctx.project is None:
        return ctx.path
    return ctx.shared("file_key", lambda: os.path.realpath(ctx.path))


class Definition:
    """One function or class definition of a parsed file."""

    __slots__ = ("ctx", "node", "_qualname")

    def __init__(self, ctx: FileContext, node: DefNode, qualname: str | None = None):
        self.ctx = ctx
        self.node = node
        # Known when the definition was reached by name (a module's top level, a class body);
        # otherwise worked out from the file's parents on first use.
        self._qualname = qualname

    def member(self, node: DefNode) -> Definition:
        """A method or nested class of this class."""
        return Definition(self.ctx, node, f"{self.qualname}.{node.name}")

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def path(self) -> str:
        return file_key(self.ctx)

    @property
    def is_function(self) -> bool:
        return isinstance(self.node, FUNCTION_NODES)

    @property
    def is_class(self) -> bool:
        return isinstance(self.node, ast.ClassDef)

    @property
    def qualname(self) -> str:
        """Python's ``__qualname__``: ``Trainer.step``, ``main.<locals>.closure``."""
        if self._qualname is None:
            parts = [self.node.name]
            for ancestor in self.ctx.ancestors(self.node):
                if isinstance(ancestor, ast.ClassDef):
                    parts.append(ancestor.name)
                elif isinstance(ancestor, FUNCTION_NODES):
                    parts.append(ancestor.name + ".<locals>")
            self._qualname = ".".join(reversed(parts))
        return self._qualname

    @property
    def key(self) -> tuple[str, str, int]:
        """(file, qualified name, line): stable for one run, whichever parse of the file it came from;
        the line tells apart two definitions of one name (``if cuda: def f ... else: def f ...``)."""
        return self.path, self.qualname, self.node.lineno

    def __eq__(self, other) -> bool:
        return isinstance(other, Definition) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        kind = "class" if self.is_class else "def"
        return f"<{kind} {self.qualname} at {self.path}:{self.node.lineno}>"


class ModuleNames(NamedTuple):
    """What one module binds at its top level (``if``/``try``/``with`` blocks included, bodies of
    functions and classes not); a later binding of a name wins, as it would at run time."""

    definitions: dict[str, DefNode]
    imports: dict[str, ImportBinding]
    aliases: dict[str, ast.expr]  # ``Net = ResNet``, ``zero_grad = utils.zero_grad``
    star_imports: list[ImportBinding]  # ``from .layers import *``, in order


def module_names(ctx: FileContext) -> ModuleNames:
    return ctx.shared("module_names", lambda: _module_names(ctx.tree))


def _module_names(tree: ast.Module) -> ModuleNames:
    names = ModuleNames({}, {}, {}, [])
    pending = list(reversed(tree.body))
    while pending:
        stmt = pending.pop()
        if isinstance(stmt, (*FUNCTION_NODES, ast.ClassDef)):
            _bind(names, stmt.name)
            names.definitions[stmt.name] = stmt
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                bound = alias.asname or alias.name.split(".", 1)[0]
                _bind(names, bound)
                names.imports[bound] = ImportBinding(0, alias.name if alias.asname else bound, None)
        elif isinstance(stmt, ast.ImportFrom):
            for alias in stmt.names:
                binding = ImportBinding(stmt.level, stmt.module or "", alias.name)
                if alias.name == "*":
                    names.star_imports.append(binding._replace(name=None))
                    continue
                bound = alias.asname or alias.name
                _bind(names, bound)
                names.imports[bound] = binding
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            bound = stmt.targets[0].id
            _bind(names, bound)
            if isinstance(stmt.value, (ast.Name, ast.Attribute)):
                names.aliases[bound] = stmt.value
        else:
            # Blocks run at import time: their bindings are the module's too.
            for field in ("body", "orelse", "finalbody", "handlers"):
                block = getattr(stmt, field, None)
                if isinstance(block, list):
                    pending.extend(reversed([s for s in block if isinstance(s, (ast.stmt, ast.excepthandler))]))
    return names


def _bind(names: ModuleNames, name: str) -> None:
    """A new binding of ``name`` replaces whatever kind of binding it had."""
    names.definitions.pop(name, None)
    names.imports.pop(name, None)
    names.aliases.pop(name, None)


def definition_at(ctx: FileContext, names: list[str]) -> Definition | None:
    """The definition a top-level name of ``ctx``'s file and then members of classes lead to
    (``["Net", "forward"]``); None where a name is not a def or class."""
    first, *rest = names
    node = module_names(ctx).definitions.get(first)
    found = Definition(ctx, node, first) if node is not None else None
    for name in rest:
        member = class_member(found.node, name) if found is not None and found.is_class else None  # type: ignore[arg-type]
        found = found.member(member) if member is not None else None
    return found


def class_member(cls: ast.ClassDef, name: str) -> DefNode | None:
    """A method or nested class defined directly in the body of ``cls`` (the last one wins)."""
    found = None
    for stmt in cls.body:
        if isinstance(stmt, (*FUNCTION_NODES, ast.ClassDef)) and stmt.name == name:
            found = stmt
    return found


def unknown_star_name(ctx: FileContext, expr: ast.AST) -> bool:
    """``expr`` (a name, an attribute chain on one, or a call of those) starts with a name the file
    binds nowhere -- no import the linter resolved, no ``def``/``class``, assignment, parameter or
    builtin -- while the file has ``from ... import *``: the name may come from there, and what it
    is cannot be told."""
    if isinstance(expr, ast.Call):
        expr = expr.func
    while isinstance(expr, ast.Attribute):
        expr = expr.value
    if not isinstance(expr, ast.Name) or not module_names(ctx).star_imports:
        return False
    return expr.id not in ctx.imports.aliases and expr.id not in _bound_names(ctx)


def _bound_names(ctx: FileContext) -> frozenset[str]:
    def build() -> frozenset[str]:
        bound = set(dir(builtins))
        for node in ast.walk(ctx.tree):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                bound.add(node.id)
            elif isinstance(node, ast.arg):
                bound.add(node.arg)
            elif isinstance(node, (*FUNCTION_NODES, ast.ClassDef)):
                bound.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                bound.update((a.asname or a.name).split(".", 1)[0] for a in node.names)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                bound.update(node.names)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                bound.add(node.name)
        return frozenset(bound)

    return ctx.shared("bound_names", build)


def top_level_bound_names(ctx: FileContext) -> frozenset[str]:
    """Every name a module binds in its own namespace, in any way: ``def``/``class``, imports,
    assignments of any shape (tuples, ``+=``, annotations, ``:=``), ``for``/``with``/``except``/``match``
    targets, ``del``, anywhere at its top level (``if``/``try``/``with`` blocks included: a binding
    under a condition counts), and ``global`` statements in its functions. ``module_names`` keeps
    what an import of them leads to; this is only whether a name may exist."""

    def build() -> frozenset[str]:
        bound: set[str] = set()
        for statement in ctx.nodes(ast.Global):
            bound.update(statement.names)
        pending: list[ast.AST] = list(ctx.tree.body)
        while pending:
            node = pending.pop()
            if isinstance(node, (*FUNCTION_NODES, ast.ClassDef)):
                bound.add(node.name)
                continue  # its body binds its own names
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                bound.update((a.asname or a.name).split(".", 1)[0] for a in node.names if a.name != "*")
            elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                bound.add(node.id)
            elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
                bound.add(node.name)
            elif isinstance(node, ast.MatchMapping) and node.rest:
                bound.add(node.rest)
            pending.extend(ast.iter_child_nodes(node))
        return frozenset(bound)

    return ctx.shared("top_level_bound_names", build)
