"""TL010's fix: accumulate `loss.item()` (a number) or `loss.detach()` (a tensor cut from the graph)."""

from __future__ import annotations

import ast

from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.nodes import method_call
from torchlint.engine.finding import SAFE, Fix
from torchlint.engine.fixers import RuleFix, register_fix

# Calls that take a number as well as a one-element tensor.
_NUMBER_FUNCTIONS = frozenset({"print", "float", "int", "round", "str", "format", "abs", "max", "min", "sum", "len"})
# Those whose result is a number again when given numbers: their own use decides.
_PASSING_NUMBERS_ON = frozenset({"abs", "max", "min", "sum", "round"})
_NUMBER_MODULES = ("math.", "statistics.", "numpy.", "np.")
_LOGGING_METHODS = frozenset(
    {"log", "info", "debug", "warning", "write", "add_scalar", "set_postfix", "set_description", "append", "update"}
)
_SCALAR_METHODS = frozenset({"mean", "sum", "item", "norm"})
_SIZES = frozenset({"size", "numel", "dim"})


@register_fix
class DetachAccumulatedLoss(RuleFix):
    codes = ("TL010",)
    applicabilities = (SAFE,)
    summary = """
        Adds `.item()` to the accumulated value when the total is only ever used as a number
        (printed, formatted, divided, logged) and the value is a scalar loss; `.detach()` otherwise,
        so the total stays a tensor.
    """
    safety = """
        the total holds the same values as before; only the autograd graph is no longer kept
        alive (`.item()` also turns a one-element tensor into the Python number it prints as).
    """
    EXAMPLES = [
        (
            """
import torch
def train(model, loader, optimizer, criterion):
    running_loss = 0.0
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        running_loss += loss  # expect: TL010
    print(f"loss {running_loss / len(loader):.3f}")
""",
            """
import torch
def train(model, loader, optimizer, criterion):
    running_loss = 0.0
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        running_loss += loss.item()  # expect: TL010
    print(f"loss {running_loss / len(loader):.3f}")
""",
        ),
        (
            """
import torch
def train(model, loader, optimizer, criterion):
    losses = []
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss * x.size(0))  # expect: TL010
    return torch.stack(losses).mean()
""",
            """
import torch
def train(model, loader, optimizer, criterion):
    losses = []
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append((loss * x.size(0)).detach())  # expect: TL010
    return torch.stack(losses).mean()
""",
        ),
    ]

    def plan(self, ctx, diagnostic):
        evidence = diagnostic.evidence
        if not isinstance(evidence, tuple):
            return None
        accumulator, added = evidence
        number = (
            isinstance(accumulator, ast.Name)
            and _scalar(ctx, added)
            and _used_as_number(ctx, accumulator.id, diagnostic.node)
        )
        method = "item" if number else "detach"
        return Fix(
            f"Accumulate `.{method}()`",
            applicability=SAFE,
            build=lambda edit: edit.method_call(added, method),
        )


def _scalar(ctx, expr: ast.AST) -> bool:
    """A one-element value: what a plain `.backward()` is called on (autograd needs a scalar there),
    a reduction, or such a value times a size."""
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Mult, ast.Div)):
        sides = (expr.left, expr.right)
        return any(_scalar(ctx, s) for s in sides) and all(_scalar(ctx, s) or _size(s) for s in sides)
    found = method_call(expr)
    if found is not None and found[0] in _SCALAR_METHODS and not expr.args and not expr.keywords:
        return True
    text = ast.unparse(expr)
    for call in ctx.calls:
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "backward" and not call.args and not call.keywords:
            if ast.unparse(func.value) == text:
                return True
    return False


def _size(expr: ast.AST) -> bool:
    if isinstance(expr, ast.Constant) and isinstance(expr.value, (int, float)):
        return True
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "len":
        return True
    found = method_call(expr)
    if found is not None and found[0] in _SIZES:
        return True
    return isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Attribute) and expr.value.attr == "shape"


def _used_as_number(ctx, name: str, accumulation: ast.AST, depth: int = 0) -> bool:
    """Whether every other read of ``name`` in its scope works the same on a Python number:
    arithmetic, comparisons, formatting, printing, logging; following `avg = total / n` once."""
    flow = dataflow(ctx)
    scope = flow.scope_of(accumulation)
    for node in ast.walk(scope):
        if not (isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)):
            continue
        if flow.scope_of(node) is not scope or ctx.is_inside(node, accumulation) or node is accumulation:
            continue
        if not _number_use(ctx, node, accumulation, depth):
            return False
    return True


def _number_use(ctx, node: ast.AST, accumulation: ast.AST, depth: int) -> bool:
    parent = ctx.parent(node)
    while True:
        while isinstance(parent, (ast.BinOp, ast.UnaryOp)):
            node, parent = parent, ctx.parent(parent)
        if isinstance(parent, (ast.Compare, ast.FormattedValue, ast.AugAssign, ast.BoolOp)):
            return True
        if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name):
            return depth < 2 and _used_as_number(ctx, parent.targets[0].id, parent, depth + 1)
        if isinstance(parent, ast.keyword):
            parent = ctx.parent(parent)
        if not isinstance(parent, ast.Call) or node is parent.func:
            return False
        func = parent.func
        if isinstance(func, ast.Name) and func.id in _PASSING_NUMBERS_ON:
            node, parent = parent, ctx.parent(parent)  # `sum(losses)`: how is the sum used?
            continue
        if isinstance(func, ast.Name):
            return func.id in _NUMBER_FUNCTIONS
        if (ctx.call_qualname(parent) or "").startswith(_NUMBER_MODULES):
            return True
        return isinstance(func, ast.Attribute) and func.attr in _LOGGING_METHODS
