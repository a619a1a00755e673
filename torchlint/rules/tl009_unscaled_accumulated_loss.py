"""TL009 unscaled-accumulated-loss."""

from __future__ import annotations

import ast
import re

from torchlint.analysis.imports import symbol
from torchlint.analysis.nodes import last_name
from torchlint.engine.rule import Message, Rule, register
from torchlint.torchmodel.accumulation import accelerate_window, gradient_accumulation
from torchlint.torchmodel.division import gradients_divided_before, loss_is_divided
from torchlint.torchmodel.forward_calls import backward_with_gradient
from torchlint.torchmodel.iterations import iterations
from torchlint.torchmodel.roles import Role, object_roles

# Owners of a `.backward(loss)` that divide by the accumulation count themselves.
_SELF_SCALING_OWNER = re.compile(r"engine|deepspeed", re.I)


@register
class UnscaledAccumulatedLoss(Rule):
    code = "TL009"
    name = "unscaled-accumulated-loss"
    severity = "error"
    summary = "Gradient accumulation sums the gradients of several micro-batches without dividing the loss."
    what = """
        Reports the backward call of a gradient-accumulation loop -- several backward passes
        per optimizer step, because the step runs under a modulo or counter condition
        (`if (i + 1) % accum_steps == 0:`, `if not need_update: continue`), or after an
        inner micro-step loop (`for micro_step in range(gradient_accumulation_steps):`) --
        when the loss sent to backward is not divided by the number of accumulated steps.
        Accumulation sums micro-batches: an inner loop whose loss is computed from one
        unchanged batch (no batch drawn, no iterator advanced, no index by the loop variable
        or drawn at random: several sub-networks of a one-shot NAS supernet sampled on the
        same images, random noise added to them) backpropagates one objective of several
        terms, and is not reported.
        Any division of the loss counts as dividing (the rule does not check what the
        divisor counts): `loss = loss / n`, `loss /= n`,
        `(loss / n).backward()`, `scaler.scale(loss / n)`, `criterion(out, y) / n`, a helper
        that returns the divided loss (also on one branch of `x / n if n > 0 else zeros`
        or `torch.where(n > 0, x / n, 0)`, the guard of an empty mask), the loss inside
        `typing.cast(...)`, an element of a container built by a comprehension that divides
        each element (`losses = tuple(l / n for l in losses)` then `losses[0]` or
        `main, aux = losses`; `sum(l / n for l in ls)`). That includes a division by a count of the whole accumulation window
        (the tokens of all its micro-batches, added up before the micro-steps): the
        accumulated gradient is then the window's mean. A division used only for logging
        does not; a helper's parameters are read as the arguments it is called with.
        Dividing the gradients instead counts too: every parameter's `.grad` scaled in place
        after the backward and before the step (`for p in model.parameters(): p.grad.div_(n)`,
        `p.grad /= n`, `p.grad.mul_(1 / n)`).
        A loss that is a sum over its samples is not reported: the micro-batches add up to
        the sum over the nominal batch, which is the objective such code tunes its learning
        rate for, not "N times the mean". That is `reduction="sum"` (on the call or the
        criterion), per-sample losses (`reduction="none"`, possibly masked or weighted)
        summed with `.sum()`, and a loss multiplied by the batch size (`loss * bs` with
        `bs = imgs.shape[0]`, YOLO's nominal-batch scheme), and a loss function or module of
        the project (every one an option may pick) that returns a full sum with no mean in
        it (`return torch.sum(pos + neg)`). A mean of per-sample losses is a
        mean and is reported. No finding when a framework divides for you: `accelerator.backward(loss)`
        with `Accelerator(gradient_accumulation_steps=...)` / `accelerator.accumulate(model)`,
        DeepSpeed's `engine.backward(loss)`, Lightning's `accumulate_grad_batches`. A backward
        of a model's output given an explicit gradient (`y = model(x); y.backward(dy)`) is no
        loss: the caller chose the upstream gradient, and summing it over micro-steps is that
        choice. A backward whose own conditions imply the step's (`if use_reg and i % n == 0:`
        before `if i % n == 0: optimizer.step()`) runs once per update, not per micro-batch, and
        needs no division.
    """
    why = """
        Gradients add up over the micro-steps, so with a loss that is a mean over its
        micro-batch each update is the *sum* of N mean-batch gradients: N times the mean
        gradient of the large batch you meant to emulate. With SGD the
        step is N times too large (the effective learning rate grows with the accumulation
        count, and training often diverges). Adam-style optimizers mostly normalise the scale
        away, but gradient clipping thresholds, coupled weight decay and `eps` still act on
        N-times-larger gradients, so changing `accum_steps` changes the training dynamics.
    """
    example = """
        for i, (x, y) in enumerate(loader):
            loss = criterion(model(x), y)
            loss.backward()
            if (i + 1) % accum_steps == 0:
                optimizer.step()
                optimizer.zero_grad()
    """
    instead = """
        for i, (x, y) in enumerate(loader):
            loss = criterion(model(x), y) / accum_steps
            loss.backward()
            if (i + 1) % accum_steps == 0:
                optimizer.step()
                optimizer.zero_grad()
    """
    VALID = [
        """
import torch
def train(model, loader, optimizer, accum_steps):
    for i, (x, y) in enumerate(loader):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss = loss / accum_steps
        loss.backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
""",
        """
while True:
    for micro_step in range(gradient_accumulation_steps):
        with ctx:
            logits, loss = model(X, Y)
            loss = loss / gradient_accumulation_steps
        scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
""",
    ]
    INVALID = [
        """
import torch
def train(model, loader, optimizer, accum_steps):
    for i, (x, y) in enumerate(loader):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()  # expect: TL009
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
""",
        """
for it in range(max_iters):
    for micro_step in range(grad_accum):
        logits, loss = model(*get_batch("train"))
        scaler.scale(loss).backward()  # expect: TL009
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
""",
    ]

    def check(self, ctx):
        accumulation = gradient_accumulation(ctx)
        reported: set[ast.AST] = set()
        candidates = []
        for unit in iterations(ctx).step_units:
            for index in unit.steps:
                step = unit.events[index]
                for backward, evidence in accumulation.accumulated_backwards(unit, index):
                    candidates.append((backward, evidence, step))
        for opaque, evidence in accumulation.accumulating_opaque_steps():
            candidates.append((opaque, evidence, opaque))
        for backward, evidence, step in candidates:
            if backward.node in reported or _framework_scales(ctx, backward, step, evidence):
                continue
            if loss_is_divided(ctx, backward) or gradients_divided_before(ctx, backward, step):
                continue
            if backward_with_gradient(ctx, backward.node):
                continue  # `y.backward(dy)`: an upstream gradient, no mean loss whose scale adds up
            reported.add(backward.node)
            yield self.report(backward.node, self._message(ctx, backward, evidence, step))

    @staticmethod
    def _message(ctx, backward, evidence, step) -> Message:
        count = evidence.count() or "accum_steps"
        loss = ctx.quote(backward.arg) if backward.arg is not None else "loss"
        if evidence.kind == "micro_loop":
            times = f"`{count}`" if evidence.count() else "several"
            how = f"the backward runs {times} times per update (micro-step loop, line {evidence.node.lineno})"
        elif evidence.kind == "argument":
            how = f"gradients accumulate until `{ctx.quote(evidence.test)}`"
        elif evidence.kind == "exit":
            how = (
                f"`{ctx.quote(step.node)}` (line {step.node.lineno}) is skipped by the early exit on line "
                f"{evidence.node.lineno} while `{ctx.quote(evidence.test)}`"
            )
        else:
            how = f"`{ctx.quote(step.node)}` (line {step.node.lineno}) runs only when `{ctx.quote(evidence.test)}`"
        return Message(
            f"`{ctx.quote(backward.node)}` accumulates gradients, but `{loss}` is not divided by the number "
            "of accumulated steps",
            why=f"{how}, so each update sums the gradients of several micro-batches: N times the mean, which SGD steps N times too far and clipping, weight decay and Adam's eps see at the wrong scale",
            help=f"use `{loss} = {loss} / {count}` before the backward",
        )


