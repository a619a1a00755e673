"""A forward pass the code put in training mode on purpose.

``model.train()`` written as a statement that runs on every path to ``model(x)`` in the same function,
with nothing in between running the model, handing it to other code or backpropagating, switches
the mode for that very forward: training-mode behaviour is what the code asks for (a test comparing
two batch-norm implementations in training mode, Monte Carlo dropout), not an evaluation that forgot
``model.eval()``. An epoch loop that calls ``model.train()``, trains, and then validates without
``eval()`` still forgets it: the training between the switch and the validation is what the switch
was for.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.imports import symbol
from torchlint.analysis.nodes import name_ids
from torchlint.analysis.reachability import may_run_between, runs_before
from torchlint.torchmodel.events import EventKind
from torchlint.torchmodel.forward_calls import mode_switches, model_expression

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

__all__ = ["switched_to_train_for"]

# Calls between the switch and the forward that train: whatever the switch was for, it was not only this forward.
_TRAINING_METHODS = frozenset({"backward", "step"})


def switched_to_train_for(ctx: FileContext, call: ast.Call) -> bool:
    """An explicit ``.train()`` of the model ``call`` runs is the last thing done with that model
    before the call, on every path to it (see the module)."""
    model = model_expression(call)
    key = symbol(model)
    if key is None:
        return False
    function = ctx.enclosing_function(call)
    root = key.split(".", 1)[0].split("[", 1)[0]
    for event in mode_switches(ctx):
        switch = event.node
        if event.kind is not EventKind.TRAIN or not isinstance(switch, ast.Call):
            continue
        if not isinstance(switch.func, ast.Attribute) or symbol(switch.func.value) != key:
            continue
        stmt = ctx.parent(switch)
        if not isinstance(stmt, ast.Expr) or ctx.enclosing_function(stmt) is not function:
            continue
        if runs_before(ctx, stmt, call) and not _used_between(ctx, stmt, call, root):
            return True
    return False


def _used_between(ctx: FileContext, switch: ast.stmt, call: ast.Call, root: str) -> bool:
    """Between the switch and the call: a call that runs or receives the model (other than a mode
    switch of it), or one that trains (``loss.backward()``, ``optimizer.step()``)."""
    function = ctx.enclosing_function(call)
    for other in ctx.calls:
        if other is call or ctx.enclosing_function(other) is not function or ctx.is_inside(other, switch):
            continue
        if not may_run_between(ctx, other, switch, call):
            continue
        func = other.func
        if isinstance(func, ast.Attribute) and func.attr in _TRAINING_METHODS:
            return True
        if isinstance(func, ast.Attribute) and func.attr in ("train", "eval"):
            continue
        if root in name_ids(func) or any(root in name_ids(arg) for arg in [*other.args, *other.keywords]):
            return True
    return False
