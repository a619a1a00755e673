"""What must be true where a node runs: the branch conditions around it, within its function.

``conditions_at(ctx, node)`` yields ``(test, value)`` pairs: each ``test`` expression is known to
have evaluated to ``value`` (truthiness) whenever ``node`` runs. They come from

* the ``if``/``while``/conditional expression whose branch holds ``node``;
* the operands before ``node`` in an ``and``/``or`` (``a and f()`` runs ``f`` only when ``a``);
* an earlier statement of the same block that leaves the block when its test holds
  (``if not ready: return`` before ``node``: ``ready`` is true below it).

``never_runs(ctx, node)`` says whether one of them is decided by constants against ``node``.
``implies(test, value, atom)`` says whether ``test`` having that truth value forces the fact
``atom`` recognises in sub-expressions, through ``not``, ``and`` and ``or``.
Nothing here knows about PyTorch.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from torchlint.analysis.constants import UNKNOWN, EnumMember, constant_value
from torchlint.analysis.reachability import ends_block, live_statements

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Module)


def conditions_at(ctx: FileContext, node: ast.AST) -> Iterator[tuple[ast.expr, bool]]:
    """``(test, value)`` pairs that hold wherever ``node`` runs, innermost first, within its scope."""
    child = node
    for ancestor in ctx.ancestors(node):
        if isinstance(child, ast.stmt):
            yield from _early_exits(ancestor, child, ctx.process_exits)
        if isinstance(ancestor, _SCOPES):
            return
        if isinstance(ancestor, (ast.If, ast.IfExp)) and child is not ancestor.test:
            in_body = child is ancestor.body if isinstance(ancestor, ast.IfExp) else child in ancestor.body
            yield ancestor.test, in_body
        elif isinstance(ancestor, ast.While) and child in ancestor.body:
            yield ancestor.test, True
        elif isinstance(ancestor, ast.BoolOp):
            value = isinstance(ancestor.op, ast.And)  # `a and b`: b runs when a is true
            for operand in ancestor.values:
                if operand is child:
                    break
                yield operand, value
        child = ancestor


def never_runs(ctx: FileContext, node: ast.AST) -> bool:
    """Whether a branch condition around ``node`` is decided by constants against it
    (``if world_size > 1:`` with ``world_size = 1`` bound once): that code is dead."""
    return any(
        truth_under(test, {}, lambda expr: constant_value(ctx, expr)) is (not value)
        for test, value in conditions_at(ctx, node)
    )


def _early_exits(parent: ast.AST, stmt: ast.stmt, exits) -> Iterator[tuple[ast.expr, bool]]:
    """Tests of earlier sibling ``if`` statements that leave the block on one branch only (a jump,
    or one of the file's ``exits`` that end the process: ``if not ok: sys.exit(1)``)."""
    for field in ("body", "orelse", "finalbody"):
        block = getattr(parent, field, None)
        if isinstance(block, list) and stmt in block:
            break
    else:
        return
    for earlier in block[: block.index(stmt)]:
        if not isinstance(earlier, ast.If):
            continue
        body_exits, else_exits = _always_exits(earlier.body, exits), _always_exits(earlier.orelse, exits)
        if body_exits and not else_exits:
            yield earlier.test, False
        elif else_exits and not body_exits:
            yield earlier.test, True


def _always_exits(block: list[ast.stmt], exits) -> bool:
    return bool(block) and ends_block(live_statements(block, exits)[-1], exits)


def consequences(test: ast.AST, value: bool) -> Iterator[tuple[ast.AST, bool]]:
    """``(expr, value)`` for ``test`` and every sub-expression whose truth ``test`` having truth
    ``value`` forces, through ``not``, ``and`` and ``or`` (``a and not b`` true: a true, b false)."""
    yield test, value
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        yield from consequences(test.operand, not value)
    elif isinstance(test, ast.BoolOp):
        # `a and b` true: both are; `a or b` false: both are false. Other combinations force nothing.
        if isinstance(test.op, ast.And) and value or isinstance(test.op, ast.Or) and not value:
            for operand in test.values:
                yield from consequences(operand, value)


def implies(test: ast.AST, value: bool, atom: Callable[[ast.AST], bool | None]) -> bool:
    """Whether ``test`` evaluating to ``value`` forces a fact that ``atom`` recognises.

    ``atom(expr)`` is True when ``expr`` being true means the fact holds (``self.training``),
    False when ``expr`` being *false* means it holds (``device.type != "xla"`` for "on XLA"),
    None when ``expr`` says nothing about it."""
    for expr, truth in consequences(test, value):
        polarity = atom(expr)
        if polarity is not None and truth == polarity:
            return True
    return False


class _NotNone:
    """The value of an expression shown to hold some object, never ``None``, and nothing more: it
    decides ``x is None`` and ``x is not None``, and no other test."""

    def __repr__(self) -> str:
        return "NOT_NONE"


NOT_NONE = _NotNone()


def truth_under(
    test: ast.AST, values: dict[str, object], constant: Callable[[ast.AST], object] | None = None
) -> bool | None:
    """The truth of ``test`` when the names in ``values`` hold those Python values (``mode ==
    "train"`` with ``mode="val"``: False; ``not train``, ``optimizer is not None``, ``a and b``,
    ``x if test else y`` with its test decided);
    None when it depends on anything else. ``constant`` gives the value of another name or
    attribute (``LoopPhase.TRAIN``) when it stands for one constant, ``UNKNOWN`` otherwise.
    A name given ``NOT_NONE`` decides only its tests against ``None``."""
    value = _value_under(test, values, constant)
    return None if value is UNKNOWN else bool(value)


# Ordering comparisons (``world_size > 1``), decided on values Python can order.
_ORDERINGS = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}


