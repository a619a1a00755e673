"""Whether a value draws on some other value: the parts of an expression, and the values of the
names it reads, followed back through the assignments that may give them their values.

``seed = base_seed`` / ``if distributed: seed += rank`` / ``manual_seed(seed)``: the seed draws on
``rank``. ``Dataflow.origins`` answers "which expression produced this value" and stops at
operators, calls and augmented assignments; this asks "does anything that went into it pass a
test", so it looks into all of them: operands, call arguments, the right side of ``+=``, the value
of an unpacked assignment, ``self.attr`` assignments of the class.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from torchlint.analysis.context import FileContext
from torchlint.analysis.dataflow import Binding, dataflow

_MAX_DEPTH = 6


def draws_on(ctx: FileContext, expr: ast.AST, test: Callable[[ast.AST], bool]) -> bool:
    """Whether ``test`` holds for a sub-expression of ``expr`` or of a value that may reach one of
    the names (and ``self`` attributes) it reads, up to a few assignments back."""
    flow = dataflow(ctx)
    seen: set[int] = set()

    def visit(node: ast.AST, depth: int) -> bool:
        if depth > _MAX_DEPTH or id(node) in seen:
            return False
        seen.add(id(node))
        for part in ast.walk(node):
            if test(part):
                return True
            if isinstance(part, ast.Name) and isinstance(part.ctx, ast.Load):
                bindings = flow.reaching(part)
            elif isinstance(part, ast.Attribute) and isinstance(part.ctx, ast.Load):
                owner = flow.self_attribute(part)
                bindings = flow.attribute_bindings(*owner) if owner is not None else []
            else:
                continue
            if any(visit(value, depth + 1) for value in map(_assigned, bindings) if value is not None):
                return True
        return False

    return visit(expr, 0)


def _assigned(binding: Binding) -> ast.AST | None:
    """What a binding puts into its name: the value, the right side of ``+=``, the whole right
    side of an unpacking; nothing for parameters, loop variables, imports, definitions."""
    if binding.kind in ("assign", "walrus", "with", "augassign"):
        return binding.value  # for `+=`: the statement itself, or (a `self` attribute) its right side
    if binding.kind == "unpack":
        return binding.source
    return None
