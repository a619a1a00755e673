"""TL018 fp16-without-grad-scaler."""

from __future__ import annotations

import ast

from torchlint.engine.rule import Message, Rule, register
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.amp import float16_autocast, scaled_backward, uses_scaler
from torchlint.torchmodel.events import EventKind
from torchlint.torchmodel.provenance import tests_code_on_synthetic_input
from torchlint.torchmodel.walk import event_walker

_STORE_TARGETS = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.NamedExpr)


@register
class Fp16WithoutGradScaler(Rule):
    code = "TL018"
    name = "fp16-without-grad-scaler"
    severity = "warning"
    summary = "A loss computed under float16 autocast is backpropagated without a GradScaler."
    what = """
        Reports the backward call of a training step (a function or script that also steps
        an optimizer) whose loss was computed under a float16 autocast region —
        `torch.autocast("cuda")` or `torch.cuda.amp.autocast()` (float16 is CUDA's default),
        or any autocast with `dtype=torch.float16` — when the function that runs it (with
        the helpers it calls in the same file) never goes through a `GradScaler`
        (`scaler.scale(loss).backward()`, `scaler.step`, `scaler.unscale_`, a
        `loss_scaler(loss, optimizer)` helper). bfloat16 autocast, CPU autocast (bfloat16
        by default) and autocast whose dtype is not a literal are not reported, nor are
        `accelerator.backward(loss)`-style calls whose framework scales the loss, nor a unit
        test that trains on synthetic input only (a loss computed from `torch.randn(...)`, no
        data loader or dataset read) and asserts on the results: it tests the code, it is no
        training run whose gradients could underflow.
    """
    why = """
        float16 has 5 exponent bits: values below about 6e-8 become zero. Under autocast
        the backward pass runs in float16 too, so many small gradients silently underflow
        to 0 and those weights stop learning; the loss curve just looks a bit worse.
        `GradScaler` multiplies the loss before backward so the gradients stay
        representable, then divides them back before the optimizer step and skips steps
        whose gradients overflowed.
    """
    example = """
        import torch

        with torch.autocast("cuda"):
            loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    """
    instead = """
        import torch

        scaler = torch.amp.GradScaler("cuda")  # once, before the loop
        ...
        with torch.autocast("cuda"):
            loss = criterion(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        # or: torch.autocast("cuda", dtype=torch.bfloat16), which needs no scaler
    """
    VALID = [
        """
import torch
def train(model, opt, loader):
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x, y)
        loss.backward()
        opt.step()
""",
        """
import torch
scaler = torch.amp.GradScaler("cuda")
def train(model, opt, loader):
    for x, y in loader:
        with torch.autocast("cuda"):
            loss = model(x, y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
""",
    ]
    INVALID = [
        """
import torch
def train(model, opt, loader):
    for x, y in loader:
        with torch.cuda.amp.autocast():
            loss = model(x, y)
        loss.backward()  # expect: TL018
        opt.step()
        opt.zero_grad()
""",
    ]

    def check(self, ctx):
        events_by_scope: dict = {}
        reported: set[ast.AST] = set()
        for with_node in ctx.nodes(ast.With, ast.AsyncWith):
            autocast = next(
                (found for item in with_node.items if (found := float16_autocast(ctx, item.context_expr))), None
            )
            if autocast is None:
                continue
            scope = ctx.enclosing_function(with_node) or ctx.tree
            if scope not in events_by_scope:
                events_by_scope[scope] = event_walker(ctx).events(scope.body)
            events = events_by_scope[scope]
            if uses_scaler(ctx, events) or not any(e.kind is EventKind.STEP for e in events):
                continue  # scaled, or not a training step (a gradient check, a test of autograd)
            computed = _names_bound_in(with_node)
            for event in events:
                if event.node in reported or not _is_unscaled_backward(ctx, event):
                    continue
                if not (ctx.is_inside(event.site, with_node) or _loss_names(event) & computed):
                    continue
                if not event.via and tests_code_on_synthetic_input(ctx, ctx.enclosing_function(event.node), event.arg):
                    continue  # a unit test on `torch.randn(...)`, asserting on its losses: no training run
                reported.add(event.node)
                yield self.report(event.node, self._message(ctx, event, autocast))

    @staticmethod
    def _message(ctx, event, autocast) -> Message:
        return Message(
            f"`{ctx.quote(event.node)}` backpropagates a float16 autocast loss (line {autocast.call.lineno}) "
            "with no GradScaler",
            why=f"the loss was computed under `{ctx.quote(autocast.call)}`, and small gradients underflow to zero "
            "in float16",
            help="use `scaler = torch.amp.GradScaler()` with `scaler.scale(loss).backward()`, "
            "`scaler.step(optimizer)`, `scaler.update()`, or autocast to bfloat16",
        )


def _is_unscaled_backward(ctx, event) -> bool:
    """``loss.backward()`` / ``torch.autograd.backward(loss)``; not scaled, not a framework's backward."""
    if event.kind is not EventKind.BACKWARD or scaled_backward(ctx, event):
        return False
    call = event.node
    if not isinstance(call, ast.Call):
        return False
    if isinstance(call.func, ast.Attribute) and call.func.attr == "backward":
        if isinstance(call.func.value, ast.Name) and _bound_by_with(ctx, call.func.value):
            return False  # `with amp.scale_loss(loss, opt) as scaled: scaled.backward()` (apex)
        return not call.args  # accelerator.backward(loss) / engine.backward(loss) scale for you
    return ctx.call_qualname(call) in torch_names.BACKWARD_FUNCTIONS


def _bound_by_with(ctx, name: ast.Name) -> bool:
    """Whether ``name`` is the ``as`` target of an enclosing with-statement."""
    for ancestor in ctx.ancestors(name):
        if isinstance(ancestor, (ast.With, ast.AsyncWith)):
            for item in ancestor.items:
                if isinstance(item.optional_vars, ast.Name) and item.optional_vars.id == name.id:
                    return True
        elif isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
    return False


def _names_bound_in(with_node) -> frozenset[str]:
    """Names assigned inside the with-block (the loss and whatever it is computed from)."""
    names = set()
    for node in ast.walk(with_node):
        if isinstance(node, _STORE_TARGETS):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Name):
                        names.add(sub.id)
    return frozenset(names)


def _loss_names(event) -> set[str]:
    """Names the backward's loss is computed from, seen at the outermost call site."""
    if event.via:
        exprs = list(event.via[0].args) + [k.value for k in event.via[0].keywords]
    else:
        exprs = [event.arg] if event.arg is not None else []
    return {n.id for expr in exprs for n in ast.walk(expr) if isinstance(n, ast.Name)}
