"""Small questions about syntax nodes that every analysis asks: where a node starts, which
names an expression reads, the last name of a callee."""

from __future__ import annotations

import ast


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
