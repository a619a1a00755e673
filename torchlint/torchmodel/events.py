"""Events: the training-relevant actions one execution of a block of code performs, in order.

An ``Event`` is one action (``EventKind``): a backward pass, an optimizer step, a gradient clear,
a mode switch... where it is written, what it applies to, and where it sits in the block that
was walked (the ``if`` branches, loops, followed call sites and ``with`` items around it).
``walk.event_walker(ctx)`` produces them; ``calls.call_events(ctx)`` says what one call means.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from torchlint.analysis.conditions import consequences
from torchlint.analysis.nodes import source_text

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext


class EventKind(Enum):
    BACKWARD = "backward"  # loss.backward(), scaler.scale(loss).backward(), accelerator.backward(loss)...
    STEP = "step"  # optimizer.step(), scaler.step(optimizer), xm.optimizer_step(optimizer)
    ZERO_GRAD = "zero_grad"  # optimizer.zero_grad(), model.zero_grad()
    CLEAR_GRAD = "clear_grad"  # p.grad = None, p.grad.zero_() (applies to whatever p ranges over)
    SCALER_UPDATE = "scaler_update"  # scaler.update()
    UNSCALE = "unscale"  # scaler.unscale_(optimizer)
    CLIP = "clip"  # clip_grad_norm_(...), accelerator.clip_grad_norm_(...)
    SCHED_STEP = "sched_step"  # scheduler.step()
    TRAIN = "train"  # model.train() / model.train(True)
    EVAL = "eval"  # model.eval() / model.train(False)
    SET_MODE = "set_mode"  # model.train(is_train): the mode a value says (``arg``), either one
    OPAQUE_STEP = "opaque_step"  # a callable given a loss and an optimizer (timm/MAE's loss_scaler): backward and step
    CONTINUE = "continue"
    BREAK = "break"
    RETURN = "return"
    PROCESS_EXIT = (
        "process_exit"  # exit(), sys.exit(...), os._exit(...): the process ends (analysis.reachability.process_exits)
    )


BACKWARD_KINDS = frozenset({EventKind.BACKWARD, EventKind.OPAQUE_STEP})
CLEAR_KINDS = frozenset({EventKind.ZERO_GRAD, EventKind.CLEAR_GRAD})
STEP_KINDS = frozenset({EventKind.STEP, EventKind.OPAQUE_STEP})
MODE_KINDS = frozenset({EventKind.TRAIN, EventKind.EVAL})
EXIT_KINDS = frozenset({EventKind.CONTINUE, EventKind.RETURN})


@dataclass(frozen=True)
class Event:
    """One training-relevant action in one execution of a block of code."""

    kind: EventKind
    node: ast.AST  # the call or statement, where it is written (possibly inside a called function)
    target: str | None = None  # optimizer/model symbol the action applies to, when known
    arg: ast.AST | None = None  # for backward: the loss expression (unwrapped from scaler.scale)
    guards: tuple = ()  # ((test node, branch taken), ...) inside the block
    loops: tuple = ()  # loops inside the block that enclose the event (outermost first)
    via: tuple = ()  # call sites followed to reach the event (outermost first)
    withs: tuple = ()  # with-statement items around the event, inside the block

    @property
    def site(self) -> ast.AST:
        """Where to report: the outermost call site in the block, or the event itself."""
        return self.via[0] if self.via else self.node

    def placed(self, guards: tuple, loops: tuple, via: tuple, withs: tuple) -> Event:
        """The same action, at a place in a walked block."""
        return Event(self.kind, self.node, self.target, self.arg, guards, loops, via, withs)


def exclusive(a: Event, b: Event) -> bool:
    """Whether two events sit in different branches of the same ``if`` (or handlers/cases),
    so that one execution of the block cannot run both."""
    taken = {id(test): branch for test, branch in a.guards}
    return any(taken.get(id(test), branch) != branch for test, branch in b.guards)


# ----- branch conditions ------------------------------------------------------------------------------
def guard_key(ctx: FileContext, guard: tuple) -> tuple:
    """A key that makes two ``if`` tests with the same text (``if use_amp:`` twice) the same
    condition, with negations folded into the branch: ``if f:`` and ``if not f:`` line up, and so
    do ``x is None`` / ``x is not None``, ``a == b`` / ``a != b``, ``k in d`` / ``k not in d``."""
    test, branch = guard
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, branch = test.operand, not branch  # `if not flag:` is the other branch of `if flag:`
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _NEGATED_COMPARISONS:
        return (ctx.shared(("positive-test", test), lambda: _positive_text(test)), not branch)
    if isinstance(test, ast.expr):
        return (source_text(ctx, test), branch)
    return (id(test), branch)


_NEGATED_COMPARISONS = {ast.IsNot: ast.Is, ast.NotEq: ast.Eq, ast.NotIn: ast.In}


def _positive_text(test: ast.Compare) -> str:
    """``x is not None`` written as ``x is None`` (the key of its other branch)."""
    positive = _NEGATED_COMPARISONS[type(test.ops[0])]()
    return ast.unparse(ast.Compare(left=test.left, ops=[positive], comparators=test.comparators))


def guard_keys(ctx: FileContext, event: Event) -> frozenset:
    return frozenset(guard_key(ctx, g) for g in event.guards)


def forced_keys(ctx: FileContext, event: Event) -> frozenset:
    """The keys of every condition the event's guards force: each guard and, through ``and``
    and ``not``, its parts (under ``if a and not b:``, ``a`` is true and ``b`` false)."""
    return frozenset(guard_key(ctx, forced) for guard in event.guards for forced in consequences(*guard))


def guard_implied(ctx: FileContext, guard: tuple, forced: frozenset) -> bool:
    """Whether the conditions ``forced`` (``forced_keys``) imply ``guard``: it is one of them, or
    each of its conjuncts is (``if flag and i % n == 0:`` implies ``if i % n == 0 and flag:``)."""
    if guard_key(ctx, guard) in forced:
        return True
    parts = [part for part in consequences(*guard) if not _splits(part)]
    return bool(parts) and all(guard_key(ctx, part) in forced for part in parts)


def _splits(condition: tuple) -> bool:
    """A condition ``consequences`` breaks into parts (``not x``; ``a and b`` true; ``a or b`` false)."""
    test, value = condition
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return True
    return isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) == value
