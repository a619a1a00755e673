"""TL002 zero-grad-after-backward."""

from __future__ import annotations

import ast

from torchlint.analysis.reachability import exit_after, jump_skips
from torchlint.engine.rule import Message, Rule, register
from torchlint.torchmodel.clearing import clearing
from torchlint.torchmodel.events import BACKWARD_KINDS, CLEAR_KINDS, EventKind, exclusive, guard_keys
from torchlint.torchmodel.iterations import iterations


@register
class ZeroGradAfterBackward(Rule):
    code = "TL002"
    name = "zero-grad-after-backward"
    severity = "error"
    summary = "Gradients are cleared between the backward pass and the optimizer step, so the step applies zeros."
    what = """
        Reports a clearing call (`optimizer.zero_grad()`, `model.zero_grad()` on the model
        the optimizer updates) that runs after the last backward pass and before the
        optimizer step of the same iteration, on every path that reaches the step --
        including inside a helper called in between (a trainer's own `self.zero_grad()`
        wrapper), or inside a micro-step loop after its backward. A clear reached through
        a call is reported at that call, in the function that runs the backward. A clear before a later backward, a clear on a branch that skips the step
        (`if not torch.isfinite(loss): optimizer.zero_grad(); continue`), a skipped update
        (a branch that clears, steps and leaves the iteration at once, passing over the
        normal step of the same optimizer after it: `if norm > limit: optimizer.zero_grad();
        scaler.step(optimizer); scaler.update(); continue`, where the step only keeps the
        scaler's bookkeeping) and a clear of a different optimizer (a GAN's generator while
        the discriminator steps) are fine.
    """
    why = """
        `zero_grad()` throws away the gradients `backward()` just computed, so the step
        that follows sees zeros (or `None`): plain SGD does nothing, momentum and Adam keep
        moving on stale state, and weight decay alone shrinks the weights. The loss curve
        stays flat and nothing raises.
    """
    example = """
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.zero_grad()
            optimizer.step()
    """
    instead = """
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
    """
    VALID = [
        """
import torch
def train(model, loader, optimizer, scaler):
    for x, y in loader:
        with torch.autocast("cuda"):
            loss = model(x, y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
""",
        """
class SimpleTrainer:
    def run_step(self):
        loss_dict = self.model(next(self._data_loader_iter))
        losses = sum(loss_dict.values())
        self.optimizer.zero_grad()
        losses.backward()
        self.optimizer.step()
""",
    ]
    INVALID = [
        """
import torch
def train(model, loader):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = model(x).sub(y).pow(2).mean()
        loss.backward()
        optimizer.zero_grad()  # expect: TL002
        optimizer.step()
""",
        """
class Trainer:
    def _before_step(self):
        self.optimizer.zero_grad()
    def train_step(self, batch):
        loss = self.model(batch)
        loss.backward()
        self._before_step()  # expect: TL002
        self.optimizer.step()
""",
    ]

    def check(self, ctx):
        reported: set[ast.AST] = set()
        for unit in iterations(ctx).step_units:
            stepped = clearing(ctx).stepped_optimizers(unit)
            for index in unit.steps:
                step = unit.events[index]
                found = _clear_after_last_backward(ctx, unit.events, index, stepped)
                if found is None or _skipped_update(ctx, unit.events, index, found[0]):
                    continue
                clear, backward = found
                site = _misordered_call(clear, backward)
                if site in reported:
                    continue
                reported.add(site)
                yield self.report(
                    site, self._message(ctx, clear, backward, step, site), evidence=(clear, backward, step, unit.events)
                )

    @staticmethod
    def _message(ctx, clear, backward, step, site) -> Message:
        why = "the backward's gradients are cleared before the step uses them, so the step applies zeroed gradients"
        fix = "clear the gradients before the forward pass or after the step"
        if clear.node is backward.node is step.node:
            # All three happen inside one call of a function of another file: its own order is wrong.
            return Message(
                f"`{ctx.quote(site)}` clears the gradients after its own backward and before its own "
                f"`{step.target or 'optimizer'}` step",
                why=why,
                help=fix,
            )
        what = f"`{ctx.quote(clear.node)}`"
        if site is not clear.node:
            what = f"`{ctx.quote(site)}` (which runs {what} at line {clear.node.lineno})"
        return Message(
            f"{what} runs after `{ctx.quote(backward.node)}` (line {backward.node.lineno}) "
            f"and before `{ctx.quote(step.node)}` (line {step.node.lineno})",
            why=why,
            help=fix,
        )


def _skipped_update(ctx, events, index, clear) -> bool:
    """The clear and the step ``events[index]`` share one block that leaves right after the step,
    passing over a later step of the same optimizer (``if overflow: optimizer.zero_grad();
    scaler.step(optimizer); continue`` before the normal ``scaler.step(optimizer)``): the update is
    skipped on purpose, the step only keeps the scaler's or optimizer's bookkeeping going."""
    step = events[index]
    jump = exit_after(ctx, step.node)
    if jump is None or exit_after(ctx, clear.node) is not jump:
        return False
    clears = clearing(ctx)
    target = clears.canonical_target(step)
    return target is not None and any(
        later.kind is EventKind.STEP and clears.canonical_target(later) == target and _leaves_before(ctx, step, later)
        for later in events[index + 1 :]
    )


def _leaves_before(ctx, event, step) -> bool:
    """``event`` sits in a block that leaves (``continue``, ``return``...) without reaching ``step``,
    so it is on no path to the step (a skip branch's own clear and step before the normal step)."""
    jump = exit_after(ctx, event.node)
    return jump is not None and jump_skips(ctx, jump, step.node)


def _misordered_call(clear, backward) -> ast.AST:
    """Where the order goes wrong: in the innermost function that runs both the backward and the
    clear, the call that leads to the clear (``self.zero_grad()`` right after
    ``self.backward(loss)``); the clear itself when that function holds it."""
    common = 0
    for a, b in zip(clear.via, backward.via):
        if a is not b:
            break
        common += 1
    return clear.via[common] if len(clear.via) > common else clear.node


def _clear_after_last_backward(ctx, events, index, stepped):
    """The clear of the step's optimizer that sits between the last backward before ``events[index]``
    and the step, on every path that reaches the step; with that backward."""
    step = events[index]
    step_keys = guard_keys(ctx, step)
    clears = clearing(ctx)
    candidates = []
    for event in reversed(events[:index]):
        if exclusive(event, step) or _leaves_before(ctx, event, step):
            continue
        if event.kind in BACKWARD_KINDS:
            for clear in candidates:
                if guard_keys(ctx, clear) <= step_keys and clears.clears(clear, step, stepped, strict=True):
                    return clear, event
            return None
        if event.kind is EventKind.STEP and clears.canonical_target(event) == clears.canonical_target(step):
            return None  # an earlier step of the same optimizer: this clear follows it
        if event.kind in CLEAR_KINDS:
            candidates.append(event)
    return None
