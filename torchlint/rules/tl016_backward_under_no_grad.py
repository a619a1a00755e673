"""TL016 backward-under-no-grad."""

from __future__ import annotations

import ast

from torchlint.engine.rule import Message, Rule, register
from torchlint.torchmodel.calls import call_events
from torchlint.torchmodel.events import EventKind
from torchlint.torchmodel.gradmode import grad_effect, is_inference_mode, lexical_grad_disabler, recorded_with_grad
from torchlint.torchmodel.phases import runs_when_called
from torchlint.torchmodel.training_flag_guards import dead_in_eval_mode
from torchlint.torchmodel.walk import event_walker


@register
class BackwardUnderNoGrad(Rule):
    code = "TL016"
    name = "backward-under-no-grad"
    severity = "error"
    summary = "A backward pass runs where autograd is disabled."
    what = """
        Reports a backward call (`loss.backward()`, `scaler.scale(loss).backward()`,
        `accelerator.backward(loss)`, `torch.autograd.backward(...)`) inside a
        `torch.no_grad()`, `torch.inference_mode()` or `torch.set_grad_enabled(False)`
        block or a function decorated with one of them, including a helper called
        from inside such a block or such a function. A helper's backward under a
        condition on its parameters counts only on the path the call selects
        (`if train: loss.backward()` called with `train=False` runs none; a flag the
        helper computes from a parameter, `train = phase == "train"`, is read as that
        comparison, as is a choice between two constants it decides,
        `train = True if what == "train" else False`, so a call passing `phase="test"`
        runs none either). What counts
        is the mode where the backpropagated tensor was computed: a loss computed in a
        `torch.enable_grad()` block (or by an `@torch.enable_grad()` helper, or
        unpacked from a call made in such a block, `loss, kl = self.get_loss(batch)`) has its
        graph, so its backward under no-grad is fine (but not inside
        `inference_mode`, which `enable_grad` does not undo). The
        `backward` function of a compiled extension (`ext.backward(...)` with `ext`
        imported or from `torch.utils.cpp_extension.load(...)`, or an op the library
        registered, `torch.ops.<namespace>.backward(...)`, as in the hand-written
        backward of a `torch.autograd.Function`) is no autograd backward.
    """
    why = """
        Under no-grad no graph is recorded, so the loss has no `grad_fn`: backward
        raises "element 0 of tensors does not require grad", or, when some tensor
        still requires grad, trains nothing it should. The mistake usually comes from
        wrapping a whole step in `no_grad` while refactoring evaluation code.
    """
    example = """
        import torch

        with torch.no_grad():
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
    """
    instead = """
        import torch

        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    """
    VALID = [
        """
import torch
def train(model, opt, x, y):
    loss = model(x).sub(y).pow(2).mean()
    loss.backward()
    opt.step()
    with torch.no_grad():
        acc = model(x).argmax(1).eq(y).float().mean()
""",
        """
import torch
@torch.no_grad()
def evaluate(model, x):
    with torch.enable_grad():
        x.requires_grad_(True)
        model(x).sum().backward()
    return x.grad
""",
        """
import torch
with torch.no_grad():
    def step(loss):
        loss.backward()
""",
    ]
    INVALID = [
        """
import torch
def train(model, opt, x, y):
    with torch.no_grad():
        loss = model(x).sub(y).pow(2).mean()
        loss.backward()  # expect: TL016
        opt.step()
""",
        """
from torch import inference_mode
@inference_mode()
def step(model, scaler, x):
    scaler.scale(model(x).sum()).backward()  # expect: TL016
""",
        """
import torch
def step(loss, opt):
    loss.backward()  # expect: TL016
    opt.step()
def run(model, opt, batches):
    for x in batches:
        with torch.set_grad_enabled(False):
            step(model(x).mean(), opt)
""",
    ]

    def check(self, ctx):
        reported: set[ast.AST] = set()
        for call in ctx.calls:
            event = call_events(ctx).classify(call)
            if event is None or event.kind is not EventKind.BACKWARD:
                continue
            disabler = lexical_grad_disabler(ctx, call)
            if disabler is not None and not _graph_recorded(ctx, event, disabler) and not dead_in_eval_mode(ctx, call):
                reported.add(call)
                yield self.report(call, self._message(ctx, call, disabler))
        # A helper that runs backward, called from inside a no-grad block or a no-grad function.
        for body, disabler in _disabled_regions(ctx):
            for event in event_walker(ctx).events(body):
                if event.kind is not EventKind.BACKWARD or not event.via or event.node in reported:
                    continue
                if any(grad_effect(ctx, item.context_expr) is True for item in event.withs):
                    continue
                if not _on_the_called_path(ctx, event):
                    continue  # `if train: loss.backward()` reached by a call passing `train=False`
                if dead_in_eval_mode(ctx, event.node, event.via):
                    continue  # `if self.training: loss.backward()` reached after `self.eval()`
                if _graph_recorded(ctx, event, disabler):
                    continue  # the loss was computed under `torch.enable_grad()`: it has its graph
                if lexical_grad_disabler(ctx, event.node) is None and not _enabled_in_callee(ctx, event.node):
                    reported.add(event.node)
                    yield self.report(event.node, self._message(ctx, event.node, disabler, via=event.via[0]))

    @staticmethod
    def _message(ctx, call, disabler, via=None) -> Message:
        switch = ctx.quote(disabler) or "no_grad"
        where = f" (called from line {via.lineno})" if via is not None else ""
        return Message(
            f"`{ctx.quote(call)}` runs under `{switch}` (line {disabler.lineno}){where}",
            why="no autograd graph was recorded, so this backward raises or trains nothing",
            help="move it out of the no-grad block",
        )


