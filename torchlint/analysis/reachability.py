"""Which statements of a block can run: none after an unconditional jump out of it.

A ``return``, ``raise``, ``continue`` or ``break`` leaves its block, so the statements after it in
the same block never run (``def test(self): return`` left at the top of a function disables the rest
of its body). Dead statements make no events, no findings and no part of a function's summary: the
file index leaves them out (``FileContext.nodes``) and the event walk stops at the jump.

The same jumps say where a branch goes: ``exit_after`` finds the jump that ends a block right after a
statement (``if overflow: skip(); continue``), ``jump_skips`` whether taking it passes over a later
statement of the function (the normal path after the ``if``).
Nothing here knows about PyTorch.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.nodes import position

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

# Statements after which nothing else of their block runs.
EXITS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
# The fields of a node that hold a block of statements.
BLOCK_FIELDS = frozenset({"body", "orelse", "finalbody"})
# Jumps that surely go on elsewhere in the same function (a ``raise`` may be caught right around it).
_JUMPS = (ast.Return, ast.Continue, ast.Break)
_TRIES = (ast.Try, ast.TryStar) if hasattr(ast, "TryStar") else (ast.Try,)


def live_length(block: list) -> int:
    """How many statements at the start of ``block`` can run: up to and including the first
    unconditional jump (all of them when there is none)."""
    for index, stmt in enumerate(block):
        if isinstance(stmt, EXITS):
            return index + 1
    return len(block)


def live_statements(block: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of ``block`` that can run (``live_length``)."""
    length = live_length(block)
    return block if length == len(block) else block[:length]


def statement_of(ctx: FileContext, node: ast.AST) -> ast.stmt | None:
    """The statement ``node`` is part of (``node`` itself for a statement)."""
    current: ast.AST | None = node
    while current is not None and not isinstance(current, ast.stmt):
        current = ctx.parent(current)
    return current


def block_holding(parent: ast.AST | None, stmt: ast.AST) -> list | None:
    """The block of ``parent`` (its body, ``else`` or ``finally``) that holds the statement ``stmt``."""
    for field in BLOCK_FIELDS:
        block = getattr(parent, field, None)
        if isinstance(block, list) and any(s is stmt for s in block):
            return block
    return None


def exit_after(ctx: FileContext, node: ast.AST) -> ast.Return | ast.Continue | ast.Break | None:
    """The jump (``return``, ``continue``, ``break``) that ends the block holding ``node``'s statement,
    after it: once ``node`` has run, its block leaves without falling through to what follows. A
    ``raise`` does not count (a handler around it may carry on after the block)."""
    statement = statement_of(ctx, node)
    block = block_holding(ctx.parent(statement), statement) if statement is not None else None
    if block is None:
        return None
    last = live_statements(block)[-1]
    if isinstance(last, _JUMPS) and last is not statement and block.index(statement) < block.index(last):
        return last
    return None


def jump_skips(ctx: FileContext, jump: ast.AST, node: ast.AST) -> bool:
    """Taking ``jump`` never reaches ``node``, written after it in the same function, in this turn:
    a ``return`` leaves the function, a ``continue`` or ``break`` the turn of the innermost loop around
    it, whose body holds ``node``. Not when a ``finally`` the jump passes through holds ``node``."""
    if position(node) <= position(jump) or ctx.enclosing_function(jump) is not ctx.enclosing_function(node):
        return False
    if any(
        isinstance(owner, _TRIES)
        and ctx.is_inside(jump, owner)
        and any(ctx.is_inside(node, s) for s in owner.finalbody)
        for owner in ctx.ancestors(node)
    ):
        return False
    if isinstance(jump, ast.Return):
        return True
    loops = ctx.enclosing_loops(jump)
    return bool(loops) and any(ctx.is_inside(node, stmt) for stmt in loops[0].body)


def runs_before(ctx: FileContext, stmt: ast.stmt, node: ast.AST) -> bool:
    """``stmt`` has run whenever ``node`` runs: it sits in a block a later statement of which holds
    ``node`` (not in one branch of an ``if`` with ``node`` in the other). Same function assumed."""
    block = block_holding(ctx.parent(stmt), stmt)
    return block is not None and any(ctx.is_inside(node, later) for later in block[block.index(stmt) + 1 :])


def may_run_between(ctx: FileContext, node: ast.AST, first: ast.AST, last: ast.AST) -> bool:
    """``node`` may run after ``first`` and before ``last`` (one function, ``first`` running
    before ``last``): it lies between them in the source, or in a loop around ``last`` that does
    not hold ``first`` (the loop's next turn comes back to ``last`` without running ``first``)."""
    if position(first) < position(node) < position(last):
        return True
    return any(ctx.is_inside(node, loop) and not ctx.is_inside(first, loop) for loop in ctx.enclosing_loops(last))


def statements_between(ctx: FileContext, first: ast.AST, last: ast.AST) -> list[ast.stmt] | None:
    """The statements that may run after ``first``'s statement and before ``last``, when that
    statement sits directly in a block a later statement of which holds ``last`` (``runs_before``):
    those between the two in the block, and the later one itself when ``last`` lies nested in it
    (what runs there before ``last``, or after it before a loop inside brings it back). None
    when ``first`` runs in some other place (one branch of an ``if``, a loop ``last`` is not in),
    or ``last`` in another scope (a function defined in between runs when it is called)."""
    if ctx.enclosing_scope(first) is not ctx.enclosing_scope(last):
        return None
    stmt = statement_of(ctx, first)
    block = block_holding(ctx.parent(stmt), stmt) if stmt is not None else None
    if block is None:
        return None
    later = block[block.index(stmt) + 1 :]
    own = statement_of(ctx, last)
    for index, holder in enumerate(later):
        if holder is own:
            return later[:index]
        if ctx.is_inside(last, holder):
            return later[: index + 1]
    return None
