"""Where autograd is switched off: ``torch.no_grad()``, ``torch.inference_mode()``,
``torch.set_grad_enabled(False)`` as with-blocks or decorators (and where it is turned back on)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.torchmodel import vocabulary as torch_names

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext


def grad_effect(ctx: FileContext, expr: ast.AST) -> bool | None:
    """False if ``expr`` (a with item or decorator) disables grad, True if it enables it, else None."""
    call = expr if isinstance(expr, ast.Call) else None
    qual = ctx.qualname(call.func if call else expr)
    if qual in torch_names.NO_GRAD:
        if qual == "torch.inference_mode" and call and call.args and _is_false(call.args[0]):
            return None  # inference_mode(False) leaves grad mode alone
        return False
    if qual in torch_names.ENABLE_GRAD:
        return True
    if qual in torch_names.SET_GRAD_ENABLED and call and call.args:
        if _is_false(call.args[0]):
            return False
        if isinstance(call.args[0], ast.Constant) and call.args[0].value is True:
            return True
    return None


def _is_false(expr: ast.AST) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is False


def lexical_grad_disabler(ctx: FileContext, node: ast.AST) -> ast.AST | None:
    """The with-item or decorator that disables grad where ``node`` runs, judged lexically
    within ``node``'s own function (the nearest enclosing switch wins), or None."""
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (ast.With, ast.AsyncWith)):
            for item in reversed(ancestor.items):
                effect = grad_effect(ctx, item.context_expr)
                if effect is False:
                    return item.context_expr
                if effect is True:
                    return None
        elif isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for decorator in ancestor.decorator_list:
                effect = grad_effect(ctx, decorator)
                if effect is False:
                    return decorator
                if effect is True:
                    return None
            return None
        elif isinstance(ancestor, (ast.Lambda, ast.ClassDef)):
            return None
    return None
