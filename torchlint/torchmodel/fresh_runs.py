"""An optimizer built over a model built in the same loop iteration starts a run of its own.

A freshly constructed module has no gradients (``.grad`` is None) and a fresh optimizer has no
state, so an iteration that builds both (``for case in cases: net = Net(**case);
opt = SGD(net.parameters()); ...; opt.step()``) carries nothing over from the previous iteration:
no gradient accumulates and no optimizer state is thrown away. Such a loop is a sweep of
independent runs, whatever it iterates over. An optimizer rebuilt over a model that outlives the
iteration, over a copy (``deepcopy`` keeps ``.grad``) or over a wrapper of an outer model
(``DDP(model)``, ``Wrapper(model)``) is not.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.nodes import argument, last_name
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.roles import Role, object_roles

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

# Methods and builtins that hand on the parameters of what they are called on or given.
_PARAMETER_VIEWS = frozenset({"parameters", "named_parameters", "values", "items", "keys"})
_PARAMETER_BUILTINS = frozenset({"list", "tuple", "filter", "iter", "chain"})
_MAX_DEPTH = 8


def fresh_model_sources(ctx: FileContext, optimizer: ast.Call) -> list[ast.Call] | None:
    """The constructions whose parameters ``optimizer`` (an optimizer's construction) is built
    over, when they all are fresh modules built in the optimizer's own loop iteration; else None."""
    params = argument(optimizer, 0, "params")
    loops = ctx.enclosing_loops(optimizer)
    if params is None or not loops:
        return None
    found: list[ast.Call] = []
    if not _sources(ctx, params, loops[0], found, 0) or not found:
        return None
    return found


def _sources(ctx: FileContext, expr: ast.AST, loop: ast.AST, found: list, depth: int) -> bool:
    """Add to ``found`` the constructions ``expr``'s parameters come from; False when one of them
    is not a fresh module of ``loop``'s iteration (or cannot be told)."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(expr, (ast.List, ast.Tuple)):
        return all(_sources(ctx, e, loop, found, depth + 1) for e in expr.elts)
    if isinstance(expr, ast.Dict):  # a parameter group `{"params": m.parameters(), "lr": ...}`
        group = [v for k, v in zip(expr.keys, expr.values) if isinstance(k, ast.Constant) and k.value == "params"]
        return bool(group) and _sources(ctx, group[0], loop, found, depth + 1)
    if isinstance(expr, (ast.ListComp, ast.GeneratorExp, ast.DictComp, ast.SetComp)):
        return all(_sources(ctx, g.iter, loop, found, depth + 1) for g in expr.generators)
    return all(_origin_sources(ctx, origin, loop, found, depth) for origin in dataflow(ctx).origins(expr))


def _origin_sources(ctx: FileContext, origin: ast.AST | None, loop: ast.AST, found: list, depth: int) -> bool:
    if _is_container(origin):
        return _sources(ctx, origin, loop, found, depth + 1)
    if not isinstance(origin, ast.Call):
        return False
    func = origin.func
    if isinstance(func, ast.Attribute) and func.attr in _PARAMETER_VIEWS:
        return _sources(ctx, func.value, loop, found, depth + 1)
    if isinstance(func, ast.Name) and func.id in _PARAMETER_BUILTINS and not dataflow(ctx).reaching(func):
        return bool(origin.args) and _sources(ctx, origin.args[-1], loop, found, depth + 1)
    if not _fresh_module(ctx, origin, loop):
        return False
    found.append(origin)
    return True


def _is_container(expr: ast.AST | None) -> bool:
    return isinstance(expr, (ast.List, ast.Tuple, ast.Dict, ast.ListComp, ast.GeneratorExp, ast.DictComp, ast.SetComp))


def _fresh_module(ctx: FileContext, call: ast.Call, loop: ast.AST) -> bool:
    """``call`` constructs a new module in ``loop``'s own iteration: a class (capitalised callee),
    not a copy or a wrapper, and handed no model of the code around it."""
    loops = ctx.enclosing_loops(call)
    if not loops or loops[0] is not loop:
        return False
    qual = ctx.call_qualname(call) or ""
    name = last_name(call.func) or ""
    if not name[:1].isupper() or qual in torch_names.MODEL_WRAPPERS or name in torch_names.MODEL_WRAPPER_NAMES:
        return False
    roles = object_roles(ctx)
    handed = [a.value if isinstance(a, ast.Starred) else a for a in call.args] + [k.value for k in call.keywords]
    return not any(roles.role_of(a, hint=False) == Role.MODEL for a in handed)


def steps_fresh_optimizer(ctx: FileContext, step: ast.AST, loop: ast.AST) -> bool:
    """``step`` (``opt.step()``, ``scaler.step(opt)``) steps an optimizer built in ``loop``'s own
    iteration over fresh modules: its gradients start empty in every iteration."""
    if not isinstance(step, ast.Call) or not isinstance(step.func, ast.Attribute):
        return False
    stepped = (
        step.args[0] if step.args and object_roles(ctx).role_of(step.func.value) == Role.SCALER else step.func.value
    )
    origins = dataflow(ctx).origins(stepped)
    return bool(origins) and all(
        isinstance(o, ast.Call) and ctx.enclosing_loops(o)[:1] == [loop] and fresh_model_sources(ctx, o) is not None
        for o in origins
    )


def builds_fresh_run(ctx: FileContext, loop: ast.AST, optimizers: list[ast.Call]) -> bool:
    """One of ``optimizers`` (constructions) is built in ``loop``'s own iteration over fresh modules."""
    return any(ctx.enclosing_loops(o)[:1] == [loop] and fresh_model_sources(ctx, o) is not None for o in optimizers)
