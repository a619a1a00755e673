"""Code guarded by a module's ``training`` flag on a path where that module is shown in eval mode,
and a flag read as a value there (``torch.set_grad_enabled(self.model.training)``): False.

``if self.training: loss.backward()`` runs nothing once ``self.eval()`` (or ``self.train(False)``)
has run on the same object earlier on the path. The path is the chain of calls that reaches the
guarded code from a function: each call of the chain must be made on the object whose flag is
tested, or the root its module is reached from (``self`` of ``self.model.training``), is made
(``self.step(...)``, ``self.forward(...)``, ``self(...)``), so that the flag read is the
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


# The module whose ``training`` flag is read: the name it is reached from and the attributes
# followed from there (``self.model.training`` -> ("self", ("model",)), ``net.training`` -> ("net", ())).
FlagOwner = tuple[str, tuple[str, ...]]


def dead_in_eval_mode(ctx: FileContext, node: ast.AST, via: tuple = ()) -> bool:
    """Whether ``node``, reached through the call sites ``via`` (outermost first), is guarded by a
    ``<obj>.training`` test that the eval mode shown on the path makes fail."""
    func = ctx.enclosing_function(node)
    owner = _guarding_owner(ctx, node, func)
    return owner is not None and _eval_on_path(ctx, owner, func, node, via)


def flag_false_on_path(ctx: FileContext, flag: ast.AST, via: tuple = ()) -> bool:
    """Whether the training flag ``flag`` (``self.model.training``, ``model.training``) is shown
    False where it is read, reached through the call sites ``via`` (outermost first): its module
    was switched to eval mode on the path (``torch.set_grad_enabled(self.model.training)`` is then
    ``set_grad_enabled(False)``)."""
    owner = _flag_owner(flag)
    return owner is not None and _eval_on_path(ctx, owner, ctx.enclosing_function(flag), flag, via)


def runs_only_in_training(ctx: FileContext, node: ast.AST) -> bool:
    """``node`` sits in a branch of ``if self.training:`` on its own method's receiver: in eval mode
    it does not run (``if self.training: self.accelerator.backward(loss)`` in a forward)."""
    func = ctx.enclosing_function(node)
    owner = _guarding_owner(ctx, node, func)
    return owner is not None and owner == (_first_parameter(func), ())


def is_training_flag(expr: ast.AST) -> bool:
    """``model.training``, ``self.model.training``: a module's mode flag, read as a value."""
    return _flag_owner(expr) is not None


def _eval_on_path(ctx: FileContext, owner: FlagOwner, func, node: ast.AST, via: tuple) -> bool:
    """``owner`` (read in ``func`` at ``node``) is shown in eval mode on the path ``via``: the chain
    hands ``owner``'s root on as ``self`` at each call, and the outermost function switches the same
    module to eval before the chain starts (or is decorated by a wrapper that does)."""
    root, attrs = owner
    for site in reversed(via):  # walk back up the chain: each call must be made on the same object
        if root != _first_parameter(func) or not _called_on(site, root):
            return False
        func = ctx.enclosing_function(site)
        root = _first_parameter(func)
        if root is None:
            return False
    start = via[0] if via else node
    return _switched_to_eval_before(func, (root, attrs), start) or (not attrs and _eval_decorated(ctx, func))


def _guarding_owner(ctx: FileContext, node: ast.AST, func) -> FlagOwner | None:
    """The module ``obj`` of an enclosing ``if obj.training`` (in ``func``) whose branch around
    ``node`` runs only in training mode."""
    child = node
    for ancestor in ctx.ancestors(node):
        if ancestor is func:
            return None
        if isinstance(ancestor, ast.If) and child is not ancestor.test:
            taken = child in ancestor.body
            for owner in _flag_owners(ancestor.test):
                if implies(ancestor.test, taken, lambda e, o=owner: True if _flag_owner(e) == o else None):
                    return owner
        child = ancestor
    return None


def _flag_owners(test: ast.AST) -> set[FlagOwner]:
    return {owner for e in ast.walk(test) if (owner := _flag_owner(e)) is not None}


def _flag_owner(expr: ast.AST) -> FlagOwner | None:
    """``a.b.training`` -> ("a", ("b",)); None for anything else."""
    if not (isinstance(expr, ast.Attribute) and expr.attr == "training"):
        return None
    return _dotted(expr.value)


def _dotted(expr: ast.AST) -> FlagOwner | None:
    attrs: list[str] = []
    while isinstance(expr, ast.Attribute):
        attrs.append(expr.attr)
        expr = expr.value
    return (expr.id, tuple(reversed(attrs))) if isinstance(expr, ast.Name) else None


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


def _mode_switch(call: ast.AST, owner: FlagOwner) -> bool | None:
    """True for ``owner.eval()`` / ``owner.train(False)``, False for ``owner.train()`` /
    ``owner.train(True)`` / ``owner.train(flag)``, None for anything else."""
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
        return None
    if _dotted(call.func.value) != owner:
        return None
    if call.func.attr == "eval" and not call.args and not call.keywords:
        return True
    if call.func.attr == "train":
        mode = argument(call, 0, "mode")
        return isinstance(mode, ast.Constant) and mode.value is False
    return None


def _switched_to_eval_before(func, owner: FlagOwner, start: ast.AST) -> bool:
    """The last switch of ``owner``'s mode in ``func`` before ``start`` sets eval mode. Only
    calls at ``func``'s own statement level count: a switch in a branch or loop may not have run."""
    if func is None or owner[0] is None:
        return False
    last = None
    for stmt in func.body:
        if position(stmt) >= position(start) or any(n is start for n in ast.walk(stmt)):
            break  # the statement that makes the call: what it does after the call comes too late
        if isinstance(stmt, ast.Expr):
            switch = _mode_switch(stmt.value, owner)
            if switch is not None:
                last = switch
        elif any(_mode_switch(n, owner) is not None for n in ast.walk(stmt)):
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
                return _switched_to_eval_before(inner, (receiver, ()), call)
    return False


def _passes_first(call: ast.Call, receiver: str | None) -> bool:
    return bool(call.args) and isinstance(call.args[0], ast.Name) and call.args[0].id == receiver
