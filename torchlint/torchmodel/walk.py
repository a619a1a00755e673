"""The event walk: the ordered events of one execution of a block, following calls into the file.

``event_walker(ctx).events(body)`` walks the statements of ``body`` in order and records every
event (``calls.CallEvents.classify``) with its place: the ``if``/``except``/``case`` branches
around it inside the block (``guards``), the inner loops (``loops``), the ``with`` items
(``withs``), and the call sites followed to reach it (``via``). Calls into functions, methods
and closures of this file are followed -- including defs nested in loop bodies, and
``optimizer.step(closure)``, whose closure runs inside the step -- ``MAX_INLINE_DEPTH`` deep and
``MAX_INLINED_CALLS`` in all per walk. A call of a function of another file of the project is not
walked into: the callee's ``effects`` (worked out once, in its own file) become events at the call
site. A call that is not followed and hands a loss and an optimizer to something is an opaque
step. Definitions are not walked where they are written.

What is shared per file lives on ``EventWalker`` (the calls of each statement, and what each
call means); what belongs to one walk (the inlining budget) lives on a ``_Walk``.
"""

from __future__ import annotations

import ast
from functools import cached_property
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import calls_elsewhere, resolve_local_call
from torchlint.analysis.dataflow import resolve_partial_function, resolve_returned_function
from torchlint.analysis.definitions import Definition
from torchlint.analysis.nodes import walk_no_scopes
from torchlint.analysis.reachability import live_statements
from torchlint.analysis.summaries import function_summary
from torchlint.torchmodel.calls import call_events, replaces_grad
from torchlint.torchmodel.effects import Effect, effects_of, events_at_call, model_method
from torchlint.torchmodel.events import MODE_KINDS, Event, EventKind

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

MAX_INLINE_DEPTH = 4
# Calls followed per walk: helpers that call many helpers would otherwise make a walk
# exponential in MAX_INLINE_DEPTH (fan-out ** depth bodies).
MAX_INLINED_CALLS = 64

_STATEMENT_TYPES = frozenset(
    cls for cls in vars(ast).values() if isinstance(cls, type) and issubclass(cls, ast.stmt) and cls is not ast.stmt
)
_JUMPS = {ast.Continue: EventKind.CONTINUE, ast.Break: EventKind.BREAK}


