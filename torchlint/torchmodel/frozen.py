"""Models whose every parameter is frozen before they run: their forward records no graph.

``for p in model.parameters(): p.requires_grad = False`` (or ``named_parameters()``,
``p.requires_grad_(False)``) and ``model.requires_grad_(False)`` switch gradients off for every
parameter of the model, and so does a LightningModule's ``model.freeze()`` (of a model built from a
``LightningModule`` subclass or loaded by its ``load_from_checkpoint``, or a parameter annotated
with one; any other object's ``freeze`` is not known), also through a function of this file that
freezes the model it is handed on every path through it (``predict(x, model)``): a forward pass on
inputs that do not require grad then records nothing, so there is no graph for ``torch.no_grad()``
to save. Shown, else not frozen: the freeze must run on every path to the call, in the same
function, on the very object the call runs (rebound since only by a move that hands the same module
back, ``model = model.to(device)``, or by a wrapper that runs the module's own parameters, ``model
= nn.DataParallel(model)``; a model held in a global name is the same object throughout the
function unless some function of the file declares that name ``global``), and nothing may switch a
gradient back on (``p.requires_grad = True``, ``requires_grad_()``, a LightningModule's
``unfreeze()``) between the freeze and the call: in the code between them, in a loop around the
call that does not rerun the freeze, or in a function of this file called there (a training loop
elsewhere that unfreezes the model before its own steps does not matter). For a model passed in as
a parameter, every call site of the function in the file must pass a model frozen there, and
nothing in the file may switch a gradient back on. Freezing part of a model
(``model.backbone.parameters()``, a test on the parameter's name) freezes only that part.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import call_graph, parameter_arguments
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.imports import symbol
from torchlint.analysis.nodes import argument, argument_for, position
from torchlint.analysis.reachability import block_holding, may_run_between, runs_before, statement_of
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.modules import lightning_mode_method

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

__all__ = ["frozen_right_after", "runs_frozen_model"]

_MAX_MOVES = 8
_MAX_CALLERS = 3  # call sites followed up from a parameter to where its model was frozen


def runs_frozen_model(ctx: FileContext, call: ast.Call, model: ast.AST, depth: int = 0) -> bool:
    """Whether every parameter of ``model``, which ``call`` runs, is shown frozen when it runs:
    frozen before the call in its function, or a parameter of that function to which every call
    site of the function in the file passes a model frozen there (a few calls deep)."""
    if not isinstance(model, ast.Name):
        return False
    if any(_freeze_reaches(ctx, freeze, call, model) for freeze in _freezes(ctx).get(model.id, ())):
        return True
    if _unfreezes(ctx):
        return False  # what a caller froze, the function's own code may unfreeze before the call
    return depth < _MAX_CALLERS and _frozen_by_every_caller(ctx, call, model, depth)


def frozen_right_after(ctx: FileContext, use: ast.AST, name: str, at: ast.AST) -> bool:
    """``use`` of the model held in ``name`` (a load of its weights, ``model.load_state_dict(...)``,
    or the parameter walk of a freeze itself) sits in a statement that a freeze of every parameter
    of that model follows in the same block, with no use at ``at`` in between, and nothing in the
    file switches a gradient back on: whatever the use gave the model, it is frozen from then on."""
    if _unfreezes(ctx):
        return False
    statement = statement_of(ctx, use)
    block = block_holding(ctx.parent(statement), statement) if statement is not None else None
    if block is None:
        return False
    for freeze in _freezes(ctx).get(name, ()):
        if freeze is statement:
            return True
        if (
            freeze in block
            and position(statement) < position(freeze)
            and not (position(statement) < position(at) < position(freeze))
        ):
            return True
    return False


def _frozen_by_every_caller(ctx: FileContext, call: ast.Call, model: ast.Name, depth: int) -> bool:
    """``model`` is a parameter of the function running ``call``, never rebound in it, and each
    call site of the function in this file passes a model frozen where that call runs."""
    function = ctx.enclosing_function(call)
    if function is None or function.name == "__init__":
        return False
    bindings = dataflow(ctx).reaching(model)
    if not bindings or any(b.kind != "param" for b in bindings):
        return False
    param = next((a for a in _parameters(function) if a.arg == model.id), None)
    sites = sorted(call_graph(ctx).callers(function), key=lambda site: (site.lineno, site.col_offset))
    if param is None or not sites:
        return False
    passed = parameter_arguments(ctx, function, param)
    return len(passed) == len(sites) and all(
        runs_frozen_model(ctx, site, value, depth + 1) for site, value in zip(sites, passed, strict=True)
    )


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    args = function.args
    return [*args.posonlyargs, *args.args, *args.kwonlyargs]


def _freeze_reaches(ctx: FileContext, freeze: ast.stmt, call: ast.Call, model: ast.Name) -> bool:
    """``freeze`` runs on every path to ``call`` (a statement of a block around the call, before it,
    in the same function), the model the call runs is the object it froze, and nothing unfreezes
    a parameter in between."""
    if ctx.enclosing_function(freeze) is not ctx.enclosing_function(call):
        return False
    if not runs_before(ctx, freeze, call):
        return False
    return _same_object_since(ctx, model, freeze, 0) and not _unfrozen_between(ctx, freeze, call)


def _unfrozen_between(ctx: FileContext, freeze: ast.stmt, call: ast.Call) -> bool:
    """An unfreeze may run after ``freeze`` and before ``call``: in their function between them (or
    in a loop around the call that does not rerun the freeze), or in a function of this file that
    a call made there reaches."""
    function = ctx.enclosing_function(call)
    unfreezes = _unfreezes(ctx)
    if not unfreezes:
        return False
    graph = call_graph(ctx)
    pending = [
        callee
        for between in ctx.calls
        if ctx.enclosing_function(between) is function
        and may_run_between(ctx, between, freeze, call)
        and (callee := graph.callee(between)) is not None
    ]
    reached: set[ast.AST] = set()
    while pending:
        callee = pending.pop()
        if callee in reached:
            continue
        reached.add(callee)
        pending += [c for site in ctx.calls if _inside_function(ctx, site, callee) and (c := graph.callee(site))]
    return any(
        (ctx.enclosing_function(node) is function and may_run_between(ctx, node, freeze, call))
        or any(_inside_function(ctx, node, callee) for callee in reached)
        for node in unfreezes
    )


def _inside_function(ctx: FileContext, node: ast.AST, function: ast.AST) -> bool:
    return isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) and ctx.is_inside(node, function)


def _same_object_since(ctx: FileContext, name: ast.Name, freeze: ast.stmt, depth: int) -> bool:
    """Every binding of ``name`` reaching it was made before ``freeze`` ran, or hands back the
    object the name held (``model = model.to(device)``, ``model = model.eval()``) or wraps it in a
    module running its very parameters (``model = nn.DataParallel(model)``). A binding of
    an enclosing scope (a global model) stays put while the function runs, unless a function of
    the file declares the name ``global``."""
    bindings = dataflow(ctx).reaching(name)
    if not bindings or depth > _MAX_MOVES:
        return False
    function = ctx.enclosing_function(freeze)
    for binding in bindings:
        if position(binding.stmt) < position(freeze):
            continue
        if ctx.enclosing_function(binding.stmt) is not function and not ctx.declares_global(ctx.tree, name.id):
            continue
        held = _same_parameters_as(ctx, binding.value, name.id) if binding.kind == "assign" else None
        if held is None or not _same_object_since(ctx, held, freeze, depth + 1):
            return False
    return True


def _same_parameters_as(ctx: FileContext, value: ast.AST | None, name: str) -> ast.Name | None:
    """The use of ``name`` whose parameters ``value`` runs: the receiver of a move that hands the
    module back (``model.cuda()``), or the module a parameter-sharing wrapper is built around
    (``nn.DataParallel(model, device_ids=gpus)``); None for any other value."""
    if not isinstance(value, ast.Call):
        return None
    if isinstance(value.func, ast.Attribute) and value.func.attr in torch_names.MODULE_SELF_RETURNING:
        held = value.func.value
    elif ctx.call_qualname(value) in torch_names.PARAMETER_SHARING_WRAPPERS:
        held = argument(value, 0, "module") or argument(value, 0, "model")
    else:
        return None
    return held if isinstance(held, ast.Name) and held.id == name else None


def _freezes(ctx: FileContext) -> dict[str, list[ast.stmt]]:
    """Statements that freeze every parameter of a model held in a name, by that name."""

    def build() -> dict[str, list[ast.stmt]]:
        found: dict[str, list[ast.stmt]] = {}
        for loop in ctx.nodes(ast.For):
            owner = _parameter_loop_owner(loop)
            if owner is not None and any(_freezes_parameter(stmt, loop) for stmt in loop.body):
                found.setdefault(owner, []).append(loop)
        for call in ctx.calls:
            func = call.func
            if (
                isinstance(func, ast.Attribute)
                and func.attr == "requires_grad_"
                and isinstance(func.value, ast.Name)
                and _is_false(argument(call, 0, "requires_grad"))
            ) or _lightning_freeze(ctx, call):
                stmt = ctx.parent(call)
                if isinstance(stmt, ast.Expr):
                    found.setdefault(func.value.id, []).append(stmt)
        # A call of a function of this file that freezes, on every path through it, the model it is
        # handed (`def predict(x, model): model.freeze(); ...`, called `predict(x, model)`) freezes
        # the model its caller passes: the call's statement is a freeze of that name.
        graph = call_graph(ctx)
        for call in ctx.calls:
            callee = graph.callee(call)
            if not isinstance(callee, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for param in _parameters_frozen_throughout(ctx, callee, found):
                passed = argument_for(call, callee, param)
                stmt = statement_of(ctx, call)
                if isinstance(passed, ast.Name) and stmt is not None:
                    found.setdefault(passed.id, []).append(stmt)
        return found

    return ctx.shared("frozen-models", build)


def _lightning_freeze(ctx: FileContext, call: ast.Call) -> bool:
    """``model.freeze()`` of a LightningModule: ``requires_grad = False`` on each of its parameters."""
    return (
        isinstance(call.func, ast.Attribute)
        and isinstance(call.func.value, ast.Name)
        and not call.args
        and not call.keywords
        and lightning_mode_method(ctx, call) == torch_names.LIGHTNING_FREEZE_METHOD
    )


def _parameters_frozen_throughout(
    ctx: FileContext, function: ast.FunctionDef | ast.AsyncFunctionDef, freezes: dict[str, list[ast.stmt]]
) -> list[str]:
    """Parameters of ``function`` that a freeze written directly in its body, before any ``return``
    or ``raise`` (so on every path out of it), freezes, in a function that never rebinds them nor
    switches a gradient back on."""
    exits = [
        position(node)
        for node in ast.walk(function)
        if isinstance(node, (ast.Return, ast.Raise)) and ctx.enclosing_function(node) is function
    ]
    if any(ctx.is_inside(node, function) for node in _unfreezes(ctx)):
        return []
    frozen = []
    for param in _parameters(function):
        for stmt in freezes.get(param.arg, ()):
            if stmt in function.body and not any(e < position(stmt) for e in exits):
                owner = stmt.iter if isinstance(stmt, ast.For) else stmt.value if isinstance(stmt, ast.Expr) else None
                owner = (
                    owner.func.value if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Attribute) else None
                )
                bindings = dataflow(ctx).reaching(owner) if isinstance(owner, ast.Name) else []
                if bindings and all(b.kind == "param" for b in bindings):
                    frozen.append(param.arg)
                    break
    return frozen


def _parameter_loop_owner(loop: ast.For) -> str | None:
    """``model`` for ``for p in model.parameters():`` / ``for n, p in model.named_parameters():``."""
    it = loop.iter
    if (
        isinstance(it, ast.Call)
        and isinstance(it.func, ast.Attribute)
        and it.func.attr in torch_names.PARAMETER_METHODS
        and isinstance(it.func.value, ast.Name)
        and not it.args
    ):
        return it.func.value.id
    return None


def _loop_parameter(loop: ast.For) -> str | None:
    """The name the loop binds to each parameter (the second of ``named_parameters()``'s pairs)."""
    target = loop.target
    if isinstance(target, ast.Tuple) and len(target.elts) == 2:
        target = target.elts[1]
    return target.id if isinstance(target, ast.Name) else None


def _freezes_parameter(stmt: ast.stmt, loop: ast.For) -> bool:
    """A statement directly in the loop body (not under a test) that freezes the loop's parameter."""
    param = _loop_parameter(loop)
    if param is None:
        return False
    if isinstance(stmt, ast.Assign):
        return _is_false(stmt.value) and any(
            isinstance(t, ast.Attribute) and t.attr == "requires_grad" and symbol(t.value) == param
            for t in stmt.targets
        )
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func
        return (
            isinstance(func, ast.Attribute)
            and func.attr == "requires_grad_"
            and symbol(func.value) == param
            and _is_false(argument(stmt.value, 0, "requires_grad"))
        )
    return False


def _is_false(expr: ast.AST | None) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is False


def _unfreezes(ctx: FileContext) -> list[ast.AST]:
    """What may switch a gradient back on: ``x.requires_grad = <not False>``,
    ``x.requires_grad_()`` / ``x.requires_grad_(<not False>)``."""

    def build() -> list[ast.AST]:
        found: list[ast.AST] = [
            node
            for node in ctx.nodes(ast.Assign)
            if any(isinstance(t, ast.Attribute) and t.attr == "requires_grad" for t in node.targets)
            and not _is_false(node.value)
        ]
        found += [
            call
            for call in ctx.calls
            if isinstance(call.func, ast.Attribute)
            and call.func.attr == "requires_grad_"
            and not _is_false(argument(call, 0, "requires_grad"))
        ]
        found += [
            call for call in ctx.calls if lightning_mode_method(ctx, call) == torch_names.LIGHTNING_UNFREEZE_METHOD
        ]
        return found

    return ctx.shared("unfreezes", build)
