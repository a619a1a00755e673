"""Conditions decided on the first iteration of a loop, or the first call of a function.

``first_pass_truth(ctx, test, loops)`` gives the truth ``test`` is shown to have the first
time it is evaluated (None when the code does not show it): in the first iteration of one of ``loops`` (``for epoch in range(n):`` with
``if epoch > 0:``, the ``else`` of ``if epoch == 0:``, ``for i, x in enumerate(xs, start=1):``
with ``if i > 1:``, ``for e in range(start, n):`` with ``if e > start:``), or, for a counter
handed in by the caller of a function called once per iteration (``def step(batch, epoch):``
with ``if epoch > 0:``), at the count's start, 0: Python's counters (``range``, ``enumerate``)
start there. A name counts only where the loop's own binding (or the parameter) is the only one
reaching it. Nothing here knows about PyTorch.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING

from torchlint.analysis.conditions import truth_under
from torchlint.analysis.constants import UNKNOWN, constant_value
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.nodes import walk_no_scopes

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext
    from torchlint.analysis.dataflow import Binding

_MIRRORED = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE}
_ORDERINGS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)
# `v <op> start` on the first pass, where v == start: the truth of each comparison.
_AT_START = {ast.Lt: False, ast.Gt: False, ast.NotEq: False, ast.Eq: True, ast.LtE: True, ast.GtE: True}


def first_pass_truth(
    ctx: FileContext,
    test: ast.AST,
    loops: tuple = (),
    counters: bool = False,
    lower_bound: Callable[[ast.AST], int | None] | None = None,
    settled: Callable[[Binding], bool] | None = None,
) -> bool | None:
    """The truth ``test`` is shown to have on the first iteration of one of ``loops`` (each a
    ``for`` whose start the code shows), or, with ``counters``, on a call whose integer counter
    parameters (compared with an integer in ``test``) hold 0; None when nothing decides it.
    ``lower_bound(expr)`` tells the least value an expression the code cannot fold may hold
    (``counter > k`` is false at a start no greater than k's least value); ``settled(binding)``
    says that a binding of the loop's start needs no deciding (the caller knows that path is
    fine), so the start's other bindings decide alone."""
    constant = lambda e: constant_value(ctx, e)  # noqa: E731
    for loop in loops:
        values, starts = _first_values(ctx, loop, test, settled)
        truth = truth_under(test, values, constant) if values else None
        if truth is None and values and lower_bound is not None:
            truth = next(
                (t for n, v in values.items() if (t := _truth_below_bound(test, n, v, lower_bound)) is not None), None
            )
        if truth is None:
            truth = next((t for n, s in starts.items() if (t := _truth_at_start(ctx, test, n, s)) is not None), None)
        if truth is not None:
            return truth
    if counters:
        values = {name: 0 for name in _counter_parameters(ctx, test)}
        if values:
            return truth_under(test, values, constant)
    return None


def _first_values(ctx: FileContext, loop: ast.AST, test: ast.AST, settled=None) -> tuple[dict, dict]:
    """``(values, starts)`` for the loop's counter as read in ``test``: its first value when
    the code shows a constant (``range(n)``: 0, ``range(start, n)`` with every binding of
    ``start`` not ``settled`` giving one same constant), else the start expression (``range(s, n)``: s)."""
    counter = _counter(loop)
    if counter is None:
        return {}, {}
    name, start = counter
    if not _read_only_from(ctx, test, name, loop):
        return {}, {}
    value = constant_value(ctx, start) if start is not None else 0
    if value is UNKNOWN and settled is not None:
        value = _start_value(ctx, start, settled)
    if value is not UNKNOWN:
        return {name: value}, {}
    return {}, {name: start}


def _start_value(ctx: FileContext, start: ast.AST, settled) -> object:
    """The one integer the start expression holds: a name every binding of which that is not
    ``settled`` gives one same integer (``start = 0`` beside a resume path's
    ``start = ckpt["epoch"]``), or such a value plus or minus an integer (``range(last + 1, n)``
    with ``last = -1``); UNKNOWN otherwise."""
    value = _folded(ctx, start, lambda name: _sole_start(ctx, name, settled))
    return UNKNOWN if value is None else value


def _sole_start(ctx: FileContext, name: ast.Name, settled) -> int | None:
    """The one integer every binding of ``name`` that is not ``settled`` gives it."""
    bindings = [b for b in dataflow(ctx).reaching(name) if not settled(b)]
    plain = lambda n: None  # noqa: E731  (one level: a binding's own names count only as constants)
    values = [_folded(ctx, b.value, plain) if b.kind == "assign" and b.value is not None else None for b in bindings]
    first = values[0] if values else None
    return first if first is not None and all(v == first for v in values) else None


