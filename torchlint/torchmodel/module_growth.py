"""Models given new parameters: a module or a parameter assigned into them.

An optimizer holds the parameter tensors it was built over. When code assigns a new submodule
into a model (``model.head = nn.Linear(dim, num_clusters)``, ``setattr(model, "fc", ...)``,
``model.add_module("fc", ...)``, ``model.register_parameter("w", nn.Parameter(...))``), the model's
parameters are no longer the ones the old optimizer holds: the new head would never be trained.
Building the optimizer again after such an assignment is what the code must do, not a lost state.

``grown_before(ctx, optimizer)`` says whether, earlier in the same iteration of the innermost loop
around ``optimizer`` (or earlier in its function, outside any loop), something assigns a new module
or parameter into a model whose parameters the optimizer takes -- directly, or in a function of
the project called there with that model (``run_dbscan(loader, model)`` whose body does
``model.module.head = nn.Linear(...)``). Such a function is summarised once per run
(``grown_parameters``): the names of its parameters it grows, through the calls it makes too.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import resolve_callee
from torchlint.analysis.definitions import Definition
from torchlint.analysis.nodes import argument, argument_for, walk_function_body, walk_no_scopes
from torchlint.analysis.summaries import function_summary
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.constructors import Role, constructor_role

if TYPE_CHECKING:
    from collections.abc import Iterable

    from torchlint.analysis.context import FileContext


def grown_before(ctx: FileContext, optimizer: ast.Call) -> bool:
    """Whether a model ``optimizer`` (a construction) takes parameters of gets a new module or
    parameter assigned into it before the optimizer is built, in the same iteration of the loop
    around it (or the same call of its function)."""
    params = argument(optimizer, 0, "params")
    if params is None:
        return False
    models = {n.id for n in ast.walk(params) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    loops = ctx.enclosing_loops(optimizer)
    region = loops[0] if loops else ctx.enclosing_function(optimizer)
    if not models or region is None:
        return False
    here = (optimizer.lineno, optimizer.col_offset)
    earlier = (n for n in walk_no_scopes(region) if (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)) < here)
    return bool(_grown_names(ctx, earlier, models))


def grown_parameters(ctx: FileContext, function: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str]:
    """The parameters of ``function`` that one call gives a new module or parameter (summarised once per run)."""
    return function_summary(Definition(ctx, function), "torch.grown-parameters", _summarise, frozenset())


def _summarise(definition: Definition) -> frozenset[str]:
    function = definition.node
    names = {a.arg for a in function.args.posonlyargs + function.args.args + function.args.kwonlyargs}
    return frozenset(_grown_names(definition.ctx, walk_function_body(function), names))


def _grown_names(ctx: FileContext, nodes: Iterable[ast.AST], names: set[str]) -> set[str]:
    """Which of ``names`` (local names holding models) the statements among ``nodes`` give new modules or parameters."""
    grown: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                root = _attribute_root(target)
                if root in names and _is_new_module(ctx, node.value):
                    grown.add(root)
        elif isinstance(node, ast.Call):
            grown |= _grown_by_call(ctx, node, names)
    return grown


def _grown_by_call(ctx: FileContext, call: ast.Call, names: set[str]) -> set[str]:
    func = call.func
    if isinstance(func, ast.Name) and func.id == "setattr" and len(call.args) == 3:
        root = _root(call.args[0])
        return {root} if root in names and _is_new_module(ctx, call.args[2]) else set()
    if isinstance(func, ast.Attribute) and func.attr in torch_names.PARAMETER_REGISTERING_METHODS:
        root = _root(func.value)
        return {root} if root in names and call.args and _is_new_module(ctx, call.args[-1]) else set()
    handed = {a.id for a in [*call.args, *(k.value for k in call.keywords)] if isinstance(a, ast.Name)}
    if not handed & names:
        return set()
    callee = resolve_callee(ctx, call)
    if callee is None:
        return set()
    callee_ctx, function = callee
    grown = set()
    for parameter in grown_parameters(callee_ctx, function):
        given = argument_for(call, function, parameter)
        if isinstance(given, ast.Name) and given.id in names:
            grown.add(given.id)
    return grown


def _is_new_module(ctx: FileContext, value: ast.AST) -> bool:
    """``value`` builds a new module with weights or a new parameter (moved or not: ``nn.Linear(...).to(device)``)."""
    while (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in torch_names.DEVICE_DTYPE_MOVES
    ):
        value = value.func.value
    if not isinstance(value, ast.Call):
        return False
    return ctx.call_qualname(value) in torch_names.PARAMETER_CLASSES or constructor_role(ctx, value) == Role.MODEL


def _attribute_root(target: ast.AST) -> str | None:
    """``model`` of an assignment target ``model.module.head``; None for a plain name or anything else."""
    return _root(target.value) if isinstance(target, ast.Attribute) else None


def _root(expr: ast.AST) -> str | None:
    while isinstance(expr, ast.Attribute):
        expr = expr.value
    return expr.id if isinstance(expr, ast.Name) else None
