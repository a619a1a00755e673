"""What survives a loop's back edge: values carried from one iteration to the next, and steps that
can be repeated by the next iteration at all.

Two questions, both about structured Python (no control-flow graph, nothing of PyTorch):

* ``rebound_every_iteration(ctx, loop, name)``: some statement of the loop body rebinds ``name`` to
  a value that does not read it (``outputs = []``, ``loss = criterion(...)``) on every iteration, so
  nothing bound to ``name`` in one iteration is still there in the next: what grows under that name
  grows for one iteration only. The rebinding may sit in both branches of an ``if``, or bind
  ``name`` as one element of a tuple (``preds, aux = model(x)``).
* ``element_holder_rebound_every_iteration(ctx, loop, target)``: ``target`` is an element
  (``preds[i]``) of a container every iteration binds to a new value (not an alias such as
  ``buf = self.buffer``), so an in-place update of it lasts one iteration.
* ``leaves_loop_after(ctx, node, loop)``: every path from the statement holding ``node`` to the end
  of the loop body leaves the loop (``break``, ``return``, ``raise``), so ``node`` runs at most once
  per entry into the loop (``while True: ...; opt.step(); break``). A flag set to a true constant
  and tested before the exit (``complete = True`` ... ``if complete: break``) is followed.

Both choose the side that says less: an inner loop's body is taken to run (its bound is data the
linter cannot see), a ``continue`` anywhere before a rebinding voids it, and any statement the walk
does not understand ends ``leaves_loop_after`` with False.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.imports import symbol
from torchlint.analysis.nodes import position, walk_no_scopes
from torchlint.analysis.reachability import block_holding, statement_of

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_WITHS = (ast.With, ast.AsyncWith)
# Blocks that run whenever the statement owning them runs (a loop's body is taken to run once).
_ALWAYS_RUN = {
    ast.For: ("body",),
    ast.AsyncFor: ("body",),
    ast.While: ("body",),
    ast.With: ("body",),
    ast.AsyncWith: ("body",),
    ast.Try: ("body", "finalbody"),
}
if hasattr(ast, "TryStar"):  # Python 3.11+
    _ALWAYS_RUN[ast.TryStar] = ("body", "finalbody")
_EXITS = (ast.Break, ast.Return, ast.Raise)


# ----- values carried around the back edge ----------------------------------------------------
def rebound_every_iteration(ctx: FileContext, loop: ast.AST, name: str, *, fresh: bool = False) -> bool:
    """Whether every iteration of ``loop`` rebinds ``name`` (a symbol: ``total``, ``self.losses``)
    to a value that does not read it, so nothing accumulated under it outlives the iteration.
    A rebinding counts when it runs on every path through the body: in a block that always runs,
    or in both branches of an ``if`` (``preds = model(x, boxes)`` / ``else: preds = model(x)``).
    ``fresh``: the value must also be new, not an alias of something that already exists
    (``buf = self.buffer``), for callers that write into the object rather than rebind the name."""
    scope = ctx.enclosing_scope(loop)
    for stmt in ctx.nodes(ast.Assign, ast.AnnAssign):
        if (
            _rebinds(stmt, name, fresh)
            and ctx.is_inside(stmt, loop)
            and ctx.enclosing_scope(stmt) is scope
            and _runs_every_iteration(ctx, stmt, loop, name, fresh)
            and not any(position(c) < position(stmt) for c in _continues(ctx, loop))
        ):
            return True
    return False


def element_holder_rebound_every_iteration(ctx: FileContext, loop: ast.AST, target: ast.AST) -> bool:
    """Whether ``target`` is an element (``preds[i]``, ``meter["loss"]``) of a container that every
    iteration of ``loop`` binds afresh, so an in-place update of the element is gone by the next
    iteration however long the container's contents would otherwise live."""
    holder = target
    while isinstance(holder, ast.Subscript):
        holder = holder.value
        name = symbol(holder)
        if name is not None and rebound_every_iteration(ctx, loop, name, fresh=True):
            return True
    return False


def _rebinds(stmt: ast.AST, name: str, fresh: bool) -> bool:
    """``stmt`` binds ``name`` (alone or in a tuple) to a value that does not read it."""
    if not isinstance(stmt, (ast.Assign, ast.AnnAssign)) or stmt.value is None:
        return False
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    if not any(symbol(bound) == name for target in targets for bound in _bound(target)):
        return False
    if fresh and isinstance(stmt.value, (ast.Name, ast.Attribute, ast.Subscript, ast.Starred)):
        return False
    return not _reads(stmt.value, name)


