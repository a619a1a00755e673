"""TL015 scheduler-before-optimizer."""

from __future__ import annotations

import ast

from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.first_iteration import first_pass_truth
from torchlint.analysis.imports import symbol
from torchlint.analysis.nodes import argument
from torchlint.engine.rule import Message, Rule, register
from torchlint.torchmodel.calls import call_events
from torchlint.torchmodel.constructors import constructor_role
from torchlint.torchmodel.events import STEP_KINDS, EventKind, exclusive
from torchlint.torchmodel.iterations import iterations
from torchlint.torchmodel.optimizer_state import loaded_beside, state_loaded_before
from torchlint.torchmodel.roles import Role, shown_torch_scheduler
from torchlint.torchmodel.scripts import least_count
from torchlint.torchmodel.walk import event_walker


@register
class SchedulerBeforeOptimizer(Rule):
    code = "TL015"
    name = "scheduler-before-optimizer"
    severity = "warning"
    summary = "`scheduler.step()` runs before `optimizer.step()` in the same iteration."
    what = """
        Reports a learning-rate scheduler's `step()` (no arguments) that runs, within one
        iteration of a training loop (a loop that runs a backward pass and an optimizer
        step, possibly in inner loops or helper functions of the same file), before the
        optimizer's first `step()` of that iteration (the optimizer the scheduler was built
        on, when the file shows it: `StepLR(optG, ...)` pairs with `optG.step()`). `scheduler.step(metric)` calls
        (`ReduceLROnPlateau`, timm's `step(epoch)`) are not reported. Only a scheduler the code
        shows to be torch's is reported: data flow (assignments, returns, the arguments every
        call site passes, also from callers in the project's other files when the file never
        calls the function itself: `train_iteration(model, optimizer, loader, scheduler)`
        called by the main script) reaches `torch.optim.lr_scheduler`, a `transformers`/`diffusers`
        `get_*` schedule or a class whose bases are torch's (a helper that returns one, or
        `None` when no schedule is asked for, returns a scheduler). A project's own schedule class
        (jepa's `WarmupCosineSchedule` writes the coming step's rate into the param groups and
        is meant to step first), a subclass of torch's that replaces `step()` with its own
        (a warm-up scheduler stepped at the start of each epoch: its contract is the
        project's) and an object known only by its name are left alone; a subclass that
        only rewrites `get_lr()` keeps torch's `step()` and is reported. A step under a guard
        shown false on the first iteration (`if epoch > 0:`, the `else` of `if epoch == 0:` in
        `for epoch in range(n)`, `epoch != start` in `range(start, n)`, or a step function's
        counter parameter compared with an integer, taken to start at 0, or `epoch > k` with the
        count starting at 0 and k an integer literal or an integer command-line option with a
        non-negative default) is not reported: the
        optimizer already stepped in the iterations before, so stepping at the top of
        iteration k is stepping at the end of k-1. A start bound on a resume path that loads
        the optimizer's state (`start_epoch = ckpt["epoch"]` beside
        `optimizer.load_state_dict(...)`) leaves the decision to the start's other bindings,
        and a guarded step before the training loop, run after the optimizer's state was loaded
        (earlier in the function, or by the object's `__init__`), is not reported either: that
        optimizer stepped in the run that saved it, and the step resynchronises the schedule.
    """
    why = """
        Since PyTorch 1.1 the scheduler must step *after* the optimizer. Stepping it
        first moves the schedule one position ahead before any update was made: the
        first learning rate (often the warm-up's smallest one) is never used, and an
        epoch-level `StepLR` decays one epoch early. PyTorch only prints a warning
        ("Detected call of `lr_scheduler.step()` before `optimizer.step()`") that is easy
        to miss in a long log.
    """
    example = """
        import torch

        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=30)
        for epoch in range(epochs):
            scheduler.step()
            for x, y in loader:
                loss = criterion(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    """
    instead = """
        import torch

        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=30)
        for epoch in range(epochs):
            for x, y in loader:
                loss = criterion(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            scheduler.step()  # after the epoch's optimizer steps
    """
    VALID = [
        """
import torch
def train(model, loader, epochs):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, 30)
    for epoch in range(epochs):
        for x, y in loader:
            opt.zero_grad()
            model(x).sub(y).pow(2).mean().backward()
            opt.step()
        sched.step()
""",
        """
import torch
def train(model, opt, loader, val_loss):
    plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)
    for epoch in range(10):
        plateau.step(val_loss())
        for x in loader:
            model(x).mean().backward()
            opt.step()
            opt.zero_grad()
""",
    ]
    INVALID = [
        """
import torch
def train(model, loader, epochs):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, 30)
    for epoch in range(epochs):
        sched.step()  # expect: TL015
        for x, y in loader:
            opt.zero_grad()
            model(x).sub(y).pow(2).mean().backward()
            opt.step()
""",
        """
from transformers import get_linear_schedule_with_warmup
def train(model, optimizer, lr_scheduler, loader):
    for batch in loader:
        loss = model(**batch).loss
        loss.backward()
        lr_scheduler.step()  # expect: TL015
        optimizer.step()
        optimizer.zero_grad()
def main(model, optimizer, loader):
    train(model, optimizer, get_linear_schedule_with_warmup(optimizer, 100, 1000), loader)
""",
    ]

    def check(self, ctx):
        if not any(_is_plain_sched_step(ctx, c) for c in ctx.calls):
            return  # the (costlier) loop events are only needed when a scheduler steps
        reported: set[ast.AST] = set()
        loops = iterations(ctx)
        for loop in loops.training_loops:
            yield from self._check_events(ctx, loops.loop_events[loop], reported, (loop,))
        for func in _functions_with_both(ctx):
            yield from self._check_events(ctx, event_walker(ctx).events(func.body), reported, ())

    def _check_events(self, ctx, events, reported, outer: tuple):
        for index, event in enumerate(events):
            if (
                event.kind is not EventKind.SCHED_STEP
                or event.node in reported
                or not _is_plain_sched_step(ctx, event.node)
            ):
                continue
            steps = _steps_of_scheduled_optimizer(ctx, event, events)
            optimizers = {e.target for e in steps if e.target is not None}
            # The optimizer the scheduler was built on, by its name here: a step inlined from a
            # helper names it by the helper's parameter (``optimizer``), a load by the caller's.
            optimizers |= {_scheduled_optimizer(ctx, event.target)} - {None}
            if _skips_first_pass(ctx, event, outer + event.loops, optimizers):
                continue  # optimizer steps ran in the iterations before: an end-of-iteration step, moved
            if _resumes_loaded_run(ctx, event, outer, optimizers):
                continue  # the optimizer stepped in the run its state was saved from
            if any(e in steps and not exclusive(e, event) for e in events[:index]):
                continue  # the optimizer step already ran in this iteration
            later = next((e for e in events[index + 1 :] if e in steps and _same_iteration_step(e, event)), None)
            if later is None:
                continue
            reported.add(event.node)
            yield self.report(event.node, self._message(ctx, event, later), evidence=(event, later))

    @staticmethod
    def _message(ctx, sched, step) -> Message:
        step_call = ctx.quote(step.node) or "optimizer.step()"
        return Message(
            f"`{ctx.quote(sched.node)}` runs before `{step_call}` (line {step.node.lineno}) in the same iteration",
            why="the schedule advances before the update it should govern and its first learning rate is skipped",
            help="call it after the optimizer step",
        )


