"""Calls that only look at what they are handed: builtins that inspect a value (``type(x)``,
``print(x)``), methods of a string (``"lr: {}".format(x)``, ``", ".join(names)``), which only
format their arguments, and Python's logging (``logging.info(...)``, ``logger.debug(...)`` on a
``logging.getLogger(...)``). Handing an object to one of them changes nothing in it."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.dataflow import dataflow

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

INSPECTING_BUILTINS = frozenset(
    {"type", "str", "repr", "format", "id", "hash", "len", "print", "isinstance", "hasattr", "getattr", "vars", "dir"}
)
LOGGING_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log"})
_LOGGER_FACTORIES = frozenset({"logging.getLogger"})


def only_inspects(ctx: FileContext, call: ast.Call) -> bool:
    """Whether ``call`` is a builtin that inspects its arguments, a string's method or a logging call."""
    func = call.func
    qualname = ctx.call_qualname(call)
    if isinstance(func, ast.Name) and qualname is None:
        return func.id in INSPECTING_BUILTINS  # a builtin: neither imported nor defined in the file
    if isinstance(func, ast.Attribute) and _is_string(ctx, func.value):
        return True  # `"{:}".format(x)`, `template.format(x)`: a string's methods only format what they get
    if qualname is not None and qualname.startswith("logging."):
        return True
    if not isinstance(func, ast.Attribute) or func.attr not in LOGGING_METHODS:
        return False
    logger = dataflow(ctx).sole_value(func.value) if isinstance(func.value, ast.Name) else None
    return isinstance(logger, ast.Call) and ctx.call_qualname(logger) in _LOGGER_FACTORIES


def _is_string(ctx: FileContext, expr: ast.AST) -> bool:
    """A string literal, an f-string, or a name bound only to one of them."""
    if isinstance(expr, ast.Name):
        value = dataflow(ctx).sole_value(expr)
        expr = value if value is not None else expr
    return isinstance(expr, ast.JoinedStr) or isinstance(expr, ast.Constant) and isinstance(expr.value, str)