def _bound(target: ast.AST) -> list[ast.AST]:
    """The holders an assignment target binds: itself, or each element of a tuple/list target."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return [bound for element in target.elts for bound in _bound(element)]
    if isinstance(target, ast.Starred):
        return _bound(target.value)
    return [target]


def _block_rebinds(block: list, name: str, fresh: bool) -> bool:
    """Whether every path through ``block`` rebinds ``name`` (see ``rebound_every_iteration``)."""
    for stmt in block:
        if isinstance(stmt, ast.Continue):
            return False
        if _rebinds(stmt, name, fresh):
            return True
        if (
            isinstance(stmt, ast.If)
            and _block_rebinds(stmt.body, name, fresh)
            and _block_rebinds(stmt.orelse, name, fresh)
        ):
            return True
        fields = _ALWAYS_RUN.get(type(stmt), ())
        if (
            fields
            and not isinstance(stmt, _LOOPS)
            and any(_block_rebinds(getattr(stmt, f), name, fresh) for f in fields)
        ):
            return True
    return False


def _reads(expr: ast.AST, name: str) -> bool:
    return any(isinstance(node, (ast.Name, ast.Attribute)) and symbol(node) == name for node in walk_no_scopes(expr))


def _continues(ctx: FileContext, loop: ast.AST) -> list[ast.Continue]:
    """The ``continue`` statements that jump to the back edge of ``loop`` (not of a loop inside it)."""
    return [c for c in ctx.nodes(ast.Continue) if ctx.enclosing_loops(c)[:1] == [loop]]


def _runs_every_iteration(ctx: FileContext, stmt: ast.AST, loop: ast.AST, name: str, fresh: bool) -> bool:
    """Whether ``stmt`` sits, up to ``loop``, only in blocks that run whenever their owner runs, or
    in a branch of an ``if`` whose other branch rebinds ``name`` too."""
    child = stmt
    for owner in ctx.ancestors(stmt):
        fields = _ALWAYS_RUN.get(type(owner), ())
        if not any(child in getattr(owner, field, ()) for field in fields) and not _other_branch_rebinds(
            owner, child, name, fresh
        ):
            return False
        if owner is loop:
            return True
        child = owner
    return False


def _other_branch_rebinds(owner: ast.AST, child: ast.AST, name: str, fresh: bool) -> bool:
    if not isinstance(owner, ast.If):
        return False
    if child in owner.body:
        return _block_rebinds(owner.orelse, name, fresh)
    return child in owner.orelse and _block_rebinds(owner.body, name, fresh)


# ----- steps the next iteration cannot repeat --------------------------------------------------
def leaves_loop_after(ctx: FileContext, node: ast.AST, loop: ast.AST) -> bool:
    """Whether every path from the statement holding ``node`` to the end of ``loop``'s body leaves
    the loop, so ``node`` runs at most once each time the loop is entered."""
    statement = statement_of(ctx, node)
    if statement is None:
        return False
    truthy: set[str] = set()
    child: ast.AST = statement
    while True:
        owner = ctx.parent(child)
        block = block_holding(owner, child)
        if owner is None or block is None:
            return False
        if owner is loop:
            return block is loop.body and _walk(block[block.index(child) + 1 :], truthy) is True
        if isinstance(owner, _LOOPS) or not _falls_through(owner, block):
            return False  # an inner loop may come back to it; except/else blocks: not followed
        exits = _walk(block[block.index(child) + 1 :], truthy)
        if exits is not None:
            return exits
        child = owner


def _falls_through(owner: ast.AST, block: list) -> bool:
    """Whether the end of ``block`` goes on with what follows ``owner`` (an ``if`` branch, a
    ``with`` body), rather than somewhere the walk does not follow (a ``try``'s ``else``)."""
    return isinstance(owner, ast.If) or (isinstance(owner, _WITHS) and block is owner.body)


def _walk(block: list, truthy: set[str]) -> bool | None:
    """Walk ``block`` in order: True when every path leaves the loop, False when some path surely
    reaches the back edge (a ``continue``) or the walk cannot tell, None when the block ends
    without deciding (go on after it). ``truthy`` holds the names known true here, updated."""
    for stmt in block:
        if isinstance(stmt, _EXITS):
            return True
        if isinstance(stmt, ast.Continue):
            return False
        if isinstance(stmt, ast.If):
            known = _known(stmt.test, truthy)
            if known is not None:
                outcome = _walk(stmt.body if known else stmt.orelse, truthy)
            else:
                body_truthy, else_truthy = set(truthy), set(truthy)
                body, other = _walk(stmt.body, body_truthy), _walk(stmt.orelse, else_truthy)
                if body is True and other is True:
                    return True
                if body is False or other is False:
                    return False
                truthy.intersection_update(body_truthy if body is None else else_truthy)
                if body is None and other is None:
                    truthy.intersection_update(else_truthy)
                continue
            if outcome is not None:
                return outcome
        elif isinstance(stmt, _WITHS):
            outcome = _walk(stmt.body, truthy)
            if outcome is not None:
                return outcome
        elif isinstance(stmt, (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Pass, ast.Delete)):
            _note(stmt, truthy)
        else:
            return False  # loops, try, match, defs: not followed
    return None


def _note(stmt: ast.AST, truthy: set[str]) -> None:
    """Update the names known true after ``stmt``: set by ``flag = True`` (or another true
    constant), forgotten by any other binding."""
    for node in walk_no_scopes(stmt):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) or isinstance(node, ast.arg):
            truthy.discard(getattr(node, "id", None))
    if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant) and stmt.value.value:
        truthy.update(t.id for t in stmt.targets if isinstance(t, ast.Name))


def _known(test: ast.AST, truthy: set[str]) -> bool | None:
    if isinstance(test, ast.Name) and test.id in truthy:
        return True
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and _known(test.operand, truthy):
        return False
    return None
