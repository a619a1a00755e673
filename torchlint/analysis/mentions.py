"""Which code of a file may run which, told by mentions: a call graph that errs on the side of "may run".

The resolved call graph (``callgraph``) knows the calls it can resolve; a question such as "can this
code run inside that function?" needs the opposite guarantee: every way one scope may run another.
A scope (a function of the file, or ``ctx.tree`` for module-level code) may run a function when it
mentions it: its name read (``main()``, ``mp.spawn(main)``, ``partial(main)``), an attribute of
that name (``self.setup()``, ``trainer.fit``), or, for a method, its class's name (``Trainer(...)``
runs ``__init__``; the instance then runs the rest). Mentions over-approximate calls, so what is
left out is shown not to run there (short of ``getattr`` with a computed name).

``mentions(ctx)``:

* ``scopes_running(nodes)``: the scopes that may run any of ``nodes`` (where they are written, then
  every scope that mentions one of those, to a fixed point);
* ``scopes_run_by(scopes)``: those scopes and every function they may run, to a fixed point;
* ``mentioned(func)``: whether anything in the file, outside ``func`` itself, mentions it.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from functools import cached_property
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

    from torchlint.analysis.context import FileContext


class Mentions:
    """The mentions of one file; get the shared instance with ``mentions(ctx)``."""

    def __init__(self, ctx: FileContext):
        self.ctx = ctx

    def scope_of(self, node: ast.AST) -> ast.AST:
        """The function whose run runs ``node`` (a lambda or class body runs with its definer), or
        ``ctx.tree`` for module-level code."""
        return self.ctx.enclosing_function(node) or self.ctx.tree

    @cached_property
    def _scopes_mentioning(self) -> dict[str, set[ast.AST]]:
        """Name -> the scopes that read that name or an attribute of that name."""
        found: dict[str, set[ast.AST]] = defaultdict(set)
        for name in self.ctx.nodes(ast.Name):
            if isinstance(name.ctx, ast.Load):
                found[name.id].add(self.scope_of(name))
        for attribute in self.ctx.nodes(ast.Attribute):
            found[attribute.attr].add(self.scope_of(attribute))
        return found

    @cached_property
    def _names_mentioned(self) -> dict[ast.AST, set[str]]:
        """Scope -> the names it mentions (the inverse of ``_scopes_mentioning``)."""
        found: dict[ast.AST, set[str]] = defaultdict(set)
        for name, scopes in self._scopes_mentioning.items():
            for scope in scopes:
                found[scope].add(name)
        return found

    def _names_of(self, func: ast.AST) -> set[str]:
        """The names whose mention may run ``func``: its own, and its class's for a method."""
        names = {func.name}
        parent = self.ctx.parent(func)
        if isinstance(parent, ast.ClassDef):
            names.add(parent.name)
        return names

    def _functions_named(self, name: str) -> list[ast.AST]:
        """The functions a mention of ``name`` may run: functions and methods of that name, and the
        methods of a class of that name."""
        found = list(self.ctx.functions.get(name, ()))
        cls = self.ctx.classes.get(name)
        if cls is not None:
            found += [s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
        return found

    def scopes_running(self, nodes: Iterable[ast.AST]) -> frozenset[ast.AST]:
        found = {self.scope_of(node) for node in nodes}
        frontier = list(found)
        while frontier:
            scope = frontier.pop()
            if scope is self.ctx.tree:
                continue
            for name in self._names_of(scope):
                for mentioning in self._scopes_mentioning.get(name, ()):
                    if mentioning not in found:
                        found.add(mentioning)
                        frontier.append(mentioning)
        return frozenset(found)

    def scopes_run_by(self, scopes: Iterable[ast.AST]) -> frozenset[ast.AST]:
        found = set(scopes)
        frontier = list(found)
        while frontier:
            scope = frontier.pop()
            for name in self._names_mentioned.get(scope, ()):
                for func in self._functions_named(name):
                    if func not in found:
                        found.add(func)
                        frontier.append(func)
        return frozenset(found)

    def mentioned(self, func: ast.AST) -> bool:
        return any(
            scope is not func for name in self._names_of(func) for scope in self._scopes_mentioning.get(name, ())
        )


def mentions(ctx: FileContext) -> Mentions:
    return ctx.shared("mentions", lambda: Mentions(ctx))
