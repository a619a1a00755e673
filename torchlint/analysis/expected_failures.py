"""Code a test expects to fail: the body of ``with pytest.raises(ValueError):`` or of
``with self.assertRaises(TypeError):``.

Such a statement checks that the code refuses its input; whatever it would compute is never
produced nor kept, so it is no run of the program's work (no evaluation, no training step).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.context import FUNCTION_TYPES

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

# Context managers whose body must raise for the test to pass.
_RAISING_CONTEXTS = frozenset({"pytest.raises"})
# `unittest.TestCase` methods that return such a context manager when used in a `with`.
_RAISING_METHODS = frozenset({"assertRaises", "assertRaisesRegex"})


def expected_to_raise(ctx: FileContext, node: ast.AST) -> bool:
    """``node`` runs inside a ``with`` block of its own function whose body a test expects to raise."""
    child = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (*FUNCTION_TYPES, ast.Lambda, ast.ClassDef)):
            return False
        if (
            isinstance(ancestor, (ast.With, ast.AsyncWith))
            and child in ancestor.body
            and any(_raising_context(ctx, item.context_expr) for item in ancestor.items)
        ):
            return True
        child = ancestor
    return False


def _raising_context(ctx: FileContext, expr: ast.AST) -> bool:
    if not isinstance(expr, ast.Call):
        return False
    if ctx.call_qualname(expr) in _RAISING_CONTEXTS:
        return True
    func = expr.func
    return isinstance(func, ast.Attribute) and func.attr in _RAISING_METHODS