def _value_under(expr: ast.AST, values: dict[str, object], constant=None):
    """``_any_value_under`` with ``NOT_NONE`` read as unknown: outside a test against ``None``
    it says nothing (an object may be falsy, equal to anything)."""
    value = _any_value_under(expr, values, constant)
    return UNKNOWN if value is NOT_NONE else value


def _any_value_under(expr: ast.AST, values: dict[str, object], constant=None):
    if isinstance(expr, ast.Constant):
        return expr.value
    if isinstance(expr, ast.Name) and expr.id in values:
        return values[expr.id]
    if isinstance(expr, (ast.Name, ast.Attribute)):
        return constant(expr) if constant is not None else UNKNOWN
    if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
        items = [_value_under(e, values, constant) for e in expr.elts]
        return UNKNOWN if any(i is UNKNOWN for i in items) else tuple(items)
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        inner = _value_under(expr.operand, values, constant)
        return UNKNOWN if inner is UNKNOWN else not inner
    if isinstance(expr, ast.IfExp):
        # `a if test else b`: the arm the test picks, when it is decided.
        test = _value_under(expr.test, values, constant)
        if test is UNKNOWN:
            return UNKNOWN
        return _any_value_under(expr.body if test else expr.orelse, values, constant)
    if isinstance(expr, ast.BoolOp):
        # Three-valued: `False and <unknown>` is False, `True or <unknown>` is True.
        decisive = isinstance(expr.op, ast.Or)
        unknown = False
        for operand in expr.values:
            value = _value_under(operand, values, constant)
            if value is UNKNOWN:
                unknown = True
            elif bool(value) == decisive:
                return value
        return UNKNOWN if unknown else (not decisive)
    if isinstance(expr, ast.Compare) and len(expr.ops) == 1:
        op = expr.ops[0]
        left = _any_value_under(expr.left, values, constant)
        right = _any_value_under(expr.comparators[0], values, constant)
        if left is NOT_NONE or right is NOT_NONE:
            if isinstance(op, (ast.Is, ast.IsNot)) and (left is None or right is None):
                return isinstance(op, ast.IsNot)  # an object is not None
            return UNKNOWN
        if left is UNKNOWN or right is UNKNOWN:
            return UNKNOWN
        try:
            if isinstance(op, ast.Eq):
                return left == right
            if isinstance(op, ast.NotEq):
                return left != right
            if isinstance(op, (ast.Is, ast.IsNot)):
                # An enum member read twice is one object; the values standing for it are not.
                same = left == right if isinstance(left, EnumMember) else left is right
                return same if isinstance(op, ast.Is) else not same
            if type(op) in _ORDERINGS:
                return _ORDERINGS[type(op)](left, right)
            if isinstance(op, ast.In):
                return left in right
            if isinstance(op, ast.NotIn):
                return left not in right
        except TypeError:
            return UNKNOWN
    return UNKNOWN