def _steps_of_scheduled_optimizer(ctx, sched, events) -> set:
    """The optimizer steps that matter for this scheduler: those of the optimizer it was
    built on (``StepLR(optG, ...)`` -> ``optG.step()``) when the file says so and such steps
    are present; otherwise every optimizer step."""
    steps = [e for e in events if e.kind in STEP_KINDS]
    optimizer = _scheduled_optimizer(ctx, sched.target)
    matching = [e for e in steps if optimizer is not None and e.target == optimizer]
    return set(matching or steps)


def _scheduled_optimizer(ctx, scheduler: str | None) -> str | None:
    """The optimizer symbol a scheduler symbol was constructed from, when all its
    constructions agree."""
    if scheduler is None:
        return None
    found = set()
    for binding in dataflow(ctx).bindings_anywhere(scheduler):
        value = binding.value
        if binding.kind != "assign" or not isinstance(value, ast.Call):
            continue
        if constructor_role(ctx, value) != Role.SCHEDULER:
            continue
        arg = argument(value, 0, "optimizer")
        found.add(symbol(arg) if arg is not None else None)
    return found.pop() if len(found) == 1 else None


def _is_plain_sched_step(ctx, call: ast.Call) -> bool:
    """``scheduler.step()`` with no arguments (``step(metric)``/``step(epoch)`` set their own position)."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr == "step") or call.args or call.keywords:
        return False
    event = call_events(ctx).classify(call)
    return event is not None and event.kind is EventKind.SCHED_STEP and shown_torch_scheduler(ctx, call.func.value)


def _same_iteration_step(event, sched) -> bool:
    """An optimizer step that runs after ``sched`` in the same iteration of every loop around
    ``sched``: it sits in those same loops (or deeper), not in a sibling loop or branch."""
    if event.kind not in STEP_KINDS or exclusive(event, sched):
        return False
    depth = len(sched.loops)
    return event.loops[:depth] == sched.loops


def _resumes_loaded_run(ctx, sched, outer: tuple, optimizers: set[str]) -> bool:
    """A one-shot scheduler step (in no loop), run only under a guard, after the optimizer's
    state was loaded from a checkpoint (earlier in the function, or by the object's
    ``__init__``): the optimizer already stepped in the run that saved it, so this step
    resynchronises a resumed schedule and skips no learning rate of this run."""
    return not outer and not sched.loops and bool(sched.guards) and state_loaded_before(ctx, sched.node, optimizers)


def _skips_first_pass(ctx, sched, loops: tuple, optimizers: set[str]) -> bool:
    """Whether a guard around the scheduler step is false on the first iteration of a loop around
    it (the ``else`` of ``if epoch == 0:``, ``if epoch > 0:`` in ``for epoch in range(n)``), or
    on a call whose epoch/step counter holds its start, 0 (``def train_step(batch, epoch):``).
    Then it first runs after the optimizer stepped in an earlier iteration, and stepping at the
    top of iteration k is stepping at the end of k-1: no learning rate is skipped. ``epoch > k``
    counts with k a literal or a non-negative integer command-line option; a start bound on a
    resume path that loads the optimizer's state (``start = ckpt["epoch"]`` beside
    ``optimizer.load_state_dict(...)``) leaves the decision to the start's other bindings."""
    bound = lambda expr: least_count(ctx, expr)  # noqa: E731
    resumed = lambda binding: loaded_beside(ctx, binding.stmt, optimizers)  # noqa: E731
    return any(
        first_pass_truth(ctx, test, loops, counters=True, lower_bound=bound, settled=resumed) is (not branch)
        for test, branch in sched.guards
    )


def _functions_with_both(ctx):
    """Step functions outside any loop (``def train_step(...)``) that step a scheduler and an
    optimizer directly; loops are already covered by the training loops."""
    sched_funcs = set()
    for call in ctx.calls:
        if _is_plain_sched_step(ctx, call) and not ctx.enclosing_loops(call):
            sched_funcs.add(ctx.enclosing_function(call))
    sched_funcs.discard(None)
    return sorted(sched_funcs, key=lambda f: f.lineno)