def _disabled_regions(ctx):
    """``(body, disabler)`` for every ``with`` block and every function decorated with a no-grad
    switch (``torch.no_grad()``, ``torch.inference_mode()``, ``torch.set_grad_enabled(False)``)."""
    for with_node in ctx.nodes(ast.With, ast.AsyncWith):
        for item in with_node.items:
            if grad_effect(ctx, item.context_expr) is False:
                yield with_node.body, item.context_expr
                break
    for func in ctx.nodes(ast.FunctionDef, ast.AsyncFunctionDef):
        for decorator in func.decorator_list:
            if grad_effect(ctx, decorator) is False:
                yield func.body, decorator
                break


def _graph_recorded(ctx, event, disabler) -> bool:
    """Whether the tensor the backward runs on was computed where grad is switched back on, so
    that it has a graph although the backward call itself runs under ``disabler`` (grad mode
    governs recording, not backward). Inside ``inference_mode`` nothing switches recording back on.

    ``owner.backward(arg)`` is either a tensor's backward with a gradient (``y.backward(grad_mask)``)
    or a framework's backward of a loss (``accelerator.backward(loss)``): either tensor shown
    recorded (a framework object is never what an ``enable_grad`` block computes) is taken as the
    loss's graph."""
    if is_inference_mode(ctx, disabler):
        return False
    tensors = [event.arg]
    call = event.node
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.args:
        tensors.append(call.func.value)
    return any(t is not None and recorded_with_grad(ctx, t) for t in tensors)


def _enabled_in_callee(ctx, node) -> bool:
    """Whether grad is switched back on between the called function's top and ``node``."""
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (ast.With, ast.AsyncWith)):
            if any(grad_effect(ctx, item.context_expr) is True for item in ancestor.items):
                return True
        elif isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return any(grad_effect(ctx, d) is True for d in ancestor.decorator_list)
    return False


def _on_the_called_path(ctx, event) -> bool:
    """Whether the backward may run on the path the calls that reach it select: at each call of
    the chain, the conditions around the next step read with the constants that call passes, and
    for a parameter it hands on unchanged (``train=train``), the constant passed before."""
    steps = [*event.via, event.node]
    for index, (site, node) in enumerate(zip(steps, steps[1:])):
        func = ctx.enclosing_function(node)
        if func is not None and not runs_when_called(ctx, site, func, node, via=event.via[:index]):
            return False
    return True
