"""Iterations: the loops that train, and the blocks where each optimizer step is judged.

``iterations(ctx)`` answers:

* ``loop_events[loop]`` / ``iteration_events(loop)``: the events of one iteration of a loop;
* ``training_loops`` (loops whose iteration runs a backward and a step, or an opaque step),
  ``trains_each_iteration(loop)``, ``loop_has_backward(loop)``;
* ``step_units``: ``Unit(owner, events, steps)`` -- a loop body, or a per-iteration function,
  with the indices of the steps it judges. A step belongs to the innermost loop around it
  (through calls) whose iteration runs a backward; loops without a backward in between
  (``for opt in optimizers: opt.step()``) are transparent. Steps no such loop reaches are
  judged by the functions that run both a backward and the step (``train_step(batch)``,
  detectron2's ``run_step``, Lightning's manual ``training_step``), except ``test*``/``_test*``
  functions and utilities fed the caller's loss (timm's ``NativeScaler.__call__(loss, optimizer)``);
* ``function_events_around(unit)``: the events of the function holding a loop unit, outside it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from torchlint.analysis.backedge import leaves_loop_after
from torchlint.analysis.dataflow import Binding, dataflow
from torchlint.analysis.nodes import last_name, walk_no_scopes
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.events import BACKWARD_KINDS, Event, EventKind
from torchlint.torchmodel.walk import event_walker

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext


@dataclass(frozen=True)
class Unit:
    """One training iteration: a loop body or a per-iteration function, its events, and the
    indices (into ``events``) of the optimizer steps this unit judges."""

    owner: ast.AST
    events: tuple
    steps: tuple

    @property
    def is_loop(self) -> bool:
        return isinstance(self.owner, (ast.For, ast.AsyncFor, ast.While))


class Iterations:
    """The training iterations of one file; get the shared instance with ``iterations(ctx)``."""

    def __init__(self, ctx: FileContext):
        self.ctx = ctx
        self.walker = event_walker(ctx)

    # ----- loops --------------------------------------------------------------------------------------
    @cached_property
    def loop_events(self) -> dict[ast.AST, list[Event]]:
        """Events of one iteration of every loop in the file."""
        return {loop: self.iteration_events(loop) for loop in self.ctx.nodes(ast.For, ast.AsyncFor, ast.While)}

    def iteration_events(self, loop: ast.AST) -> list[Event]:
        """The events of one iteration of ``loop`` (rules that look at a few loops need not pay
        for every loop of the file)."""
        return self.ctx.shared(("iteration-events", loop), lambda: self.walker.events(loop.body))

    @cached_property
    def training_loops(self) -> list[ast.AST]:
        """Loops whose iterations (including inner loops and called code) run backward and a step."""
        return [loop for loop in self.loop_events if self.trains_each_iteration(loop)]

    def trains_each_iteration(self, loop: ast.AST) -> bool:
        """Whether one iteration of ``loop`` runs a backward and a step, or an opaque step."""
        kinds = {e.kind for e in self.iteration_events(loop)}
        return EventKind.OPAQUE_STEP in kinds or (EventKind.BACKWARD in kinds and EventKind.STEP in kinds)

    def loop_has_backward(self, loop: ast.AST) -> bool:
        """Whether one iteration of ``loop`` runs a backward pass (directly, in inner loops or in called code)."""
        return any(e.kind in BACKWARD_KINDS for e in self.loop_events.get(loop, ()))

    def repeats_step(self, loop: ast.AST, step: Event) -> bool:
        """Whether one iteration of ``loop`` runs a backward and the next can come back to ``step``:
        a loop that every path leaves right after the step (``while True: ...; opt.step(); break``)
        steps at most once each time it is entered, like straight-line code."""
        return self.loop_has_backward(loop) and not self._leaves_after(loop, step)

    def _leaves_after(self, loop: ast.AST, event: Event) -> bool:
        return any(leaves_loop_after(self.ctx, node, loop) for node in {event.site, event.node})

    # ----- where each optimizer step is judged ------------------------------------------------------
    @cached_property
    def step_units(self) -> list[Unit]:
        """The blocks that stand for one training iteration, each with the optimizer steps it judges.

        A step is judged by the innermost loop around it (through calls into this file's
        functions) whose iteration runs a backward; loops in between that run no backward
        (``for opt in optimizers: opt.step()``) are transparent. A step that no such loop
        reaches is judged by every function whose body runs both a backward and the step:
        such a function (``train_step(batch)``, detectron2's ``run_step``, Lightning's manual
        ``training_step``) is called once per iteration by a caller this file does not show.
        """
        attrs = {c.func.attr for c in self.ctx.calls if isinstance(c.func, ast.Attribute)}
        has_step = bool(attrs & torch_names.STEP_METHODS)
        has_backward = bool(attrs & torch_names.BACKWARD_METHODS) or "loss" in self.ctx.source
        if not (has_step and has_backward):
            if not (has_step or has_backward):
                return []  # a function of another file that runs both is judged in its own file
            # The other may be what a function of another file does (`update(opt)` of utils.py).
            elsewhere = event_walker(self.ctx).kinds_elsewhere
            has_step = has_step or EventKind.STEP in elsewhere
            has_backward = has_backward or bool(elsewhere & BACKWARD_KINDS)
            if not (has_step and has_backward):
                return []
        units: list[Unit] = []
        judged: set[ast.AST] = set()
        for loop, events in self.loop_events.items():
            if not any(e.kind in BACKWARD_KINDS for e in events):
                continue
            steps = tuple(
                i
                for i, e in enumerate(events)
                if e.kind is EventKind.STEP
                and not any(self.repeats_step(inner, e) for inner in e.loops)
                and not self._leaves_after(loop, e)
            )
            if steps:
                units.append(Unit(loop, tuple(events), steps))
                judged.update(events[i].node for i in steps)
        for func in self._functions_reaching_training_calls():
            if _is_test_name(func.name) or _in_test_function(self.ctx, func):
                continue  # a test runs one step to check something; it is not an iteration
            events = self.walker.function_events(func)
            if not any(e.kind in BACKWARD_KINDS and not self._loss_is_parameter(e, func) for e in events):
                continue  # a backward-and-step utility fed the caller's loss (timm's NativeScaler)
            steps = tuple(
                i
                for i, e in enumerate(events)
                if e.kind is EventKind.STEP
                and e.node not in judged
                and not any(self.repeats_step(inner, e) for inner in e.loops)
            )
            if steps:
                units.append(Unit(func, tuple(events), steps))
        return units

    def _functions_reaching_training_calls(self) -> list:
        """Functions that contain a backward or step call, or call (by name, two levels deep) one that does:
        the only ones whose events can hold both. A cheap filter so that not every function is walked."""
        ctx = self.ctx
        marked: set = set()
        for call in ctx.calls:
            func = call.func
            if isinstance(func, ast.Attribute) and (
                func.attr in torch_names.BACKWARD_METHODS or func.attr in torch_names.STEP_METHODS
            ):
                outer = ctx.enclosing_function(call)
                while outer is not None and outer not in marked:
                    marked.add(outer)
                    outer = ctx.enclosing_function(outer)
        for _ in range(2):
            names = {f.name for f in marked}
            for call in ctx.calls:
                if last_name(call.func) in names:
                    outer = ctx.enclosing_function(call)
                    if outer is not None:
                        marked.add(outer)
        return [f for f in ctx.nodes(ast.FunctionDef, ast.AsyncFunctionDef) if f in marked]

    def _loss_is_parameter(self, event: Event, func: ast.AST) -> bool:
        """Whether a backward's loss is a parameter of ``func`` (its caller computed it)."""
        if event.via or event.arg is None:
            return False
        root = event.arg
        while isinstance(root, (ast.Attribute, ast.Subscript)):
            root = root.value
        if isinstance(root, ast.Call) and isinstance(root.func, ast.Attribute):
            # `loss.mean()` is still the parameter; `self.loss(out)` is computed here.
            return self._loss_is_parameter(Event(event.kind, event.node, arg=root.func.value), func)
        if (
            not isinstance(root, ast.Name)
            or root.id in ("self", "cls")
            or self.ctx.enclosing_function(event.node) is not func
        ):
            return False
        params = func.args
        names = {a.arg for a in params.posonlyargs + params.args + params.kwonlyargs}
        bindings = dataflow(self.ctx).reaching(root)
        # The parameter itself, or a value made from a loss parameter
        # (`with amp.scale_loss(loss, optimizer) as scaled_loss:` -- still the caller's loss).
        return bool(bindings) and all(_from_loss_parameter(binding, names) for binding in bindings)

    def function_events_around(self, unit: Unit) -> list[Event]:
        """Events of the function (or module) that holds a loop unit, outside the loop itself."""
        scope = self.ctx.enclosing_scope(unit.owner)
        body = scope.body if hasattr(scope, "body") and isinstance(scope.body, list) else []
        return [e for e in self.walker.events(body) if unit.owner not in e.loops]


def _is_test_name(name: str) -> bool:
    """``test_x`` and the test helpers ``_test_x`` run one step to check something."""
    return name.lstrip("_").startswith("test")


def _in_test_function(ctx, func: ast.AST) -> bool:
    outer = ctx.enclosing_function(func)
    while outer is not None:
        if _is_test_name(outer.name):
            return True
        outer = ctx.enclosing_function(outer)
    return False


def _from_loss_parameter(binding: Binding, names: set[str]) -> bool:
    """A parameter, or a value computed from a parameter named for a loss."""
    if binding.kind == "param":
        return binding.name in names
    value = binding.source if binding.kind in ("augassign", "unpack") else binding.value
    return value is not None and any(
        isinstance(n, ast.Name) and n.id in names and "loss" in n.id for n in walk_no_scopes(value)
    )


def iterations(ctx: FileContext) -> Iterations:
    return ctx.shared("iterations", lambda: Iterations(ctx))