def _folded(ctx: FileContext, expr: ast.AST, name_value: Callable[[ast.Name], int | None]) -> int | None:
    """The integer ``expr`` holds: a constant (``constant_value``), ``-k``, a sum or difference of
    such values; a name the constants do not decide is asked of ``name_value``."""
    value = constant_value(ctx, expr)
    if value is not UNKNOWN:
        return value if type(value) is int else None
    if isinstance(expr, ast.Name):
        return name_value(expr)
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
        inner = _folded(ctx, expr.operand, name_value)
        return None if inner is None else -inner
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub)):
        left, right = _folded(ctx, expr.left, name_value), _folded(ctx, expr.right, name_value)
        if left is None or right is None:
            return None
        return left + right if isinstance(expr.op, ast.Add) else left - right
    return None


def _counter(loop: ast.AST) -> tuple[str, ast.AST | None] | None:
    """``(name, start expression)`` of a loop counting up by one: ``for i in range(...)`` or the
    index of ``for i, x in enumerate(...)``; the start is None for 0."""
    if not isinstance(loop, (ast.For, ast.AsyncFor)) or not isinstance(loop.iter, ast.Call):
        return None
    call, target = loop.iter, loop.target
    if not isinstance(call.func, ast.Name) or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    if call.func.id == "range" and isinstance(target, ast.Name) and call.args:
        return target.id, (call.args[0] if len(call.args) >= 2 else None)
    if call.func.id == "enumerate" and isinstance(target, ast.Tuple) and target.elts:
        index = target.elts[0]
        if not isinstance(index, ast.Name):
            return None
        start = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "start"), None)
        return index.id, start
    return None


def _read_only_from(ctx: FileContext, test: ast.AST, name: str, loop: ast.AST) -> bool:
    """Every read of ``name`` in ``test`` gets the loop's own binding (nothing rebinds it first)."""
    reads = [n for n in walk_no_scopes(test) if isinstance(n, ast.Name) and n.id == name]
    return bool(reads) and all(
        (found := dataflow(ctx).reaching(read)) and all(b.kind == "for" and b.stmt is loop for b in found)
        for read in reads
    )


def _truth_at_start(ctx: FileContext, test: ast.AST, name: str, start: ast.AST) -> bool | None:
    """The truth of ``name > start`` (``==``, ``!=``, ...) when ``name`` holds ``start``."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _AT_START):
        return None
    left, right = test.left, test.comparators[0]
    if isinstance(right, ast.Name) and right.id == name:
        left, right = right, left  # `start < v` is `v > start`; at equality the mirrored test agrees
    if not (isinstance(left, ast.Name) and left.id == name and ast.dump(right) == ast.dump(start)):
        return None
    return _AT_START[type(test.ops[0])] if dataflow(ctx).same_values(start, right) is True else None


def _truth_below_bound(test: ast.AST, name: str, value: object, lower_bound) -> bool | None:
    """``name > k`` (``k < name``) is false and ``name <= k`` true when ``name`` holds ``value``
    and k is shown at least ``value``; ``>=``/``<`` likewise when k is shown above it."""
    if type(value) is not int or not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    op, left, right = type(test.ops[0]), test.left, test.comparators[0]
    if isinstance(right, ast.Name) and right.id == name:
        left, right, op = right, left, _MIRRORED.get(op)
    if not (isinstance(left, ast.Name) and left.id == name) or op not in _MIRRORED:
        return None
    bound = lower_bound(right)
    if bound is None:
        return None
    if op in (ast.Gt, ast.LtE) and value <= bound or op in (ast.GtE, ast.Lt) and value < bound:
        return op in (ast.LtE, ast.Lt)
    return None


def _counter_parameters(ctx: FileContext, test: ast.AST) -> set[str]:
    """Parameters of the function around ``test``, still holding the argument, that ``test``
    compares with an integer (``epoch > 0``, ``step == 0``): counts the caller advances."""
    found = set()
    for node in walk_no_scopes(test):
        if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], _ORDERINGS)):
            continue
        sides = (node.left, node.comparators[0])
        if not any(_is_int(s) for s in sides):
            continue
        for side in sides:
            bindings = dataflow(ctx).reaching(side) if isinstance(side, ast.Name) else []
            if bindings and all(b.kind == "param" for b in bindings):
                found.add(side.id)
    return found


def _is_int(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int
