"""The keywords a call's ``**`` parts are shown to supply.

``f(x, **opts)`` after ``opts = {"train": False, "optimizer": None}`` passes ``train=False`` as surely
as ``f(x, train=False)`` does, and so does ``f(x, **{"train": False})`` or ``**dict(train=False)``.
``call_keywords(ctx, call)`` reads them: a dict display or a ``dict(k=v, ...)`` call in place, or a
local name bound once to one and never changed (no ``opts[k] = v``, ``opts.update(...)``,
``del``, no passing it on where it could be changed). Every other ``**`` may supply any keyword
(``open``), so a key the shown parts leave out stays unknown then. Explicit keywords come first
(a call that gives a keyword twice raises ``TypeError``, so the running one has one value);
inside a dict display a later key overrides an earlier one, as Python builds it.

``call_argument`` and ``passes_unknown`` are the questions every reader of call-site arguments asks.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from torchlint.analysis.nodes import argument_for
from torchlint.analysis.reachability import runs_before

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

# Methods that read a dict without changing it: a name used only through them keeps its display.
_READ_METHODS = frozenset({"get", "keys", "values", "items", "copy", "__contains__", "__getitem__"})


@dataclass
class CallKeywords:
    """The keywords a call passes by name: ``given`` those shown (explicit or unpacked), ``open``
    whether some ``**`` may supply keywords that are not shown."""

    given: dict[str, ast.expr] = field(default_factory=dict)
    open: bool = False


def call_keywords(ctx: FileContext, call: ast.Call) -> CallKeywords:
    table = ctx.shared("call-keywords", dict)
    found = table.get(call)
    if found is None:
        found = table[call] = _call_keywords(ctx, call)
    return found


def call_argument(ctx: FileContext, call: ast.Call, func: ast.AST, name: str, bound: bool = False) -> ast.AST | None:
    """``argument_for`` that also reads the keywords the call's ``**`` parts are shown to supply."""
    given = argument_for(call, func, name, bound)
    return given if given is not None else call_keywords(ctx, call).given.get(name)


def passes_unknown(ctx: FileContext, call: ast.Call) -> bool:
    """``f(*args)`` or a ``**`` whose keywords are not shown: any parameter may be given."""
    return any(isinstance(a, ast.Starred) for a in call.args) or call_keywords(ctx, call).open


def _call_keywords(ctx: FileContext, call: ast.Call) -> CallKeywords:
    found = CallKeywords()
    for kw in call.keywords:
        if kw.arg is None:
            _unpack(ctx, kw.value, call, found, depth=0)
    for kw in call.keywords:
        if kw.arg is not None:
            found.given[kw.arg] = kw.value
    return found


def _unpack(ctx: FileContext, expr: ast.expr, at: ast.AST, into: CallKeywords, depth: int) -> None:
    """Add what ``**expr`` supplies at ``at``, later keys over earlier ones."""
    if depth <= 3 and isinstance(expr, ast.Name):
        value = _sole_dict(ctx, expr, at)
        if value is not None:
            return _unpack(ctx, value, at, into, depth + 1)
    elif depth <= 3 and isinstance(expr, ast.Dict):
        for key, value in zip(expr.keys, expr.values):
            if key is None:
                _unpack(ctx, value, at, into, depth + 1)
            elif isinstance(key, ast.Constant) and isinstance(key.value, str):
                into.given[key.value] = value
            else:
                into.open = True
        return None
    elif depth <= 3 and _is_dict_call(ctx, expr):
        for kw in expr.keywords:
            if kw.arg is None:
                _unpack(ctx, kw.value, at, into, depth + 1)
            else:
                into.given[kw.arg] = kw.value
        return None
    into.open = True
    return None


def _is_dict_call(ctx: FileContext, expr: ast.expr) -> bool:
    """``dict(k=v, ...)`` of the builtin, with keywords only."""
    return (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Name)
        and expr.func.id == "dict"
        and not expr.args
        and ctx.qualname(expr.func) is None
        and "dict" not in ctx.functions
        and "dict" not in ctx.classes
    )


def _sole_dict(ctx: FileContext, name: ast.Name, at: ast.AST) -> ast.expr | None:
    """The dict display (or ``dict(...)`` call) a local name holds at ``at``: bound by one plain
    assignment that surely runs before ``at``, never rebound, deleted, declared global or
    nonlocal, and read only by ``**`` or a read that cannot change it; None otherwise."""
    scope = ctx.enclosing_function(at)
    if scope is None:
        return None
    args = scope.args
    params = args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]
    if any(p.arg == name.id for p in params):
        return None
    stores = []
    for node in ast.walk(scope):
        if isinstance(node, (ast.Global, ast.Nonlocal)) and name.id in node.names:
            return None
        if isinstance(node, ast.Name) and node.id == name.id:
            if not isinstance(node.ctx, ast.Load):
                stores.append(node)
            elif not _only_read(ctx, node):
                return None
    if len(stores) != 1:
        return None
    assign = ctx.parent(stores[0])
    if not (
        isinstance(assign, ast.Assign)
        and assign.targets == [stores[0]]
        and (isinstance(assign.value, ast.Dict) or _is_dict_call(ctx, assign.value))
        and ctx.enclosing_function(assign) is scope
        and runs_before(ctx, assign, at)
    ):
        return None
    return assign.value


def _only_read(ctx: FileContext, use: ast.Name) -> bool:
    """Whether this use of a name leaves the dict it holds as it is: ``**name`` in a call or a
    dict display, ``name[k]`` read, ``name.get(k)`` and other reading methods."""
    parent = ctx.parent(use)
    if isinstance(parent, ast.keyword) and parent.arg is None:
        return True
    if isinstance(parent, ast.Dict) and any(k is None and v is use for k, v in zip(parent.keys, parent.values)):
        return True  # `{**name, ...}` copies it
    if isinstance(parent, ast.Subscript) and parent.value is use:
        return isinstance(parent.ctx, ast.Load)
    if isinstance(parent, ast.Attribute) and parent.value is use and parent.attr in _READ_METHODS:
        return isinstance(ctx.parent(parent), ast.Call)
    return False
