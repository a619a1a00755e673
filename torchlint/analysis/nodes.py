"""Small questions about syntax nodes that every analysis asks: where a node starts, which
names an expression reads, the last name of a callee."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import TYPE_CHECKING

from torchlint.analysis.context import iter_children

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext


def position(node: ast.AST) -> tuple[int, int]:
    """Where a node starts, for ordering; a ``withitem`` (no position of its own) starts at its
    expression, and nodes without a position sort first."""
    if isinstance(node, ast.withitem):
        node = node.context_expr
    return getattr(node, "lineno", 0), getattr(node, "col_offset", 0)


def name_ids(expr: ast.AST) -> set[str]:
    """The bare names an expression mentions (``model(x[i])`` -> {"model", "x", "i"})."""
    return {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}


def last_name(expr: ast.AST) -> str | None:
    """The last identifier of a name or attribute chain (``self.model.fc`` -> "fc")."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return None


# Nodes that open a scope of their own: walks "in one scope" stop at them.
NEW_SCOPES = frozenset({ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef})


def walk_no_scopes(node: ast.AST) -> Iterator[ast.AST]:
    """Like ``ast.walk`` (depth-first, so not in source order), but not into lambdas, nested
    functions or classes."""
    # iter_children rather than ast.iter_child_nodes: several times faster, and it leaves out
    # the shared Load/Store/operator singletons that no caller looks for.
    stack = [node]
    pop, push = stack.pop, stack.append
    while stack:
        current = pop()
        yield current
        for child in iter_children(current):
            if type(child) not in NEW_SCOPES:
                push(child)


def walk_function_body(func: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function's own body (``walk_no_scopes`` of each statement, nested defs skipped)."""
    for stmt in func.body:
        if type(stmt) not in NEW_SCOPES:
            yield from walk_no_scopes(stmt)


def source_text(ctx: FileContext, node: ast.AST) -> str:
    """``ast.unparse(node)``, shared per node (conditions are compared by their text many times)."""
    return ctx.shared(("text", node), lambda: ast.unparse(node))


def argument_for(call: ast.Call, func: ast.AST, name: str) -> ast.AST | None:
    """The argument expression ``call`` passes for parameter ``name`` of the def ``func``
    (``self``/``cls`` skipped for a method called on an object)."""
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    params = [a.arg for a in func.args.posonlyargs + func.args.args]
    if params and params[0] in ("self", "cls") and isinstance(call.func, ast.Attribute):
        params = params[1:]
    if name in params:
        index = params.index(name)
        if index < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[: index + 1]):
            return call.args[index]
    return None
