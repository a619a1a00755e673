"""Which statements of a block can run: none after an unconditional jump out of it.

A ``return``, ``raise``, ``continue`` or ``break`` leaves its block, so the statements after it in
the same block never run (``def test(self): return`` left at the top of a function disables the rest
of its body). So does a statement that calls what ends the process (``process_exits``: ``exit()``,
``sys.exit(1)``, ``os._exit(0)``; a debugging ``exit()`` left after the first step). Dead statements
make no events, no findings and no part of a function's summary: the file index leaves them out
(``FileContext.nodes``) and the event walk stops at the jump.

The same jumps say where a branch goes: ``exit_after`` finds the jump that ends a block right after a
statement (``if overflow: skip(); continue``), ``jump_skips`` whether taking it passes over a later
statement of the function (the normal path after the ``if``).
Nothing here knows about PyTorch.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.imports import ImportResolver
from torchlint.analysis.nodes import position

if TYPE_CHECKING:
    from collections.abc import Collection, Mapping

    from torchlint.analysis.context import FileContext

# Statements after which nothing else of their block runs (and, spelled as calls, the statements of
# ``process_exits``: a file's own fact, handed to the functions below as ``exits``).
EXITS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
# Functions that end the process where they are called: ``os._exit`` and ``os.abort`` at once;
# ``sys.exit`` (and the builtins) raise ``SystemExit``, which ``except SystemExit``, ``except
# BaseException`` or a bare ``except`` may catch and go on after. So each is treated as a ``raise``
# is, no stricter: it ends its block (and every block all of whose ways end in one), but it is no
# jump that surely goes elsewhere (``exit_after``) and a ``try`` around it does not end. Treating
# ``os._exit`` as stricter would gain nothing: what follows it in its block is dead either way.
_EXIT_FUNCTIONS = frozenset({"sys.exit", "os._exit", "os.abort"})
# The builtins ``site`` installs that do what ``sys.exit`` does, unless the file binds the name.
_EXIT_BUILTINS = frozenset({"exit", "quit"})
# The last part of every spelling of the calls above: a cheap first test, run for every statement.
_EXIT_NAMES = frozenset({"exit", "quit", "_exit", "abort"})
# The fields of a node that hold a block of statements.
BLOCK_FIELDS = frozenset({"body", "orelse", "finalbody"})
# Jumps that surely go on elsewhere in the same function (a ``raise`` may be caught right around it).
_JUMPS = (ast.Return, ast.Continue, ast.Break)
_TRIES = (ast.Try, ast.TryStar) if hasattr(ast, "TryStar") else (ast.Try,)


def ends_block(stmt: ast.stmt, exits: Collection[ast.stmt] = ()) -> bool:
    """Nothing after ``stmt`` in its block runs: it is a jump, or one of the file's ``exits``."""
    return isinstance(stmt, EXITS) or (bool(exits) and stmt in exits)


def live_length(block: list, exits: Collection[ast.stmt] = ()) -> int:
    """How many statements at the start of ``block`` can run: up to and including the first
    unconditional jump, or the first of ``exits`` (all of them when there is none)."""
    for index, stmt in enumerate(block):
        if isinstance(stmt, EXITS) or (exits and stmt in exits):
            return index + 1
    return len(block)


def live_statements(block: list[ast.stmt], exits: Collection[ast.stmt] = ()) -> list[ast.stmt]:
    """The statements of ``block`` that can run (``live_length``)."""
    length = live_length(block, exits)
    return block if length == len(block) else block[:length]


# ----- calls that end the process ----------------------------------------------------------------
def exit_call(stmt: ast.AST, names: frozenset[str] = _EXIT_NAMES) -> ast.Call | None:
    """The call of an expression statement spelled like one that ends the process (``exit()``,
    ``sys.exit(1)``, ``os._exit(0)``; ``names``: the last parts such a callee may have), before
    asking what the name means; None for anything else. Only a call standing as a statement:
    ``sys.exit(main())`` is one, ``ok or sys.exit(1)`` is not sure to run it."""
    if type(stmt) is not ast.Expr:
        return None
    call = stmt.value
    if type(call) is not ast.Call:
        return None
    func = call.func
    name = func.id if type(func) is ast.Name else func.attr if type(func) is ast.Attribute else None
    return call if name in names else None