def _framework_scales(ctx, backward, step, evidence) -> bool:
    """`accelerator.backward(loss)` with accumulation configured, DeepSpeed's engine, and the like."""
    if evidence.test is not None and "sync_gradients" in ast.unparse(evidence.test):
        return True  # accelerate decides the window, so accelerate divides (or nothing accumulates)
    call = backward.node
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.args):
        return False
    owner = symbol(call.func.value) or ""
    if "accelerator" in owner.lower():
        withs = tuple(backward.withs) + tuple(step.withs)
        accumulate = any(accelerate_window(item) is not None for item in withs)
        return accumulate or _accelerator_accumulates(ctx)
    return bool(_SELF_SCALING_OWNER.search(owner)) or object_roles(ctx).role_of(call.func.value) == Role.MODEL


def _accelerator_accumulates(ctx) -> bool:
    """An ``Accelerator(gradient_accumulation_steps=...)`` (or ``gradient_accumulation_plugin=``) in the
    file: then ``accelerator.backward`` divides the loss. A local variable of that name is not enough."""
    for call in ctx.calls:
        if (last_name(call.func) or "").endswith("Accelerator") and any(
            kw.arg in ("gradient_accumulation_steps", "gradient_accumulation_plugin") or kw.arg is None
            for kw in call.keywords
        ):
            return True
    return False
