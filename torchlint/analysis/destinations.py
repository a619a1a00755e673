"""Where a value goes: the attributes and items it is stored into.

``stored_into(ctx, expr)`` follows the value of ``expr`` forward: into the targets of the
assignment it is the value of (either arm of a conditional expression included), through a local
name it is assigned to (every later read that assignment reaches), and out of its function through
``return`` to the call sites of that function in this file. It answers the targets that receive the
value (``self.backbone`` of ``self.backbone = self._pick(name)`` when ``_pick`` returns
``self.table[name]``); a value used any other way is simply not stored there.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import call_graph
from torchlint.analysis.dataflow import dataflow

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

# How many names and returns a value is followed through.
MAX_DEPTH = 6


def stored_into(ctx: FileContext, expr: ast.AST) -> list[ast.Attribute | ast.Subscript]:
    """The attribute and subscript targets that receive the value of ``expr`` (see the module)."""
    found: list = []
    _follow(ctx, expr, found, set(), 0)
    return found


def _follow(ctx: FileContext, expr: ast.AST, found: list, seen: set, depth: int) -> None:
    if depth > MAX_DEPTH or expr in seen:
        return
    seen.add(expr)
    parent = ctx.parent(expr)
    while isinstance(parent, (ast.IfExp, ast.NamedExpr)) and expr is not getattr(parent, "test", None):
        expr, parent = parent, ctx.parent(parent)  # `a if c else b`, `(x := value)`: the value goes on
    if isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is expr:
        targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
        for target in targets:
            if isinstance(target, (ast.Attribute, ast.Subscript)):
                found.append(target)
            elif isinstance(target, ast.Name):
                for read in _reads_reached(ctx, target.id, parent):
                    _follow(ctx, read, found, seen, depth + 1)
    elif isinstance(parent, ast.Return):
        function = ctx.enclosing_function(parent)
        for call in call_graph(ctx).callers(function) if function is not None else ():
            _follow(ctx, call, found, seen, depth + 1)


def _reads_reached(ctx: FileContext, name: str, assignment: ast.AST) -> list[ast.Name]:
    """The reads of ``name`` in the scope of ``assignment`` that it may give their value."""
    flow = dataflow(ctx)
    scope = flow.scope_of(assignment)
    return [
        node
        for node in ctx.nodes(ast.Name)
        if node.id == name
        and isinstance(node.ctx, ast.Load)
        and flow.scope_of(node) is scope
        and any(b.stmt is assignment for b in flow.reaching(node))
    ]
