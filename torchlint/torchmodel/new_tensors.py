"""Calls that hand back a new leaf tensor to optimise.

A tensor made with ``requires_grad=True`` (``torch.zeros(3, requires_grad=True)``, the legacy
``Variable(x, requires_grad=True)``), an ``nn.Parameter(...)``, a value made on the spot and then
marked (``x.clone().detach().requires_grad_()``), a tensor cut from its graph (``feats.detach()``,
marked afterwards with ``feats.requires_grad = True`` or not: the object is new; a ``.clone()`` of
such a one, ``latents.detach().clone()``, or of a name bound to one, ``old = logits.detach(); old.clone()``, is new
too), or a call of a project function whose every
``return`` hands back one of those (``preprocess_image(img)`` building
``Variable(tensor, requires_grad=True)``) is a new object each time it runs: an optimizer over it
holds that object and no other.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import resolve_callee
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.nodes import method_call, returns_of
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.provenance import SYNTHETIC_FACTORIES

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

# Calls that build a tensor from data or a shape and take `requires_grad=`.
_GRAD_TAKING_FACTORIES = SYNTHETIC_FACTORIES | torch_names.VARIABLE_WRAPPERS | {"torch.tensor"}
_MAX_DEPTH = 3


def creates_leaf_tensor(ctx: FileContext, call: ast.AST, depth: int = 0) -> bool:
    """``call`` hands back a tensor to optimise that it creates itself (see the module docstring)."""
    if not isinstance(call, ast.Call) or depth > _MAX_DEPTH:
        return False
    qual = ctx.call_qualname(call)
    if qual in torch_names.PARAMETER_CLASSES:
        return True
    if qual in _GRAD_TAKING_FACTORIES:
        return any(k.arg == "requires_grad" and _is_true(k.value) for k in call.keywords)
    found = method_call(call)
    if found is not None and found[0] == "requires_grad_" and qual is None:
        # `torch.zeros(3).requires_grad_()`, `x.clone().detach().requires_grad_(True)`: marks a value just made.
        return isinstance(found[1], ast.Call) and all(_is_true(a) for a in call.args)
    if found is not None and found[0] in torch_names.NEW_LEAF_METHODS and qual is None and not call.args:
        return True  # `z.detach()`: a new tensor object sharing the data, whatever `z` was
    if found is not None and found[0] == "clone" and qual is None and _returns_new(ctx, found[1], depth + 1):
        return True  # `z.detach().clone()`, `old = z.detach(); old.clone()`: a copy of a new leaf is a new leaf
    callee = resolve_callee(ctx, call)
    if callee is None:
        return False
    home, function = callee
    returns = [r.value for r in returns_of(function)]
    return bool(returns) and all(r is not None and _returns_new(home, r, depth + 1) for r in returns)


def _returns_new(ctx: FileContext, expr: ast.AST, depth: int) -> bool:
    if isinstance(expr, ast.Call):
        return creates_leaf_tensor(ctx, expr, depth)
    origins = dataflow(ctx).origins(expr) if isinstance(expr, ast.Name) else []
    return bool(origins) and all(creates_leaf_tensor(ctx, o, depth) for o in origins)


def _is_true(expr: ast.AST) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is True