def process_exits(nodes: Mapping[type, list], parents: Mapping[ast.AST, ast.AST]) -> frozenset[ast.stmt]:
    """The statements of a file that surely end the process, from the file's live nodes by type and
    its parent links (as ``FileContext`` indexes them).

    An expression statement calling ``sys.exit``, ``os._exit`` or ``os.abort`` through the file's
    imports (``import sys as s``, ``from sys import exit``), or the builtin ``exit``/``quit`` where
    the file binds that name to nothing else (no ``def exit``, no parameter, assignment, import or
    star import that could); and a statement all of whose ways on end in one (``_ends_process``):
    an ``if`` both branches of which do, a ``with`` whose body does, a loop whose body does with
    no ``break`` or ``continue`` of its own (a debugging ``exit()`` at the end of the first
    iteration: the loop's body is taken to run, as everywhere in the linter, so what follows the
    loop does not). A conditional ``exit()`` (``if debug: exit()``) ends nothing."""
    # ``from sys import exit as leave``: the few renamed imports of an exit join the cheap test.
    renamed = {
        alias.asname
        for node in nodes.get(ast.ImportFrom, ())
        if node.module in ("sys", "os")
        for alias in node.names
        if alias.asname and alias.name in _EXIT_NAMES
    }
    names = _EXIT_NAMES.union(renamed) if renamed else _EXIT_NAMES
    candidates = [stmt for stmt in nodes.get(ast.Expr, ()) if exit_call(stmt, names) is not None]
    if not candidates:
        return frozenset()
    imports = ImportResolver([*nodes.get(ast.Import, ()), *nodes.get(ast.ImportFrom, ())])
    found: set[ast.AST] = set()
    for stmt in candidates:
        func = stmt.value.func
        qualname = imports.raw_qualname(func)
        if qualname in _EXIT_FUNCTIONS or (
            qualname is None and type(func) is ast.Name and func.id in _EXIT_BUILTINS and not _may_bind(nodes, func.id)
        ):
            found.add(stmt)
    # Up through the statements around each: one is added once its last way on ends, whichever
    # branch of an ``if`` is met first.
    pending = list(found)
    while pending:
        owner = parents.get(pending.pop())
        if owner is not None and owner not in found and _ends_process(owner, found):
            found.add(owner)
            pending.append(owner)
    return frozenset(found)


def _ends_process(stmt: ast.AST, exits: set[ast.AST]) -> bool:
    """Whether every way through the compound ``stmt`` ends in one of ``exits`` (see
    ``process_exits``). A ``try`` never does: a handler may catch ``SystemExit`` and go on."""
    if isinstance(stmt, ast.If):
        return _block_ends(stmt.body, exits) and _block_ends(stmt.orelse, exits)
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return _block_ends(stmt.body, exits)
    if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
        return _block_ends(stmt.body, exits) and not any(_loop_jumps(s) for s in stmt.body)
    return False


def _block_ends(block: list, exits: set[ast.AST]) -> bool:
    """The statements of ``block`` that run end with one of ``exits``."""
    return bool(block) and live_statements(block, exits)[-1] in exits


def _loop_jumps(node: ast.AST) -> bool:
    """Whether ``node`` holds a ``break`` or ``continue`` of the loop around it (not of a loop or
    function inside it)."""
    if isinstance(node, (ast.Break, ast.Continue)):
        return True
    if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
        return any(_loop_jumps(s) for s in node.orelse)  # the ``else`` belongs to the outer turn
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.expr)):
        return False
    return any(_loop_jumps(child) for child in ast.iter_child_nodes(node))


def _may_bind(nodes: Mapping[type, list], name: str) -> bool:
    """Whether the file binds ``name`` other than by an import the resolver reads: a definition, a
    parameter, a store (assignment, loop or ``with`` target, walrus), an ``except ... as``, a
    ``match`` capture -- anywhere, as the builtin is shadowed by a binding in any scope around the
    call -- or a star import from a module that is not ``sys`` (it may export the name)."""
    return (
        any(getattr(node, "id", None) == name and type(node.ctx) is not ast.Load for node in nodes.get(ast.Name, ()))
        or any(
            node.name == name
            for kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler)
            for node in nodes.get(kind, ())
        )
        or any(node.arg == name for node in nodes.get(ast.arg, ()))
        or any(
            getattr(node, "name", None) == name or getattr(node, "rest", None) == name
            for kind in _MATCH_CAPTURES
            for node in nodes.get(kind, ())
        )
        or any(
            alias.name == "*" and node.module != "sys" for node in nodes.get(ast.ImportFrom, ()) for alias in node.names
        )
    )


_MATCH_CAPTURES = tuple(getattr(ast, kind) for kind in ("MatchAs", "MatchStar", "MatchMapping") if hasattr(ast, kind))


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
    ``raise`` does not count (a handler around it may carry on after the block), nor a call that
    ends the process (``sys.exit`` raises too; and nothing after it runs to be passed over)."""
    statement = statement_of(ctx, node)
    block = block_holding(ctx.parent(statement), statement) if statement is not None else None
    if block is None:
        return None
    last = live_statements(block, ctx.process_exits)[-1]
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
