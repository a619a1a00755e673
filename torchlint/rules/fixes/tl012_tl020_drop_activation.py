"""TL012's and TL020's fix: drop the softmax / log_softmax / sigmoid whose output reaches a loss
that applies it itself."""

from __future__ import annotations

import ast

from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.nodes import argument, method_call
from torchlint.engine.finding import SAFE, UNSAFE, Fix
from torchlint.engine.fixers import RuleFix, register_fix, statement_of

SEQUENTIAL = "torch.nn.Sequential"


@register_fix
class DropActivation(RuleFix):
    codes = ("TL012", "TL020")
    applicabilities = (SAFE, UNSAFE)
    summary = """
        Drops the activation from the loss's input: the call itself when it is written in the
        input, or through the variable holding its output (the loss then reads the activation's
        input; the variable keeps its value for other uses). When the activation is the model's
        last layer (`nn.Sequential(..., nn.Softmax())`) or what its `forward` returns, removes it there.
    """
    safety = """
        safe inside the loss's own function: only the loss's input changes, and it becomes the
        logits the loss was written for (for `log_softmax` the loss value is even unchanged);
        unsafe in the model, because every caller of the model then gets logits instead of
        probabilities.
    """
    EXAMPLES = [
        (
            """
import torch.nn.functional as F
def step(model, x, y):
    return F.cross_entropy(F.softmax(model(x), dim=1), y)  # expect: TL012
""",
            """
import torch.nn.functional as F
def step(model, x, y):
    return F.cross_entropy(model(x), y)  # expect: TL012
""",
        ),
        (
            """
import torch
import torch.nn.functional as F
def step(logits, y):
    probs = torch.softmax(logits, dim=-1)
    acc = (probs.argmax(-1) == y).float().mean()
    return F.cross_entropy(probs.view(-1, probs.size(-1)), y.view(-1)), acc  # expect: TL012
""",
            """
import torch
import torch.nn.functional as F
def step(logits, y):
    probs = torch.softmax(logits, dim=-1)
    acc = (probs.argmax(-1) == y).float().mean()
    return F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1)), acc  # expect: TL012
""",
        ),
        (
            """
import torch.nn as nn
model = nn.Sequential(nn.Linear(10, 1), nn.Sigmoid())
criterion = nn.BCEWithLogitsLoss()
def step(x, y):
    p = model(x)
    return criterion(p, y)  # expect: TL020
""",
            """
import torch.nn as nn
model = nn.Sequential(nn.Linear(10, 1))
criterion = nn.BCEWithLogitsLoss()
def step(x, y):
    p = model(x)
    return criterion(p, y)  # expect: TL020
""",
        ),
    ]

    def plan(self, ctx, diagnostic):
        found = diagnostic.evidence
        producer = getattr(found, "producer", None)
        if producer is None:
            return None
        name = found.kind
        if ctx.call_qualname(producer) in _LAYERS:
            return _drop_layer(ctx, producer, name)
        inner = _activation_input(ctx, producer)
        if inner is None:
            return None
        home = ctx.enclosing_function(found.loss)
        if ctx.enclosing_function(producer) is not home:
            if isinstance(ctx.parent(producer), ast.Return) and _in_forward(ctx, producer):
                return Fix(
                    f"Return the logits from `forward` (drop the {name})",
                    applicability=UNSAFE,
                    build=lambda edit: edit.unwrap(producer, inner),
                )
            return None
        if producer is found.input or ctx.is_inside(producer, found.input):
            return Fix(f"Drop the {name}", applicability=SAFE, build=lambda edit: edit.unwrap(producer, inner))
        return _through_variable(ctx, producer, inner, found, name)


_LAYERS = frozenset({"torch.nn.Softmax", "torch.nn.LogSoftmax", "torch.nn.Sigmoid"})


def _activation_input(ctx, call: ast.AST) -> ast.AST | None:
    """``x`` of ``F.softmax(x, dim=1)`` / ``x.softmax(-1)`` / ``torch.sigmoid(x)``."""
    if not isinstance(call, ast.Call):
        return None
    if ctx.call_qualname(call) is not None:
        return argument(call, 0, "input")
    found = method_call(call)
    return found[1] if found is not None else None


def _through_variable(ctx, producer, inner, found, name):
    """``probs = softmax(logits)`` ... ``loss(probs, y)``: give the loss ``logits`` instead."""
    assign = ctx.parent(producer)
    if not (
        isinstance(assign, ast.Assign)
        and len(assign.targets) == 1
        and isinstance(assign.targets[0], ast.Name)
        and assign.value is producer
    ):
        return None
    variable = assign.targets[0].id
    flow = dataflow(ctx)
    uses = [n for n in ast.walk(found.input) if isinstance(n, ast.Name) and n.id == variable]
    if not uses or any({id(b.stmt) for b in flow.reaching(use)} != {id(assign)} for use in uses):
        return None
    if not isinstance(inner, ast.Name):
        return None
    # The activation's input must still hold the same value where the loss reads it.
    here = {id(b.stmt) for b in flow.reaching(inner.id, statement_of(ctx, found.loss))}
    there = {id(b.stmt) for b in flow.reaching(inner.id, assign)}
    if not here or here != there:
        return None

    def build(edit):
        for use in uses:
            edit.replace(use, inner.id)

    return Fix(f"Give the loss `{inner.id}`, not its {name}", applicability=SAFE, build=build)


def _drop_layer(ctx, layer: ast.Call, name: str):
    """``nn.Sequential(..., nn.Softmax(dim=1))``: remove the last layer."""
    parent = ctx.parent(layer)
    if (
        isinstance(parent, ast.Call)
        and ctx.call_qualname(parent) == SEQUENTIAL
        and parent.args
        and parent.args[-1] is layer
        and len(parent.args) > 1
        and not parent.keywords
    ):
        return Fix(
            f"Remove the {name} layer from the model",
            applicability=UNSAFE,
            build=lambda edit: edit.remove_argument(parent, layer),
        )
    return None


def _in_forward(ctx, node: ast.AST) -> bool:
    func = ctx.enclosing_function(node)
    return func is not None and func.name == "forward" and isinstance(ctx.parent(func), ast.ClassDef)
