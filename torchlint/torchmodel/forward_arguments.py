"""What the callers of a module's ``forward`` pass for one of its parameters, outside training steps.

A dropout rate may be an argument of ``forward`` chosen per call (``F.dropout(x, drop_prob)`` with
``def forward(self, x, drop_prob)``): training passes the configured rate, validation and sampling
pass ``0.``. Then the functional dropout is off wherever the model is not trained, whatever its
``training`` argument. ``zero_outside_training(ctx, value)`` answers that for a parameter read in a
method: every call that runs the method (``self.decoder(x, z, drop_prob)`` in the class that builds
``self.decoder = Decoder(...)``, in this file or another of the project; ``self(0., x)`` in the
class itself; ``model(0., x)`` on a name bound to a construction; ``self.method(...)``) either
trains (its result is sent to a backward, or it sits in a training step) or passes a literal zero
there, or passes a parameter of its own function that is zero outside training by the same rule.
Any use of an instance the analysis cannot follow (handed on, stored elsewhere, ``.forward``
called by name) leaves the answer False: shown, else not.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.callers import callers_elsewhere
from torchlint.analysis.callgraph import call_graph, site_argument
from torchlint.analysis.definitions import FUNCTION_NODES, Definition
from torchlint.torchmodel.graphs import backward_losses
from torchlint.torchmodel.mode_dependence import rate_may_be_nonzero
from torchlint.torchmodel.training_steps import backpropagated_calls, training_step_functions

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

# Callers followed up from a parameter to the literal it is given (Decoder.forward <- RVAE.forward <- validate).
_MAX_DEPTH = 3


def zero_outside_training(ctx: FileContext, value: ast.AST, depth: int = 0) -> bool:
    """``value`` is a parameter of its method, and every call running that method outside a training
    step passes a literal zero for it (see the module docstring)."""
    found = _parameter(ctx, value)
    if found is None or depth > _MAX_DEPTH:
        return False
    function, param = found
    sites = _method_sites(ctx, function)
    if not sites:
        return False
    for home, site in sites:
        if _trains(home, site):
            continue
        passed = site_argument(home, function, param, site, 1)
        if passed is None:
            return False
        if not rate_may_be_nonzero(home, passed):
            continue
        if not zero_outside_training(home, passed, depth + 1):
            return False
    return True


def _parameter(ctx: FileContext, value: ast.AST) -> tuple[ast.AST, ast.arg] | None:
    """(method, parameter) when ``value`` reads a parameter of a method, never rebound there."""
    if not isinstance(value, ast.Name):
        return None
    function = ctx.enclosing_function(value)
    if function is None or not isinstance(ctx.parent(function), ast.ClassDef):
        return None
    params = [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]
    param = next((p for p in params if p.arg == value.id), None)
    if param is None or params[0] is param:
        return None
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and node.id == value.id and not isinstance(node.ctx, ast.Load):
            return None
    return function, param


def _trains(ctx: FileContext, site: ast.Call) -> bool:
    """The call's result is backpropagated, or it runs inside a training step: a function whose
    result a caller backpropagates, or one that runs a backward itself."""
    if site in backpropagated_calls(ctx):
        return True
    functions = [f for f in ctx.ancestors(site) if isinstance(f, FUNCTION_NODES)]
    if any(f in training_step_functions(ctx) for f in functions):
        return True
    backward_at = {ctx.enclosing_function(call) for _, call in backward_losses(ctx)}
    return bool(functions) and functions[0] in backward_at


def _method_sites(ctx: FileContext, function: ast.AST) -> list[tuple[FileContext, ast.Call]] | None:
    """Every call that runs ``function`` (a method), with its file; None when one may be missed."""
    cls = ctx.parent(function)
    graph = call_graph(ctx)
    if graph.subclasses(cls):
        return None
    sites = [(ctx, site) for site in graph.callers(function)]
    if function.name != "forward":
        return sites
    # `self(...)` in the class itself
    sites.extend(
        (ctx, call)
        for call in ctx.calls
        if isinstance(call.func, ast.Name) and call.func.id == "self" and ctx.enclosing(call, ast.ClassDef) is cls
    )
    constructions = [(ctx, c) for c in graph.instantiations(cls)]
    if ctx.parent(cls) is ctx.tree and ctx.project is not None:  # a lone file has no other callers
        elsewhere = callers_elsewhere(Definition(ctx, cls))
        if elsewhere is None:
            return None
        constructions.extend(elsewhere)
    for home, construction in constructions:
        calls = _instance_calls(home, construction)
        if calls is None:
            return None
        sites.extend((home, call) for call in calls)
    return sites


def _instance_calls(ctx: FileContext, construction: ast.Call) -> list[ast.Call] | None:
    """The calls of the instance ``construction`` builds, when it is bound to a name
    (``model = Net()``) or held by ``self.<name>`` and every use of it there is a call or a method
    other than ``forward``; None otherwise."""
    statement = ctx.parent(construction)
    if not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
        return None
    target = statement.targets[0]
    if isinstance(target, ast.Name):
        scope = ctx.enclosing_function(construction) or ctx.tree
        uses = [n for n in ast.walk(scope) if isinstance(n, ast.Name) and n.id == target.id]
    elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
        scope = ctx.enclosing(construction, ast.ClassDef)
        if scope is None:
            return None
        uses = [
            n
            for n in ast.walk(scope)
            if isinstance(n, ast.Attribute)
            and n.attr == target.attr
            and isinstance(n.value, ast.Name)
            and n.value.id == "self"
        ]
    else:
        return None
    return _calls_of_uses(ctx, uses, target)


def _calls_of_uses(ctx: FileContext, uses: list, target: ast.AST, depth: int = 0) -> list[ast.Call] | None:
    """The calls of an instance among its ``uses``: calls of it, calls of the functions of this file
    it is handed to (``train_step(model, ...)``, through the parameter there); None for any other use."""
    calls = []
    for use in uses:
        if not isinstance(use.ctx, ast.Load):
            if use is not target and not _rebinds_itself(ctx, use):
                return None
            continue
        parent = ctx.parent(use)
        if isinstance(parent, ast.Call) and parent.func is use:
            calls.append(parent)
        elif isinstance(parent, ast.Call) and use in parent.args and depth < _MAX_DEPTH:
            inner = _calls_in_callee(ctx, parent, parent.args.index(use), depth)
            if inner is None:
                return None
            calls.extend(inner)
        elif not (isinstance(parent, ast.Attribute) and parent.value is use and parent.attr != "forward"):
            return None
    return calls


def _calls_in_callee(ctx: FileContext, call: ast.Call, index: int, depth: int) -> list[ast.Call] | None:
    """The calls of the instance passed at position ``index`` of ``call`` inside the plain function
    of this file it runs."""
    function = call_graph(ctx).callee(call)
    if (
        function is None
        or isinstance(ctx.parent(function), ast.ClassDef)
        or any(isinstance(a, ast.Starred) for a in call.args[: index + 1])
    ):
        return None
    positional = [*function.args.posonlyargs, *function.args.args]
    if index >= len(positional):
        return None
    name = positional[index].arg
    uses = [n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == name]
    return _calls_of_uses(ctx, uses, positional[index], depth + 1)


def _rebinds_itself(ctx: FileContext, target: ast.AST) -> bool:
    """``model = model.cuda()``: the name still holds the same module."""
    statement = ctx.parent(target)
    value = getattr(statement, "value", None)
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and ast.dump(value.func.value) == ast.dump(target).replace("Store", "Load")
    )
