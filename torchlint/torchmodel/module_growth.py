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

Models are followed by their dotted names (``self.model``) and through the names bound to them
earlier in that region (``model = self.model.cpu()``, moves looked through): pruning a layer out of
that alias (``model = prune_layer(model, i)``, whose body puts ``nn.Sequential(...)`` into
``model.features``) gives the optimizer's model new parameters as well.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import resolve_callee
from torchlint.analysis.definitions import Definition
from torchlint.analysis.imports import dotted_name
from torchlint.analysis.nodes import argument, walk_function_body, walk_no_scopes
from torchlint.analysis.summaries import function_summary
from torchlint.analysis.unpacking import call_argument
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
    earlier = sorted((n for n in walk_no_scopes(region) if _position(n) < here and hasattr(n, "lineno")), key=_position)
    models |= _aliases(earlier, _parameter_owners(params))
    return bool(_grown_names(ctx, earlier, models))


def _position(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))


def _parameter_owners(params: ast.AST) -> set[str]:
    """Dotted names of the models whose parameters ``params`` takes (``self.model`` of ``self.model.parameters()``)."""
    owners = set()
    for node in ast.walk(params):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in torch_names.PARAMETER_METHODS
        ):
            owner = dotted_name(node.func.value)
            if owner is not None:
                owners.add(owner)
    return owners


def _aliases(statements: list[ast.AST], owners: set[str]) -> set[str]:
    """``owners`` and the names bound, among ``statements`` (in order), to one of them or a part of
    one (moves looked through): ``model = self.model.cpu()``."""
    found = set(owners)
    for node in statements:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        source, target = dotted_name(_unmoved(node.value)), dotted_name(node.targets[0])
        if source is not None and target is not None and any(h in found for h in _holders(source)):
            found.add(target)
    return found


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
                held = _attribute_holders(target) & names
                if held and _is_new_module(ctx, node.value):
                    grown |= held
        elif isinstance(node, ast.Call):
            grown |= _grown_by_call(ctx, node, names)
    return grown


def _grown_by_call(ctx: FileContext, call: ast.Call, names: set[str]) -> set[str]:
    func = call.func
    if isinstance(func, ast.Name) and func.id == "setattr" and len(call.args) == 3:
        held = _object_holders(call.args[0]) & names
        return held if _is_new_module(ctx, call.args[2]) else set()
    if isinstance(func, ast.Attribute) and func.attr in torch_names.PARAMETER_REGISTERING_METHODS:
        held = _object_holders(func.value) & names
        return held if call.args and _is_new_module(ctx, call.args[-1]) else set()
    handed = {dotted_name(a) for a in [*call.args, *(k.value for k in call.keywords)]}
    if not handed & names:
        return set()
    callee = resolve_callee(ctx, call)
    if callee is None:
        return set()
    callee_ctx, function = callee
    grown = set()
    for parameter in grown_parameters(callee_ctx, function):
        given = dotted_name(call_argument(ctx, call, function, parameter))
        if given in names:
            grown.add(given)
    return grown


def _is_new_module(ctx: FileContext, value: ast.AST) -> bool:
    """``value`` builds a new module with weights or a new parameter (moved or not: ``nn.Linear(...).to(device)``)."""
    value = _unmoved(value)
    if not isinstance(value, ast.Call):
        return False
    return ctx.call_qualname(value) in torch_names.PARAMETER_CLASSES or constructor_role(ctx, value) == Role.MODEL


def _unmoved(value: ast.AST) -> ast.AST:
    """``value`` with device and dtype moves taken off (``nn.Linear(...).to(device)``, ``model.cpu()``)."""
    while (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in torch_names.DEVICE_DTYPE_MOVES
    ):
        value = value.func.value
    return value


def _attribute_holders(target: ast.AST) -> set[str]:
    """What an assignment to ``target`` puts something into: ``model.module`` and ``model`` for
    ``model.module.head``; nothing for a plain name."""
    return _object_holders(target.value) if isinstance(target, ast.Attribute) else set()


def _object_holders(expr: ast.AST) -> set[str]:
    name = dotted_name(expr)
    return _holders(name) if name is not None else set()


def _holders(name: str) -> set[str]:
    """``name`` and the dotted names it is a part of: ``self.model.features``, ``self.model``, ``self``."""
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
