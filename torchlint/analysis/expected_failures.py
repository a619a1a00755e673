"""Code a test expects to fail: the body of ``with pytest.raises(ValueError):`` or of
``with self.assertRaises(TypeError):``.

Such a statement checks that the code refuses its input; whatever it would compute is never
produced nor kept, so it is no run of the program's work (no evaluation, no training step).

And code whose failure is caught where it runs (``caught_in_function``): an exception raised in the
``body`` of a ``try`` of the same function whose handler catches it (its class or a base of it, a
bare ``except``) and does not raise again ends no run: the handler goes on (a demonstration that
prints the error, a fallback).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.context import FUNCTION_TYPES
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.reachability import live_statements

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

# Context managers whose body must raise for the test to pass.
_RAISING_CONTEXTS = frozenset({"pytest.raises"})
# `unittest.TestCase` methods that return such a context manager when used in a `with`.
_RAISING_METHODS = frozenset({"assertRaises", "assertRaisesRegex"})
# The builtin exceptions a handler may name to catch one of these builtin exceptions (itself and its bases).
_CATCHING = {
    "RuntimeError": frozenset({"RuntimeError", "Exception", "BaseException"}),
    "NotImplementedError": frozenset({"NotImplementedError", "RuntimeError", "Exception", "BaseException"}),
    "ValueError": frozenset({"ValueError", "Exception", "BaseException"}),
    "TypeError": frozenset({"TypeError", "Exception", "BaseException"}),
    "IndexError": frozenset({"IndexError", "LookupError", "Exception", "BaseException"}),
    "KeyError": frozenset({"KeyError", "LookupError", "Exception", "BaseException"}),
}
_TRIES = (ast.Try, ast.TryStar) if hasattr(ast, "TryStar") else (ast.Try,)


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


def caught_in_function(ctx: FileContext, node: ast.AST, exception: str) -> bool:
    """An ``exception`` (a builtin exception class, by name) raised by ``node`` is caught in its own
    function (or at module level, in the module): ``node`` sits in the ``body`` of a ``try`` there one
    of whose handlers names the class or a base of it (``except RuntimeError as e:``, ``except
    (ValueError, RuntimeError):``, ``except Exception:``, a bare ``except:``) and does not end by raising
    again. The first handler that matches decides, as at run time; the ``try`` blocks further out are
    asked next."""
    catching = _CATCHING.get(exception, frozenset({exception, "BaseException"}))
    child = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (*FUNCTION_TYPES, ast.Lambda, ast.ClassDef)):
            return False
        if isinstance(ancestor, _TRIES) and child in ancestor.body:
            for handler in ancestor.handlers:
                if _handler_catches(ctx, handler.type, catching):
                    live = live_statements(handler.body)
                    if not (live and isinstance(live[-1], ast.Raise)):
                        return True
                    break  # `except RuntimeError: ...; raise`: on to the `try` blocks further out
        child = ancestor
    return False


def _handler_catches(ctx: FileContext, kind: ast.AST | None, catching: frozenset[str]) -> bool:
    """The handler's class (``None``: a bare ``except``) is one of ``catching``, or a tuple holding one;
    a name the file binds to something else is not the builtin."""
    if kind is None:
        return True
    if isinstance(kind, ast.Tuple):
        return any(_handler_catches(ctx, element, catching) for element in kind.elts)
    if isinstance(kind, ast.Name):
        return kind.id in catching and not dataflow(ctx).reaching(kind)
    if isinstance(kind, ast.Attribute) and isinstance(kind.value, ast.Name) and kind.value.id == "builtins":
        return kind.attr in catching
    return False
