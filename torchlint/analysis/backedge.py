"""What survives a loop's back edge: values carried from one iteration to the next, and steps that
can be repeated by the next iteration at all.

Three questions, all about structured Python (no control-flow graph, nothing of PyTorch):

* ``rebound_around(ctx, loop, node, name)``: what ``name`` holds at ``node`` never reaches ``node``
  again in the next iteration (no loop-carried binding): every path round the back edge rebinds
  ``name`` to a value that does not read it (``outputs = []``, ``loss = criterion(...)``), before
  ``node`` on the way from the top of the body or after it on the way to the back edge, so what
  grows under that name at ``node`` grows for one iteration only. With ``given``, only the
  iterations on which some ``if`` tests take a known value are asked about (the iterations that
  run an optimizer step, for a total that may grow over the micro-steps between two of them).
* ``element_holder_rebound_around(ctx, loop, target, node)``: ``target`` is an element
  (``preds[i]``) of a container bound to a new value (not an alias such as
  ``buf = self.buffer``) round ``node``, so an in-place update of it lasts one iteration.
* ``reset_before_next(ctx, node, guard, name, accepts)``: every path from ``node`` to the next
  evaluation of the ``if`` test ``guard`` (round the back edge of the loop holding both, or out of
  that loop and into it again) last binds ``name`` to a value ``accepts`` holds: a counter the
  branch of ``node`` resets (``count = 0``) that the loop's next start does not change.
* ``leaves_loop_after(ctx, node, loop)``: every path from the statement holding ``node`` to the end
  of the loop body leaves the loop (``break``, ``return``, ``raise``), so ``node`` runs at most once
  per entry into the loop (``while True: ...; opt.step(); break``). A flag set to a true constant
  and tested before the exit (``complete = True`` ... ``if complete: break``) is followed.

All choose the side that says less: an inner loop's body is taken to run (its bound is data the
linter cannot see), a ``continue`` between ``node`` and a later rebinding voids it, and any
statement the walk does not understand ends ``leaves_loop_after`` with False.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.imports import symbol
from torchlint.analysis.nodes import position, target_elements, walk_no_scopes
from torchlint.analysis.reachability import block_holding, statement_of

if TYPE_CHECKING:
    from collections.abc import Callable

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
# How a walk of some statements ends for the paths that run them: every path that goes on past them
# has rebound the name (or left the loop); some path goes on without; some path jumps out of an
# inner loop without (its ``continue``/``break``: it goes on after that loop); or some path jumps to
# the back edge of the loop asked about without (a ``continue``, carrying the name round unchanged).
_KILLED, _OPEN, _ESCAPE, _LEAK = "killed", "open", "escape", "leak"


def rebound_around(
    ctx: FileContext,
    loop: ast.AST,
    node: ast.AST,
    name: str,
    *,
    fresh: bool = False,
    drops: Callable[[ast.AST], bool] | None = None,
    given: Callable[[ast.AST], bool | None] | None = None,
) -> bool:
    """Whether nothing ``name`` (a symbol: ``total``, ``self.losses``) holds at ``node`` in one
    iteration of ``loop`` reaches ``node`` in the next: every path from ``node`` round the back edge
    to ``node`` again rebinds ``name`` to a value that does not read it, so what grows under it at
    ``node`` grows for one iteration only. The rebinding may come before ``node`` on every path from
    the top of the body (``loss = critic + entropy`` before ``loss += policy``; a ``continue``
    before it skips ``node`` as well), or after ``node`` on every path to the back edge (a reset
    after the use). It may sit in both branches of an ``if``, or bind ``name`` as one element of a
    tuple (``preds, aux = model(x)``). ``fresh``: the value must also be new, not an alias of
    something that already exists (``buf = self.buffer``), for callers that write into the object
    rather than rebind the name. ``drops``: a rebinding that reads ``name`` counts as well when
    ``drops`` holds of its value, for callers that track one property of what the name holds
    rather than the value itself (``total = float(total)`` keeps the number, not what the number
    was attached to). ``given``: the paths asked about are those of iterations on which each ``if``
    test for which ``given(test)`` is True or False has that value (its other branch is not
    followed), for callers that ask about some iterations only (those that step the optimizer:
    ``if (i + 1) % accum == 0: optimizer.step(); total = 0``); None leaves the test open."""
    statement = statement_of(ctx, node)
    if statement is None or not ctx.is_inside(statement, loop):
        return False
    rebinds = _Rebinding(name, fresh, drops, given=given)
    return _rebound_on_the_way(ctx, loop, statement, rebinds, before=True) or _rebound_on_the_way(
        ctx, loop, statement, rebinds, before=False
    )


def element_holder_rebound_around(ctx: FileContext, loop: ast.AST, target: ast.AST, node: ast.AST) -> bool:
    """Whether ``target`` is an element (``preds[i]``, ``meter["loss"]``) of a container that
    ``loop`` binds afresh round ``node`` (see ``rebound_around``), so an in-place update of the
    element at ``node`` is gone by the next iteration however long the container's contents would
    otherwise live."""
    holder = target
    while isinstance(holder, ast.Subscript):
        holder = holder.value
        name = symbol(holder)
        if name is not None and rebound_around(ctx, loop, node, name, fresh=True):
            return True
    return False


def reset_before_next(ctx: FileContext, node: ast.AST, guard: ast.AST, name: str, accepts) -> bool:
    """Whether every path from ``node`` to the next evaluation of the ``if`` test ``guard`` last
    binds the local ``name`` to a value ``accepts(value)`` holds. Both sit directly in one loop
    (no inner loop around either), ``guard`` before ``node``; then the paths are: on from
    ``node`` to the back edge, every one of them rebinding ``name`` so (a ``continue`` or
    ``break`` before that carries the old value round), and nothing binding it between the top of
    the body and ``guard``; or out of the loop after that rebinding and into it again, where every
    binding of ``name`` outside the loop must be accepted too. Bindings between ``guard`` and
    ``node`` (the counter's increment) are not on those paths; any after ``node`` must be accepted."""
    statement, test_stmt = statement_of(ctx, node), statement_of(ctx, guard)
    if statement is None or test_stmt is None or not isinstance(test_stmt, ast.If):
        return False
    loops = ctx.enclosing_loops(statement)
    if not loops or ctx.enclosing_loops(test_stmt)[:1] != loops[:1] or position(test_stmt) >= position(statement):
        return False
    loop = loops[0]
    rebinds = _Rebinding(name, False, None, accepts)
    if not _rebound_on_the_way(ctx, loop, statement, rebinds, before=False):
        return False
    scope = ctx.enclosing_scope(guard)
    for binding in dataflow(ctx).visible_bindings(name, guard):
        stmt = binding.stmt
        if stmt is loop or ctx.enclosing_scope(stmt) is not scope:
            return False  # the loop's own counter, a parameter, a name of another scope
        inside = ctx.is_inside(stmt, loop)
        if inside and position(stmt) < position(test_stmt):
            return False  # rebound at the top of the body, before the test
        if inside and position(stmt) < position(statement):
            continue  # between the test and ``node``: on no path from ``node`` to the test
        if not rebinds(stmt):
            return False
    return True


def _rebound_on_the_way(ctx: FileContext, loop: ast.AST, statement: ast.AST, rebinds: _Rebinding, before: bool):
    """Whether every path from the top of ``loop``'s body to ``statement`` (``before``), or from
    ``statement`` to the back edge (not ``before``), rebinds the name (as ``rebinds`` judges a
    statement). Climbs from ``statement`` to ``loop``, walking at each
    level the statements of its block on that side of it."""
    child = statement
    inner = False  # climbing inside a loop nested in ``loop``: its continue/break fall out of it
    while True:
        owner = ctx.parent(child)
        block = block_holding(owner, child)
        if owner is None or block is None:
            return False
        index = next(i for i, s in enumerate(block) if s is child)
        # Before ``statement`` a jump never reaches it: every such path is vacuously done. After
        # it, a ``continue`` of ``loop`` itself carries the name round unchanged.
        outcome = _walk_rebinding(
            block[:index] if before else block[index + 1 :],
            rebinds,
            ctx.process_exits,
            nested=inner and not before,
            leak=not before,
        )
        if outcome == _KILLED:
            return True
        if outcome == _LEAK or owner is loop:
            return False
        if isinstance(owner, _LOOPS):
            inner = True
        child = owner


def _walk_rebinding(block: list, rebinds: _Rebinding, exits, *, nested: bool = False, leak: bool = False) -> str:
    """Walk ``block`` in order (see ``_KILLED``); a statement of ``exits`` (it ends the process)
    ends a path as a ``raise`` does. ``nested``: the block lies in a loop inside the one
    asked about, so its ``continue``/``break`` go on after that inner loop; ``leak``: a ``continue``
    of the loop asked about counts as reaching its back edge (else as a path that is done).
    With ``rebinds.accepts`` (``reset_before_next``) a ``break`` of the loop asked about carries
    the old value to the loop's next start."""
    for stmt in block:
        if isinstance(stmt, (ast.Continue, ast.Break)) and nested:
            return _ESCAPE
        if isinstance(stmt, ast.Continue) or (rebinds.accepts is not None and isinstance(stmt, ast.Break)):
            return _LEAK if leak else _KILLED
        if isinstance(stmt, _EXITS) or stmt in exits or rebinds(stmt):
            return _KILLED
        if isinstance(stmt, ast.If):
            outcome = _worst(
                _walk_rebinding(b, rebinds, exits, nested=nested, leak=leak) for b in rebinds.branches(stmt)
            )
        elif type(stmt) in _ALWAYS_RUN:
            # A loop's body is taken to run (its bound is data the linter cannot see), and so is a
            # ``try`` body (an exception is the exception); a jump out of an inner loop goes on after it.
            is_loop = isinstance(stmt, _LOOPS)
            outcomes = [
                _walk_rebinding(getattr(stmt, f), rebinds, exits, nested=nested or is_loop, leak=leak)
                for f in _ALWAYS_RUN[type(stmt)]
            ]
            outcome = next(o for o in (_LEAK, _KILLED, _ESCAPE, _OPEN) if o in outcomes)
            if is_loop and outcome == _ESCAPE:
                outcome = _OPEN
        else:
            continue
        if outcome != _OPEN:
            return outcome
    return _OPEN


def _worst(outcomes) -> str:
    """The outcome of a choice between paths: the worst any of them has."""
    found = set(outcomes)
    return next(o for o in (_LEAK, _ESCAPE, _OPEN, _KILLED) if o in found)


class _Rebinding:
    """Whether a statement binds ``name`` (alone or in a tuple) to a value that does not read it
    (or that ``drops`` says keeps nothing the caller tracks); see ``rebound_around``. With
    ``accepts``, whether it binds ``name`` alone to a value ``accepts(value)`` holds (see
    ``reset_before_next``). ``branches``: the blocks of an ``if`` the paths asked about may take."""

    def __init__(
        self,
        name: str,
        fresh: bool,
        drops: Callable[[ast.AST], bool] | None,
        accepts: Callable[[ast.AST], bool] | None = None,
        given: Callable[[ast.AST], bool | None] | None = None,
    ):
        self.name, self.fresh, self.drops, self.accepts, self.given = name, fresh, drops, accepts, given

    def branches(self, stmt: ast.If) -> tuple:
        known = self.given(stmt.test) if self.given is not None else None
        if known is None:
            return (stmt.body, stmt.orelse)
        return (stmt.body,) if known else (stmt.orelse,)

    def __call__(self, stmt: ast.AST) -> bool:
        if not isinstance(stmt, (ast.Assign, ast.AnnAssign)) or stmt.value is None:
            return False
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        if self.accepts is not None:
            return any(symbol(target) == self.name for target in targets) and self.accepts(stmt.value)
        if not any(symbol(bound) == self.name for target in targets for bound in target_elements(target)):
            return False
        if self.fresh and isinstance(stmt.value, (ast.Name, ast.Attribute, ast.Subscript, ast.Starred)):
            return False
        if not _reads(stmt.value, self.name):
            return True
        return self.drops is not None and self.drops(stmt.value)


def _reads(expr: ast.AST, name: str) -> bool:
    return any(isinstance(node, (ast.Name, ast.Attribute)) and symbol(node) == name for node in walk_no_scopes(expr))


# ----- steps the next iteration cannot repeat --------------------------------------------------
def leaves_loop_after(ctx: FileContext, node: ast.AST, loop: ast.AST) -> bool:
    """Whether every path from the statement holding ``node`` to the end of ``loop``'s body leaves
    the loop, so ``node`` runs at most once each time the loop is entered."""
    statement = statement_of(ctx, node)
    if statement is None:
        return False
    truthy: set[str] = set()
    exits = ctx.process_exits
    child: ast.AST = statement
    while True:
        owner = ctx.parent(child)
        block = block_holding(owner, child)
        if owner is None or block is None:
            return False
        if owner is loop:
            return block is loop.body and _walk(block[block.index(child) + 1 :], truthy, exits) is True
        if isinstance(owner, _LOOPS) or not _falls_through(owner, block):
            return False  # an inner loop may come back to it; except/else blocks: not followed
        leaves = _walk(block[block.index(child) + 1 :], truthy, exits)
        if leaves is not None:
            return leaves
        child = owner


def _falls_through(owner: ast.AST, block: list) -> bool:
    """Whether the end of ``block`` goes on with what follows ``owner`` (an ``if`` branch, a
    ``with`` body), rather than somewhere the walk does not follow (a ``try``'s ``else``)."""
    return isinstance(owner, ast.If) or (isinstance(owner, _WITHS) and block is owner.body)


def _walk(block: list, truthy: set[str], exits) -> bool | None:
    """Walk ``block`` in order: True when every path leaves the loop, False when some path surely
    reaches the back edge (a ``continue``) or the walk cannot tell, None when the block ends
    without deciding (go on after it). ``truthy`` holds the names known true here, updated;
    ``exits``: the file's statements that end the process (they leave the loop too)."""
    for stmt in block:
        if isinstance(stmt, _EXITS) or stmt in exits:
            return True
        if isinstance(stmt, ast.Continue):
            return False
        if isinstance(stmt, ast.If):
            known = _known(stmt.test, truthy)
            if known is not None:
                outcome = _walk(stmt.body if known else stmt.orelse, truthy, exits)
            else:
                body_truthy, else_truthy = set(truthy), set(truthy)
                body, other = _walk(stmt.body, body_truthy, exits), _walk(stmt.orelse, else_truthy, exits)
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
            outcome = _walk(stmt.body, truthy, exits)
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
