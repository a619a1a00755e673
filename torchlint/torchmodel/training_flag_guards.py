"""Code guarded by a module's ``training`` flag on a path where that module is shown in eval mode.

``if self.training: loss.backward()`` runs nothing once ``self.eval()`` (or ``self.train(False)``)
has run on the same object earlier on the path. The path is the chain of calls that reaches the
guarded code from a function: each call of the chain must be made on the object whose flag is
tested (``self.step(...)``, ``self.forward(...)``, ``self(...)``), so that the flag read is the
flag the switch set. The switch is shown either in that function's body before the chain starts
(the last switch of the object before it is to eval mode) or by a decorator of the function whose
wrapper switches its first argument to eval mode before calling the function.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import resolve_name
from torchlint.analysis.conditions import implies
from torchlint.analysis.nodes import argument, position

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext


def dead_in_eval_mode(ctx: FileContext, node: ast.AST, via: tuple = ()) -> bool:
    """Whether ``node``, reached through the call sites ``via`` (outermost first), is guarded by a
    ``<obj>.training`` test that the eval mode shown on the path makes fail."""
    func = ctx.enclosing_function(node)
    receiver = _guarding_receiver(ctx, node, func)
    if receiver is None:
        return False
    for site in reversed(via):  # walk back up the chain: each call must be made on the same object
        if receiver != _first_parameter(func) or not _called_on(site, receiver):
            return False
        func = ctx.enclosing_function(site)
        receiver = _first_parameter(func)
        if receiver is None:
            return False
    start = via[0] if via else node
    return _switched_to_eval_before(func, receiver, start) or _eval_decorated(ctx, func)


def _guarding_receiver(ctx: FileContext, node: ast.AST, func) -> str | None:
    """The name ``obj`` of an enclosing ``if obj.training`` (in ``func``) whose branch around
    ``node`` runs only in training mode."""
    child = node
    for ancestor in ctx.ancestors(node):
        if ancestor is func:
            return None
        if isinstance(ancestor, ast.If) and child is not ancestor.test:
            taken = child in ancestor.body
            for name in _training_flag_names(ancestor.test):
                if implies(ancestor.test, taken, lambda e, n=name: _training_flag_of(e, n)):
                    return name
        child = ancestor
    return None


def _training_flag_names(test: ast.AST) -> set[str]:
    return {
        e.value.id
        for e in ast.walk(test)
        if isinstance(e, ast.Attribute) and e.attr == "training" and isinstance(e.value, ast.Name)
    }


def _training_flag_of(expr: ast.AST, name: str) -> bool | None:
    flag = isinstance(expr, ast.Attribute) and expr.attr == "training"
    return True if flag and isinstance(expr.value, ast.Name) and expr.value.id == name else None


def _first_parameter(func) -> str | None:
    if func is None:
        return None
    params = [*func.args.posonlyargs, *func.args.args]
    return params[0].arg if params else None


def _called_on(site: ast.AST, receiver: str) -> bool:
    """``receiver.method(...)`` or ``receiver(...)``: a call that hands ``receiver`` on as ``self``."""
    if not isinstance(site, ast.Call):
        return False
    target = site.func.value if isinstance(site.func, ast.Attribute) else site.func
    return isinstance(target, ast.Name) and target.id == receiver


def _mode_switch(call: ast.AST, receiver: str) -> bool | None:
    """True for ``receiver.eval()`` / ``receiver.train(False)``, False for ``receiver.train()`` /
    ``receiver.train(True)`` / ``receiver.train(flag)``, None for anything else."""
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
        return None
    if not (isinstance(call.func.value, ast.Name) and call.func.value.id == receiver):
        return None
    if call.func.attr == "eval" and not call.args and not call.keywords:
        return True
    if call.func.attr == "train":
        mode = argument(call, 0, "mode")
        return isinstance(mode, ast.Constant) and mode.value is False
    return None


def _switched_to_eval_before(func, receiver: str | None, start: ast.AST) -> bool:
    """The last switch of ``receiver``'s mode in ``func`` before ``start`` sets eval mode. Only
    calls at ``func``'s own statement level count: a switch in a branch or loop may not have run."""
    if func is None or receiver is None:
        return False
    last = None
    for stmt in func.body:
        if position(stmt) >= position(start) or any(n is start for n in ast.walk(stmt)):
            break  # the statement that makes the call: what it does after the call comes too late
        if isinstance(stmt, ast.Expr):
            switch = _mode_switch(stmt.value, receiver)
            if switch is not None:
                last = switch
        elif any(_mode_switch(n, receiver) is not None for n in ast.walk(stmt)):
            last = None  # switched under a condition: unknown
    return last is True


def _eval_decorated(ctx: FileContext, func) -> bool:
    """A decorator of ``func`` whose wrapper switches its first argument to eval mode before it
    calls the wrapped function (``def inner(model, *a): model.eval(); return fn(model, *a)``)."""
    if func is None:
        return False
    for decorator in func.decorator_list:
        definition = resolve_name(ctx, decorator) if isinstance(decorator, (ast.Name, ast.Attribute)) else None
        if definition is not None and definition.is_function and _wrapper_sets_eval(definition.node):
            return True
    return False


def _wrapper_sets_eval(decorator) -> bool:
    wrapped = _first_parameter(decorator)
    returned = {s.value.id for s in decorator.body if isinstance(s, ast.Return) and isinstance(s.value, ast.Name)}
    for inner in decorator.body:
        if not isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)) or inner.name not in returned:
            continue
        receiver = _first_parameter(inner)
        calls = [
            s.value
            for s in ast.walk(inner)
            if isinstance(s, (ast.Assign, ast.Expr, ast.Return)) and isinstance(s.value, ast.Call)
        ]
        for call in calls:
            if isinstance(call.func, ast.Name) and call.func.id == wrapped and _passes_first(call, receiver):
                return _switched_to_eval_before(inner, receiver, call)
    return False


def _passes_first(call: ast.Call, receiver: str | None) -> bool:
    return bool(call.args) and isinstance(call.args[0], ast.Name) and call.args[0].id == receiver
