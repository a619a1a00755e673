"""Code that needs autograd on to run: it asks autograd for gradients itself.

Evaluation that computes gradients on purpose is no TL006 case: a saliency map or an adversarial
example backpropagates to the input, and a model that *predicts by optimisation* (an energy model
that takes gradient steps on its output inside ``forward``, a differentiable inner-loop optimizer)
cannot run under ``torch.no_grad()`` at all. Two questions:

* ``asks_for_gradients(ctx, node)``: the code of ``node`` itself calls a method or function of
  ``vocabulary.AUTOGRAD_METHODS`` / ``AUTOGRAD_FUNCTIONS`` (``loss.backward()``,
  ``torch.autograd.grad(...)``, ``x.requires_grad_()``), passes one of ``AUTOGRAD_KEYWORDS`` as
  ``True`` (``torch.zeros(n, requires_grad=True)``, ``create_graph=True``), or sets
  ``x.requires_grad = True``;
* ``forward_needs_autograd(ctx, model)``: some value the model expression holds (followed through
  assignments, device moves and the call sites of a parameter) is an instance of a project class
  whose ``forward`` needs autograd: it asks for gradients, or a function, method or held
  sub-module it calls does (a summary per function, shared by every file that asks). What runs
  only under ``if self.training:`` does not count: a forward that backpropagates its own loss
  while training (a trainer wrapped as a module) runs without autograd in eval mode.

A class or function the linter cannot read is not shown to need autograd.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import find_method, held_instance_class, resolve_callee
from torchlint.analysis.definitions import Definition
from torchlint.analysis.nodes import self_attribute_name, walk_function_body
from torchlint.analysis.summaries import function_summary
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.recording_calls import instance_classes
from torchlint.torchmodel.training_flag_guards import runs_only_in_training

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext


def asks_for_gradients(ctx: FileContext, node: ast.AST) -> bool:
    """The code of ``node`` (all of it, nested functions included) asks autograd for gradients."""
    return any(_asks(ctx, sub) for sub in ast.walk(node))


def forward_needs_autograd(ctx: FileContext, model: ast.AST) -> bool:
    """Some value of ``model`` is an instance of a project class whose ``forward`` needs autograd."""
    classes = instance_classes(ctx, model, parameters=True, every=False) or []
    return any(_class_needs_autograd(cls) for cls in classes)


def _class_needs_autograd(cls: Definition) -> bool:
    forward = find_method(cls, "forward")
    return forward is not None and function_summary(forward, "torch.needs-autograd", _needs_autograd, False)


def _needs_autograd(function: Definition) -> bool:
    """The function asks for gradients (outside ``if self.training:`` branches), or something it
    calls does: a function or method of the project (``self.step(x)``, ``helpers.refine(x)``) or a sub-module it holds (``self.energy(x, y)``
    runs ``EnergyNet.forward``)."""
    ctx, node = function.ctx, function.node
    if any(_asks(ctx, sub) and not runs_only_in_training(ctx, sub) for sub in ast.walk(node)):
        return True
    for call in walk_function_body(node):
        if not isinstance(call, ast.Call) or runs_only_in_training(ctx, call):
            continue
        callee = resolve_callee(ctx, call)
        if callee is not None:
            if function_summary(Definition(*callee), "torch.needs-autograd", _needs_autograd, False):
                return True
            continue
        held = held_instance_class(ctx, call.func) if self_attribute_name(call.func) is not None else None
        if held is not None and _class_needs_autograd(Definition(ctx, held)):
            return True
    return False


def _asks(ctx: FileContext, node: ast.AST) -> bool:
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        return _sets_requires_grad(node)
    if not isinstance(node, ast.Call):
        return False
    if isinstance(node.func, ast.Attribute) and node.func.attr in torch_names.AUTOGRAD_METHODS:
        return True
    if ctx.call_qualname(node) in torch_names.AUTOGRAD_FUNCTIONS:
        return True
    return any(k.arg in torch_names.AUTOGRAD_KEYWORDS and _literal_true(k.value) for k in node.keywords)


def _sets_requires_grad(assign: ast.Assign | ast.AnnAssign) -> bool:
    """``x.requires_grad = True``."""
    targets = assign.targets if isinstance(assign, ast.Assign) else [assign.target]
    return _literal_true(assign.value) and any(
        isinstance(t, ast.Attribute) and t.attr == "requires_grad" for t in targets
    )


def _literal_true(expr: ast.AST | None) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is True
