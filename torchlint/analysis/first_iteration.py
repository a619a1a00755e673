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
from typing import TYPE_CHECKING

from torchlint.analysis.conditions import truth_under
from torchlint.analysis.constants import UNKNOWN, constant_value
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.nodes import walk_no_scopes

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

_ORDERINGS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)
# `v <op> start` on the first pass, where v == start: the truth of each comparison.
_AT_START = {ast.Lt: False, ast.Gt: False, ast.NotEq: False, ast.Eq: True, ast.LtE: True, ast.GtE: True}


def first_pass_truth(ctx: FileContext, test: ast.AST, loops: tuple = (), counters: bool = False) -> bool | None:
    """The truth ``test`` is shown to have on the first iteration of one of ``loops`` (each a
    ``for`` whose start the code shows), or, with ``counters``, on a call whose integer counter
    parameters (compared with an integer in ``test``) hold 0; None when nothing decides it."""
    constant = lambda e: constant_value(ctx, e)  # noqa: E731
    for loop in loops:
        values, starts = _first_values(ctx, loop, test)
        truth = truth_under(test, values, constant) if values else None
        if truth is None:
            truth = next((t for n, s in starts.items() if (t := _truth_at_start(ctx, test, n, s)) is not None), None)
        if truth is not None:
            return truth
    if counters:
        values = {name: 0 for name in _counter_parameters(ctx, test)}
        if values:
            return truth_under(test, values, constant)
    return None


def _first_values(ctx: FileContext, loop: ast.AST, test: ast.AST) -> tuple[dict, dict]:
    """``(values, starts)`` for the loop's counter as read in ``test``: its first value when
    the code shows a constant (``range(n)``: 0), else the start expression (``range(s, n)``: s)."""
    counter = _counter(loop)
    if counter is None:
        return {}, {}
    name, start = counter
    if not _read_only_from(ctx, test, name, loop):
        return {}, {}
    value = constant_value(ctx, start) if start is not None else 0
    if value is not UNKNOWN:
        return {name: value}, {}
    return {}, {name: start}


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
