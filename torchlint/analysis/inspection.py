"""Calls that only look at what they are handed: builtins that inspect a value (``type(x)``,
``print(x)``) and Python's logging (``logging.info(...)``, ``logger.debug(...)`` on a
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
    """Whether ``call`` is a builtin that inspects its arguments or a logging call."""
    func = call.func
    qualname = ctx.call_qualname(call)
    if isinstance(func, ast.Name) and qualname is None:
        return func.id in INSPECTING_BUILTINS  # a builtin: neither imported nor defined in the file
    if qualname is not None and qualname.startswith("logging."):
        return True
    if not isinstance(func, ast.Attribute) or func.attr not in LOGGING_METHODS:
        return False
    logger = dataflow(ctx).sole_value(func.value) if isinstance(func.value, ast.Name) else None
    return isinstance(logger, ast.Call) and ctx.call_qualname(logger) in _LOGGER_FACTORIES
