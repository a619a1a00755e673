"""Gradient accumulation: backward passes whose gradients pile up over several iterations
before one optimizer step applies them. What TL009 (and TL001's accumulation windows) stand on.

``gradient_accumulation(ctx)`` answers:

* ``is_accumulation_test(test)``: does an ``if`` test pick the optimizer-update iterations
  (``(i + 1) % accum == 0``, ``accum_count >= accum_steps``, a flag assigned from one)?
* ``rearmed_by_step(guard, step)``: is a clear's condition (``if window_idx == 0:``) shown to
  hold again the first time it is tested after the step, through a counter or flag the step's
  branch resets (the clear at the start of each accumulation window, whatever the names)?
* ``accumulated_backwards(unit, i)``: backward passes whose gradients pile up over several
  iterations before the step ``unit.events[i]``, each with its ``Accumulation`` evidence;
  ``accumulation_gate(events, i)``: the test that decides whether ``events[i]`` runs;
  ``accumulating_opaque_steps()`` for ``loss_scaler(loss, opt, update_grad=...)``;
  ``is_micro_step_loop(loop)``: a loop over the micro-batches of one update;
* ``update_test_values(loop)``: what the ``if`` tests of a loop's body are on every iteration that
  updates the weights (the step's own conditions, Accelerate's ``sync_gradients``).

``accelerate_window(item)``: the accelerator of a ``with accelerator.accumulate(model):`` item.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from torchlint.analysis.backedge import reset_before_next
from torchlint.analysis.conditions import consequences, truth_under
from torchlint.analysis.constants import UNKNOWN, constant_value
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.nodes import source_text, walk_no_scopes
from torchlint.torchmodel.clearing import clearing
from torchlint.torchmodel.events import (
    CLEAR_KINDS,
    EXIT_KINDS,
    STEP_KINDS,
    Event,
    EventKind,
    exclusive,
    forced_keys,
    guard_implied,
    guard_key,
)
from torchlint.torchmodel.iterations import iterations
from torchlint.torchmodel.micro_batches import same_data_each_pass

if TYPE_CHECKING:
    from collections.abc import Callable

    from torchlint.analysis.context import FileContext
    from torchlint.torchmodel.iterations import Unit


@dataclass(frozen=True)
class Accumulation:
    """Why a backward is taken to be accumulated over several iterations.

    ``kind``: "guard" (the step sits under ``test``), "exit" (``node``, a ``continue`` or
    ``return`` under ``test``, skips the step on non-update iterations), "micro_loop"
    (``node`` is the inner loop the backward runs in; ``test`` is None) or "argument"
    (an opaque step's ``update_grad=test`` keyword)."""

    kind: str
    node: ast.AST
    test: ast.AST | None

    def count(self) -> str | None:
        """The accumulation count as written, when it shows: the modulo's divisor, the micro-step
        loop's ``range(...)`` bound, or the other side of a counter comparison."""
        if self.kind == "micro_loop":
            it = self.node.iter
            if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range" and it.args:
                return ast.unparse(it.args[0] if len(it.args) == 1 else it.args[1])
            return None
        for node in ast.walk(self.test):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
                return ast.unparse(node.right)
        for node in ast.walk(self.test):
            if isinstance(node, ast.Compare) and node.comparators:
                return ast.unparse(node.comparators[-1])
        return None


# `accelerator.sync_gradients` is accelerate's "this micro-step ends an accumulation window".
ACCUMULATION_NAME = re.compile(r"accum|accumulat|grad_acc|sync_gradients", re.I)
MICRO_STEP_NAME = re.compile(r"accum|micro|chunk", re.I)


class GradientAccumulation:
    """Gradient accumulation in one file; get the shared instance with ``gradient_accumulation(ctx)``."""

    def __init__(self, ctx: FileContext):
        self.ctx = ctx
        self.clearing = clearing(ctx)

    def is_accumulation_test(self, test: ast.AST, depth: int = 0) -> bool:
        """Whether an ``if`` test decides if this is an optimizer-update iteration of gradient
        accumulation: a modulo (``(i + 1) % accum == 0``), a counter or flag named for
        accumulation (``accum_count >= accum_steps``), or a name assigned from one of those
        (timm's ``need_update = last_batch or (batch_idx + 1) % accum_steps == 0``)."""
        if not isinstance(test, ast.expr):
            return False
        for node in walk_no_scopes(test):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
                if not (
                    isinstance(node.left, (ast.Constant, ast.JoinedStr))
                    and not isinstance(getattr(node.left, "value", 0), (int, float))
                ):
                    return True
            elif isinstance(node, ast.Attribute) and ACCUMULATION_NAME.search(node.attr):
                return True
            elif isinstance(node, ast.Name):
                if ACCUMULATION_NAME.search(node.id):
                    return True
                if depth < 2:
                    # Every assignment of the flag in its scope: it may be set at the end of the
                    # previous iteration.
                    for binding in dataflow(self.ctx).visible_bindings(node.id, test):
                        value = binding.value if binding.value is not None else binding.source
                        if (
                            isinstance(binding.stmt, ast.Assign)
                            and value is not None
                            and self.is_accumulation_test(value, depth + 1)
                        ):
                            return True
        return False

    def rearmed_by_step(self, guard: tuple, step: Event) -> bool:
        """Whether the clear's ``guard`` (``(test, branch)``) takes that branch the first time it is
        tested after ``step``: the test reads one variable (beside constants), and every path from
        the step round to the test leaves it a value deciding the test so (``if idx == 0:
        opt.zero_grad()`` ... ``if idx == n: opt.step(); idx = 0``, with ``idx = 0`` too where the
        loop starts). Each step's window then opens with a clear."""
        test, holds = guard
        if not isinstance(test, ast.expr):
            return False
        equated = _equated(test, holds)
        if equated is not None:
            # ``if left == self.window: opt.zero_grad()`` ... ``if not left: opt.step(); left =
            # self.window``: the counter is reset to the very expression the test compares it with.
            name, other = equated
            flow = dataflow(self.ctx)
            text = ast.dump(other)

            def restores(value: ast.AST) -> bool:
                return ast.dump(value) == text and flow.same_values(other, value) is True

            if reset_before_next(self.ctx, step.site, test, name, restores):
                return True
        constant = lambda e: constant_value(self.ctx, e)  # noqa: E731
        variables = {n.id for n in walk_no_scopes(test) if isinstance(n, ast.Name) and constant(n) is UNKNOWN}
        if len(variables) != 1:
            return False
        (name,) = variables

        def accepts(value: ast.AST) -> bool:
            return truth_under(test, {name: constant(value)}, constant) is holds

        return reset_before_next(self.ctx, step.site, test, name, accepts)

    def accumulated_backwards(self, unit: Unit, index: int) -> list[tuple[Event, Accumulation]]:
        """Backward passes whose gradients pile up over several iterations before the step
        ``unit.events[index]`` applies them (gradient accumulation), each with its evidence
        (an ``Accumulation``):

        * the step runs under an accumulation test (``if (i + 1) % accum == 0:``), or after an
          exit taken on non-update iterations (``if not need_update: continue``), while the
          backward runs on every iteration and nothing clears the optimizer on every iteration;
        * or the backward runs in an inner micro-step loop (``for micro_step in
          range(gradient_accumulation_steps):``) that the step follows and that clears nothing,
          and whose passes are not shown to compute the loss from one unchanged batch.
        """
        events = unit.events
        step = events[index]
        # The step's own accumulation conditions, and an exit taken on non-update iterations:
        # events after it run only on update iterations (timm has both: `if need_update:
        # optimizer.step()` in a closure, then `if not need_update: continue` before the clear).
        step_gates = {guard_key(self.ctx, g): g for g in step.guards if self.is_accumulation_test(g[0])}
        exit_test, exit_index = self._accumulation_exit(events, index, anywhere=True)
        if exit_index is not None and exit_index > index:
            exit_test = None  # an exit after the step gates what follows, not the step itself
        stepped = self.clearing.stepped_optimizers(unit)
        low = 0
        if len(stepped) > 1:  # several optimizers: only the backwards since the previous step feed this one
            for j in range(index - 1, -1, -1):
                if events[j].kind is EventKind.STEP and not exclusive(events[j], step):
                    low = j + 1
                    break

        def gated(event, position):
            """Runs only on update iterations: under all of the step's gates, or after the exit."""
            if exit_index is not None and position > exit_index and event.loops == step.loops:
                return True
            # A backward whose own guards imply the step's gates runs once per update, not per micro-batch.
            forced = forced_keys(self.ctx, event)
            return bool(step_gates) and all(guard_implied(self.ctx, g, forced) for g in step_gates.values())

        if step_gates or exit_test is not None:
            for j, clear in enumerate(events):
                if (
                    clear.kind in CLEAR_KINDS
                    and clear.loops == step.loops
                    and not exclusive(clear, step)
                    and not gated(clear, j)
                    and not any(self.is_accumulation_test(t) for t, _ in clear.guards)
                    and self.clearing.clears(clear, step, stepped)
                ):
                    return []  # cleared on every iteration: steps are skipped, nothing accumulates
        found = []
        for j, event in enumerate(events):
            if (
                event.kind is not EventKind.BACKWARD
                or exclusive(event, step)
                or (len(stepped) > 1 and not low <= j < index)
            ):
                continue
            if step_gates or exit_test is not None:
                if gated(event, j):
                    continue
                forced = forced_keys(self.ctx, event)
                missing = [g[0] for g in step_gates.values() if not guard_implied(self.ctx, g, forced)]
                if missing:
                    found.append((event, Accumulation("guard", missing[0], missing[0])))
                elif exit_test is not None:
                    found.append((event, Accumulation("exit", events[exit_index].node, exit_test)))
                continue
            micro = next((lp for lp in event.loops if lp not in step.loops and self.is_micro_step_loop(lp)), None)
            if (
                micro is not None
                and not any(
                    c.kind in CLEAR_KINDS and micro in c.loops and self.clearing.clears(c, step, stepped)
                    for c in events
                )
                # Passes over one unchanged batch sum the terms of one objective, not micro-batches.
                and (event.via or not same_data_each_pass(self.ctx, micro, event.arg))
            ):
                found.append((event, Accumulation("micro_loop", micro, None)))
        return found

    def accumulation_gate(self, events, index: int) -> tuple:
        """``(test, exit index)``: the accumulation test that decides whether ``events[index]`` runs,
        as a condition around it (exit index None) or on an earlier ``continue``/``return`` at its level."""
        step = events[index]
        for test, _ in step.guards:
            if self.is_accumulation_test(test):
                return test, None
        return self._accumulation_exit(events, index)

    def _accumulation_exit(self, events, index: int, anywhere: bool = False) -> tuple:
        """The first ``continue``/``return`` under an accumulation test before ``events[index]``
        (anywhere in the iteration, with ``anywhere``) at its level."""
        step = events[index]
        for j in range(len(events) if anywhere else index):
            event = events[j]
            if event.kind in EXIT_KINDS and event.loops == step.loops and not exclusive(event, step):
                for test, _ in event.guards:
                    if self.is_accumulation_test(test):
                        return test, j
        return None, None

    def is_micro_step_loop(self, loop: ast.AST) -> bool:
        """A loop over the micro-batches of one update, told by its names (``micro_step``,
        ``range(gradient_accumulation_steps)``, ``batch.chunk(n)``)."""
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            return False
        return bool(MICRO_STEP_NAME.search(source_text(self.ctx, loop.target) + " " + source_text(self.ctx, loop.iter)))

    def update_test_values(self, loop: ast.AST) -> Callable[[ast.AST], bool | None]:
        """What an ``if`` test in ``loop``'s body is (True, False, or None: not known) on every
        iteration of ``loop`` in which its optimizer steps update the weights: a condition every
        step of the iteration runs under (``if (i + 1) % accum == 0: optimizer.step()``, and its
        parts through ``and``/``not``), and ``accelerator.sync_gradients`` for a step inside
        ``with accelerator.accumulate(model):`` (Accelerate's prepared optimizer skips the step
        on the other micro-steps). No test is known when the iteration has no step, or has one in a
        loop nested in ``loop`` (several steps per iteration), or behind a call whose conditions
        are another function's."""
        ctx = self.ctx
        keys: frozenset | None = None
        for event in iterations(ctx).iteration_events(loop):
            if event.kind not in STEP_KINDS:
                continue
            found = set()
            if not event.loops:
                for guard in event.guards:
                    if ctx.is_inside(guard[0], loop):
                        found.update(guard_key(ctx, part) for part in consequences(*guard))
                for item in event.withs:
                    accelerator = accelerate_window(item)
                    if accelerator is not None and ctx.is_inside(item.context_expr, loop):
                        found.add((f"{source_text(ctx, accelerator)}.sync_gradients", True))
            keys = frozenset(found) if keys is None else keys & found
        if not keys:
            return lambda _test: None

        def value(test: ast.AST) -> bool | None:
            if not ctx.is_inside(test, loop):
                return None
            if guard_key(ctx, (test, True)) in keys:
                return True
            if guard_key(ctx, (test, False)) in keys:
                return False
            return None

        return value

    def accumulating_opaque_steps(self) -> list[tuple[Event, Accumulation]]:
        """Opaque steps told to update only on some calls (MAE/DeiT's
        ``loss_scaler(loss, optimizer, update_grad=(i + 1) % accum_iter == 0)``), with that test."""
        found = []
        seen = set()
        if not any(kw.arg and "update" in kw.arg for call in self.ctx.calls for kw in call.keywords):
            return found
        for events in iterations(self.ctx).loop_events.values():
            for event in events:
                if event.kind is not EventKind.OPAQUE_STEP or event.node in seen:
                    continue
                seen.add(event.node)
                for kw in event.node.keywords:
                    if kw.arg and "update" in kw.arg and self.is_accumulation_test(kw.value):
                        found.append((event, Accumulation("argument", kw.value, kw.value)))
                        break
        return found


def accelerate_window(item: ast.withitem) -> ast.AST | None:
    """The accelerator of ``with accelerator.accumulate(model):``: inside it Accelerate counts the
    micro-steps, sets ``accelerator.sync_gradients`` on the last of each window, divides the loss
    in ``accelerator.backward`` and makes the prepared optimizer's ``step()`` skip the others."""
    call = item.context_expr
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "accumulate":
        return call.func.value
    return None


def gradient_accumulation(ctx: FileContext) -> GradientAccumulation:
    return ctx.shared("gradient-accumulation", lambda: GradientAccumulation(ctx))


def _equated(test: ast.expr, holds: bool) -> tuple[str, ast.expr] | None:
    """``(name, other)`` when the branch ``holds`` of ``test`` is taken exactly when the local
    ``name`` equals ``other``, an expression that reads neither ``name`` nor calls anything
    (``left == self.args.update_epochs`` true, ``left != n`` false)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    op = test.ops[0]
    if not ((isinstance(op, ast.Eq) and holds) or (isinstance(op, ast.NotEq) and not holds)):
        return None
    for name, other in ((test.left, test.comparators[0]), (test.comparators[0], test.left)):
        if not isinstance(name, ast.Name):
            continue
        reads = list(ast.walk(other))
        if any(isinstance(n, ast.Call) for n in reads) or any(
            isinstance(n, ast.Name) and n.id == name.id for n in reads
        ):
            continue
        return name.id, other
    return None
