"""Who calls whom inside one file: the reverse of ``TrainingModel.resolve_local_call``.

Rules that judge a function by the place it runs from (an evaluation helper called
after ``model.eval()``, an optimizer built in a function called once per epoch) ask
for the call sites of a function here. The index is built once per file, lazily.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .context import FileContext


class CallGraph:
    def __init__(self, ctx: FileContext):
        self.ctx = ctx
        self._callers: dict[ast.AST, list[ast.Call]] = defaultdict(list)
        self._callee: dict[ast.Call, ast.AST] = {}
        functions = ctx.functions
        resolve = ctx.training.resolve_local_call
        for call in ctx.calls:
            func = call.func
            # Cheap pre-filter: only names of functions defined in this file can resolve.
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if name is None or name not in functions:
                continue
            target = resolve(call)
            if target is not None:
                self._callers[target].append(call)
                self._callee[call] = target

    def callers(self, func: ast.AST) -> list[ast.Call]:
        """Call sites in this file that run ``func`` (source order)."""
        return self._callers.get(func, [])

    def callee(self, call: ast.Call) -> ast.AST | None:
        return self._callee.get(call)


def call_graph(ctx: FileContext) -> CallGraph:
    return ctx.shared("callgraph", lambda: CallGraph(ctx))