class EventWalker:
    """Walks blocks of one file into events; get the shared instance with ``event_walker(ctx)``."""

    def __init__(self, ctx: FileContext):
        self.ctx = ctx
        self.calls = call_events(ctx)

    def events(self, body: list[ast.stmt]) -> list[Event]:
        """The ordered events of one execution of ``body`` (following calls into this file)."""
        walk = _Walk(self)
        walk.block(body, guards=(), loops=(), via=(), withs=(), stack=())
        return walk.out

    def function_events(self, func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[Event]:
        return self.events(func.body)

    def effects(self, func: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[Effect, ...]:
        """What a call of ``func`` (a function of this file) does to what it is handed (``effects``):
        a summary worked out once per run, in this file, and shared by every file that calls it
        (``analysis.summaries``; a function asked for while its own effects are being worked out,
        in a recursion across files, has none so far)."""
        return function_summary(
            Definition(self.ctx, func),
            "torch.effects",
            lambda _: effects_of(self.ctx, func, self.function_events(func)),
            (),
        )

    def call_plan(self, node: ast.AST) -> list:
        """The calls of one statement or expression in execution order, each with what it means for
        the events: ``(call, classified event, local function it runs, opaque step, events of a
        function of another file)``. Shared: loops nest and helpers are inlined, so the same
        statement is walked many times."""
        return self.ctx.shared(("call-plan", node), lambda: self._plan(node))

    def _plan(self, node: ast.AST) -> list:
        calls = self._calls_in(node)
        # Inner calls run before outer ones: scaler.scale(loss) before .backward().
        calls.sort(key=lambda c: (c.end_lineno or 0, c.end_col_offset or 0))
        plan = []
        for call in calls:
            event = self.calls.classify(call)
            target = self._local_target(call) if event is None else None
            elsewhere = (
                self._effects_elsewhere(call) or self._model_method_modes(call)
                if event is None and target is None
                else None
            )
            opaque = self.calls.opaque_step(call) if event is None and target is None and not elsewhere else None
            if event is not None or target is not None or opaque is not None or elsewhere:
                plan.append((call, event, target, opaque, elsewhere))
        return plan

    def _local_target(self, call: ast.Call):
        """The function of this file a call runs: by its name, or a closure a factory of this file
        returned into the variable called (a step function built once and called per batch), or the
        function a ``functools.partial`` held in the variable wraps."""
        return (
            resolve_local_call(self.ctx, call)
            or resolve_returned_function(self.ctx, call)
            or resolve_partial_function(self.ctx, call)
        )

    def _effects_elsewhere(self, call: ast.Call) -> list[Event] | None:
        """The events a call of a function of another file stands for, read from that function's
        effects (its body is walked in its own file, once); None when the call runs no such function."""
        callee = calls_elsewhere(self.ctx).get(call)
        if callee is None:
            return None
        return events_at_call(call, callee.node, event_walker(callee.ctx).effects(callee.node))

    def _model_method_modes(self, call: ast.Call) -> list[Event] | None:
        """The mode switches a method of the project's model class makes on the instance it is
        called on (``model.train_custom()`` calling ``self.head.train()``): the model's own method
        sets the mode of what it trains. Only switches: what else a model's method does is the
        model's business."""
        method = model_method(self.ctx, call)
        if method is None:
            return None
        effects = event_walker(method.ctx).effects(method.node)  # type: ignore[arg-type]
        switches = tuple(e for e in effects if e.kind in MODE_KINDS)
        return events_at_call(call, method.node, switches) or None

    @cached_property
    def kinds_elsewhere(self) -> frozenset[EventKind]:
        """The kinds of the effects of the functions of other files this file calls: the cheap
        filters that look for an event's method names in the file's own text must count these."""
        return frozenset(
            e.kind
            for callee in calls_elsewhere(self.ctx).values()
            for e in event_walker(callee.ctx).effects(callee.node)
        )

    def _calls_in(self, node: ast.AST) -> list:
        """The calls of a simple statement, or of one expression hanging off a statement (an
        ``if`` test, a loop header, a ``with`` item), not inside lambdas or nested defs --
        from a per-file index of calls by statement rather than a walk of every expression."""
        parent = self.ctx.parent(node)
        if isinstance(node, ast.stmt):
            return [call for call, _ in self._calls_by_statement.get(node, ())]
        if isinstance(parent, (ast.stmt, ast.withitem)):
            statement = parent if isinstance(parent, ast.stmt) else self.ctx.parent(parent)
            return [call for call, tops in self._calls_by_statement.get(statement, ()) if node in tops]
        return [n for n in walk_no_scopes(node) if isinstance(n, ast.Call)]

    @cached_property
    def _calls_by_statement(self) -> dict:
        """Statement -> [(call, the two nodes just below the statement on the way to the call)]."""
        index: dict = {}
        parents = self.ctx.parents
        for call in self.ctx.calls:
            child, below = call, None
            current = parents.get(call)
            # Exact type checks: this runs for every call of the file.
            while current is not None and type(current) not in _STATEMENT_TYPES:
                if type(current) is ast.Lambda:
                    break
                child, below = current, child
                current = parents.get(current)
            if current is not None and type(current) in _STATEMENT_TYPES:
                index.setdefault(current, []).append((call, (child, below)))
        return index


class _Walk:
    """One walk of one block: the events found so far and the calls it may still follow."""

    def __init__(self, walker: EventWalker):
        self.walker = walker
        self.out: list[Event] = []
        self.budget = MAX_INLINED_CALLS

    def may_inline(self, func, stack) -> bool:
        if func in stack or len(stack) >= MAX_INLINE_DEPTH or self.budget <= 0:
            return False
        self.budget -= 1
        return True

    def block(self, body, guards, loops, via, withs, stack) -> None:
        # Nothing after a return/raise/continue/break, or a call that ends the process, runs.
        for stmt in live_statements(body, self.walker.ctx.process_exits):
            self.statement(stmt, guards, loops, via, withs, stack)

    def statement(self, stmt, guards, loops, via, withs, stack) -> None:
        if type(stmt) is ast.Expr:  # the commonest statement: skip the chain of tests below
            self.expression(stmt, guards, loops, via, withs, stack)
            if stmt in self.walker.ctx.process_exits:
                # The process ends here, also inside a followed call: no later step, no next turn.
                self.out.append(Event(EventKind.PROCESS_EXIT, stmt, guards=guards, loops=loops, via=via, withs=withs))
            return
        place = (guards, loops, via, withs, stack)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return  # definitions run when called
        if isinstance(stmt, ast.If):
            self.expression(stmt.test, *place)
            self.block(stmt.body, guards + ((stmt.test, True),), loops, via, withs, stack)
            self.block(stmt.orelse, guards + ((stmt.test, False),), loops, via, withs, stack)
            return
        if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            header = stmt.iter if isinstance(stmt, (ast.For, ast.AsyncFor)) else stmt.test
            self.expression(header, *place)
            self.block(stmt.body, guards, loops + (stmt,), via, withs, stack)
            self.block(stmt.orelse, *place)
            return
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                self.expression(item.context_expr, *place)
            self.block(stmt.body, guards, loops, via, withs + tuple(stmt.items), stack)
            return
        if isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            self.block(stmt.body, *place)
            for handler in stmt.handlers:
                self.block(handler.body, guards + ((handler, True),), loops, via, withs, stack)
            self.block(stmt.orelse, *place)
            self.block(stmt.finalbody, *place)
            return
        if isinstance(stmt, ast.Match):
            self.expression(stmt.subject, *place)
            for case in stmt.cases:
                self.block(case.body, guards + ((case, True),), loops, via, withs, stack)
            return
        jump = _JUMPS.get(type(stmt))
        if jump is not None:
            self.out.append(Event(jump, stmt, guards=guards, loops=loops, via=via, withs=withs))
            return
        if isinstance(stmt, ast.Return):
            if stmt.value is not None:
                self.expression(stmt.value, *place)
            if not via:  # a return inside a followed call ends that call, not the block
                self.out.append(Event(EventKind.RETURN, stmt, guards=guards, loops=loops, via=via, withs=withs))
            return
        if isinstance(stmt, ast.Assign):
            self.expression(stmt.value, *place)
            for target in stmt.targets:
                if isinstance(target, ast.Attribute) and target.attr == "grad" and replaces_grad(target, stmt.value):
                    self.out.append(Event(EventKind.CLEAR_GRAD, stmt, guards=guards, loops=loops, via=via, withs=withs))
            return
        self.expression(stmt, *place)

    def expression(self, node, guards, loops, via, withs, stack) -> None:
        walker = self.walker
        for call, event, target, opaque, elsewhere in walker.call_plan(node):
            if elsewhere:
                self.out.extend(e.placed(guards, loops, via, withs) for e in elsewhere)
                continue
            if event is not None:
                if event.kind is EventKind.STEP:
                    # `optimizer.step(closure)` (LBFGS; or in an options dict) runs the closure --
                    # its zero_grad and backward -- inside the step, before the update.
                    for closure in walker.calls.step_closures(call):
                        if isinstance(closure, ast.Lambda):
                            self.expression(closure.body, guards, loops, via + (call,), withs, stack)
                        elif self.may_inline(closure, stack):
                            self.block(closure.body, guards, loops, via + (call,), withs, stack + (closure,))
                self.out.append(event.placed(guards, loops, via, withs))
                continue
            if target is not None:
                if self.may_inline(target, stack):
                    self.block(target.body, guards, loops, via + (call,), withs, stack + (target,))
                    continue
                opaque = walker.calls.opaque_step(call)
            if opaque is not None:
                self.out.append(opaque.placed(guards, loops, via, withs))


def event_walker(ctx: FileContext) -> EventWalker:
    return ctx.shared("event-walker", lambda: EventWalker(ctx))
