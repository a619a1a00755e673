"""Training whose outcome nothing reads: a timing or memory benchmark of a layer.

A function that builds a model and an optimizer over its parameters, trains it, and then lets both
go changes no result of the program, whatever its gradients hold: the model is a local of the
function, built there from values that are no model (``Layer(args).to(device)``), and is only run,
moved, switched between modes or handed to that optimizer (never returned, stored, saved, handed to
other code or read otherwise); the optimizer is only stepped and cleared; and every value computed
from the model's outputs is only backpropagated (the loss is never printed, logged, kept, compared
or returned); and the model runs on tensors the function makes once, before its loops, with a torch
factory (``torch.ones(...)``), not on a dataset. Such a loop measures how long a step takes, not what
it learns. A script or a function that prints its loss, returns or saves its model, hands either to
other code, or learns from data it iterates over is observed.

The same holds with no model at all: an optimizer over free tensors the code makes itself
(``p = nn.Parameter(torch.zeros(0))``; ``SGD([p], lr=5)``) whose loss is computed from those tensors
alone (``p.sum().backward()``: no data, no model input) and only backpropagated, the tensors read by
nothing else, and the optimizer only stepped, cleared, handed to a schedule that is only stepped, or
asked for its learning rate (``opt.param_groups[0]["lr"]``). Such a loop drives the optimizer to
trace a learning-rate schedule; reading the rate it was given is not reading what it learned. A
free tensor fitted to data (``((x @ w - y) ** 2).mean()``) or read afterwards (``print(w)``) is
training.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.dataflow import dataflow
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.constructors import constructor_role
from torchlint.torchmodel.fresh_runs import constructs_module, stepped_optimizer
from torchlint.torchmodel.roles import Role, object_roles

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

__all__ = ["trains_unobserved"]

# What may be done to the benchmarked model and its optimizer without anything escaping.
_MODEL_METHODS = torch_names.MODULE_SELF_RETURNING | {"zero_grad"}
_OPTIMIZER_METHODS = frozenset({"step", "zero_grad"})


def trains_unobserved(ctx: FileContext, step: ast.Call) -> bool:
    """``step`` steps an optimizer whose training no outcome of the program depends on (see the module)."""
    function = ctx.enclosing_function(step)
    optimizer = stepped_optimizer(ctx, step)
    if not isinstance(optimizer, ast.Name):
        return False
    if _exercises_optimizer(ctx, optimizer, function):
        return True
    if function is None:
        return False
    constructions = _local_constructions(ctx, optimizer, function)
    models = {c.args[0].func.value.id for c in constructions}  # `Adam(model.parameters())`
    if not models:
        return False
    names = {optimizer.id, *models}
    if any(ctx.declares_global(function, name) for name in names):
        return False
    outputs: list[ast.AST] = []
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in names:
            if ctx.enclosing_function(node) is not function:
                return False  # a closure may let it out
            use = _model_use(ctx, node, constructions) if node.id in models else _optimizer_use(ctx, node)
            if use is None:
                return False
            if use is not True:
                outputs.append(use)
    return all(_fed_constants(ctx, call, function) for call in outputs) and _only_backpropagated(ctx, function, outputs)


def _fed_constants(ctx: FileContext, forward: ast.AST, function: ast.AST) -> bool:
    """Each input of the forward call is a tensor the function makes once, outside any loop, with a
    torch factory (``torch.ones(4, n, d).to(device)``): the loop measures a step on fixed data, it
    does not learn from a dataset."""
    if not isinstance(forward, ast.Call):
        return False
    for arg in [*forward.args, *(k.value for k in forward.keywords)]:
        bindings = dataflow(ctx).reaching(arg) if isinstance(arg, ast.Name) else []
        if not bindings:
            return False
        for binding in bindings:
            value = _assigned_in(ctx, binding, function)
            if value is None or ctx.enclosing_loops(binding.stmt):
                return False
            if not isinstance(value, ast.Call) or not (ctx.call_qualname(value) or "").startswith("torch."):
                return False
    return True


def _assigned_in(ctx: FileContext, binding, function: ast.AST) -> ast.expr | None:
    """The value a plain assignment in ``function`` binds, seen through self-returning calls
    (``Net(cfg).to(device)`` is ``Net(cfg)``); None for any other binding."""
    if binding.kind != "assign" or ctx.enclosing_function(binding.stmt) is not function:
        return None
    value = binding.value
    while _self_returning_call(value):
        value = value.func.value
    return value


def _local_constructions(ctx: FileContext, optimizer: ast.Name, function: ast.AST) -> list[ast.Call]:
    """The constructions of the optimizer, ``Optimizer(model.parameters(), ...)``, when it and each
    model are built in ``function`` (each model from values that are no model); else empty."""
    bindings = dataflow(ctx).reaching(optimizer)
    constructions: list[ast.Call] = []
    for binding in bindings:
        value = binding.value
        if binding.kind != "assign" or not isinstance(value, ast.Call) or ctx.enclosing_function(value) is not function:
            return []
        params = value.args[0] if value.args else None
        if not (
            isinstance(params, ast.Call)
            and isinstance(params.func, ast.Attribute)
            and params.func.attr in torch_names.PARAMETER_METHODS
            and isinstance(params.func.value, ast.Name)
            and not params.args
            and _built_here(ctx, params.func.value, function)
        ):
            return []
        constructions.append(value)
    return constructions


def _built_here(ctx: FileContext, model: ast.Name, function: ast.AST) -> bool:
    """Every binding of ``model`` is made in ``function``: a module construction handed no model
    (moved or switched on the way: ``Net(cfg).to(device)``), or a move of the model itself."""
    bindings = dataflow(ctx).reaching(model)
    if not bindings:
        return False
    for binding in bindings:
        value = _assigned_in(ctx, binding, function)
        if value is None:
            return False
        if isinstance(value, ast.Name) and value.id == model.id:
            continue  # `model = model.to(device)`
        if not isinstance(value, ast.Call):
            return False
        if constructor_role(ctx, value) != Role.MODEL and not constructs_module(ctx, value):
            return False
        if not _hands_in_no_model(ctx, value):
            return False  # a module from elsewhere inside it would be trained too
    return True


def _hands_in_no_model(ctx: FileContext, construction: ast.Call) -> bool:
    """Every argument of the construction is shown to be no model: a literal, a value of another
    known kind, or what a class of this file reads only for its attributes (``opt.d_model``: a
    configuration)."""
    init = _init_of(ctx, construction)
    params = [a.arg for a in init.args.args[1:]] if init is not None else []
    handed = [(params[i] if i < len(params) else None, a) for i, a in enumerate(construction.args)]
    handed += [(k.arg, k.value) for k in construction.keywords]
    for param, value in handed:
        if isinstance(value, ast.Constant):
            continue
        role = object_roles(ctx).role_of(value)
        if role == Role.MODEL or isinstance(value, ast.Starred):
            return False
        if role is None and (init is None or param is None or not _read_for_attributes(ctx, init, param)):
            return False
    return True


def _init_of(ctx: FileContext, construction: ast.Call) -> ast.FunctionDef | None:
    cls = ctx.classes.get(construction.func.id) if isinstance(construction.func, ast.Name) else None
    return next((s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None) if cls else None


def _read_for_attributes(ctx: FileContext, init: ast.FunctionDef, param: str) -> bool:
    """``param`` is used in ``init`` only to read attributes of it (``opt.d_model``), never kept,
    called or handed on whole."""
    uses = [n for n in ast.walk(init) if isinstance(n, ast.Name) and n.id == param and isinstance(n.ctx, ast.Load)]
    return all(
        isinstance(parent := ctx.parent(use), ast.Attribute)
        and not (isinstance(ctx.parent(parent), ast.Call) and ctx.parent(parent).func is parent)
        for use in uses
    )


def _self_returning_call(value: ast.AST | None) -> bool:
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in torch_names.MODULE_SELF_RETURNING
    )


def _model_use(ctx: FileContext, name: ast.Name, constructions: list[ast.Call]) -> ast.AST | bool | None:
    """A forward ``model(x)`` (answered: the call, whose value is followed), a move or mode switch
    kept in the name or dropped (True), the parameters handed to the optimizer (True); None for
    any other use."""
    parent = ctx.parent(name)
    if isinstance(parent, ast.Call) and parent.func is name:
        return parent
    if isinstance(parent, ast.Attribute) and parent.attr in torch_names.PARAMETER_METHODS:
        call = ctx.parent(parent)
        return True if any(c.args[0] is call for c in constructions) else None
    if isinstance(parent, ast.Attribute) and parent.attr in _MODEL_METHODS:
        call = ctx.parent(parent)
        if isinstance(call, ast.Call) and call.func is parent:
            return True if _dropped_or_kept(ctx, call, name.id) else None
    return None


def _optimizer_use(ctx: FileContext, name: ast.Name) -> bool | None:
    parent = ctx.parent(name)
    if isinstance(parent, ast.Attribute) and parent.attr in _OPTIMIZER_METHODS:
        call = ctx.parent(parent)
        if isinstance(call, ast.Call) and call.func is parent and isinstance(ctx.parent(call), ast.Expr):
            return True
    return None


def _dropped_or_kept(ctx: FileContext, call: ast.Call, name: str) -> bool:
    """``model.cuda()`` as a statement, or ``model = model.to(device)``."""
    stmt = ctx.parent(call)
    if isinstance(stmt, ast.Expr):
        return True
    return (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and stmt.targets[0].id == name
    )


def _only_backpropagated(
    ctx: FileContext, function: ast.AST | None, outputs: list[ast.AST], sources: frozenset[str] | None = None
) -> bool:
    """Every value computed from ``outputs`` (forward calls) is only assigned to local names whose
    values are in turn only so used, or backpropagated (``loss.backward()``), or dropped where the
    forward call is a statement of its own (a warm-up). With ``sources``, each such computation also
    reads nothing but those names, what they flow into, imported modules and literals (no data).
    ``function`` None is the module's own code."""
    derived: set[str] = set()
    inputs: list[ast.AST] = []
    pending = list(outputs)
    seen: set[int] = set()
    while pending:
        expr = pending.pop()
        if id(expr) in seen:
            continue
        seen.add(id(expr))
        targets, computation = _receivers(ctx, expr)
        if targets is None:
            return False
        if sources is not None:
            if isinstance(ctx.parent(computation), ast.Expr):
                return False  # a bare statement of the tensors: not a loss
            inputs.append(computation)
        for target in targets - derived:
            derived.add(target)
            for node in ast.walk(function or ctx.tree):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id == target:
                    if ctx.enclosing_function(node) is not function:
                        return False
                    pending.append(node)
    return sources is None or all(_reads_only(ctx, c, sources | derived) for c in inputs)


def _receivers(ctx: FileContext, expr: ast.AST) -> tuple[set[str] | None, ast.AST]:
    """The local names the value of ``expr`` flows into through the expression around it; empty
    when it is backpropagated or dropped; None when anything else reads it. With it, the whole
    expression that computes that value."""
    node = expr
    while True:
        parent = ctx.parent(node)
        if isinstance(parent, ast.Attribute) and parent.attr == "backward" and isinstance(ctx.parent(parent), ast.Call):
            call = ctx.parent(parent)
            return (set() if isinstance(ctx.parent(call), ast.Expr) else None), node
        if isinstance(parent, ast.Expr):
            return (set() if node is expr else None), node  # a bare warm-up forward; not a `print(loss)`
        if isinstance(parent, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
            if node is not parent.value:
                return None, node
            names = [t for target in targets for t in _flat(target)]
            if not all(isinstance(t, ast.Name) for t in names):
                return None, node  # stored into an attribute or an item
            return {t.id for t in names}, node
        if not isinstance(parent, ast.expr) or isinstance(parent, (ast.Lambda, *_COMPREHENSIONS)):
            return None, node  # a return, a test, a loop's iterable, a comprehension...
        node = parent


def _reads_only(ctx: FileContext, expr: ast.AST, names: set[str] | frozenset[str]) -> bool:
    """``expr`` reads no name but ``names``, imported modules (``torch.sum``) and names bound only
    to literals (``scale = 2.0``)."""
    flow = dataflow(ctx)
    return all(
        node.id in names or flow.names_import(node) or _literal(ctx, node)
        for node in ast.walk(expr)
        if isinstance(node, ast.Name)
    )


def _literal(ctx: FileContext, name: ast.Name) -> bool:
    bindings = dataflow(ctx).reaching(name)
    return bool(bindings) and all(b.kind == "assign" and isinstance(b.value, ast.Constant) for b in bindings)


# ----- an optimizer over free tensors, exercised for its schedule ---------------------------------
def _exercises_optimizer(ctx: FileContext, optimizer: ast.Name, function: ast.AST | None) -> bool:
    """``optimizer`` steps free tensors made in ``function`` (None: the module) whose loss reads
    nothing else and is only backpropagated, and nothing reads the tensors or what the optimizer
    did to them (see the module)."""
    tensors = _free_tensors(ctx, optimizer, function)
    if not tensors or any(function is not None and ctx.declares_global(function, n) for n in tensors):
        return False
    uses: list[ast.AST] = []
    for node in ast.walk(function or ctx.tree):
        if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)):
            continue
        if node.id not in tensors and node.id != optimizer.id:
            continue
        if ctx.enclosing_function(node) is not function:
            if _bound_in_own_scope(ctx, node, function):
                continue  # another variable of the same name (a method's parameter)
            return False  # a closure may read them
        if node.id == optimizer.id:
            if not _schedule_use(ctx, node, function):
                return False
        elif not _handed_to_optimizer(ctx, node, optimizer):
            uses.append(node)
    return bool(uses) and _only_backpropagated(ctx, function, uses, frozenset(tensors))


def _bound_in_own_scope(ctx: FileContext, name: ast.Name, function: ast.AST | None) -> bool:
    bindings = dataflow(ctx).reaching(name)
    return bool(bindings) and all(ctx.enclosing_function(b.stmt) is not function for b in bindings)


def _free_tensors(ctx: FileContext, optimizer: ast.Name, function: ast.AST | None) -> set[str]:
    """The names of the tensors each construction of ``optimizer`` is handed as a list
    (``SGD([p], lr=5)``), when every one is made once in ``function`` by torch from literals
    (``nn.Parameter(torch.zeros(0))``); else empty."""
    bindings = dataflow(ctx).reaching(optimizer)
    tensors: set[str] = set()
    for binding in bindings:
        value = binding.value
        if binding.kind != "assign" or not isinstance(value, ast.Call) or ctx.enclosing_function(value) is not function:
            return set()
        params = value.args[0] if value.args else None
        if not isinstance(params, (ast.List, ast.Tuple)) or not params.elts:
            return set()
        for element in params.elts:
            if not isinstance(element, ast.Name) or not _made_from_literals(ctx, element, function):
                return set()
            tensors.add(element.id)
    return tensors


def _made_from_literals(ctx: FileContext, tensor: ast.Name, function: ast.AST | None) -> bool:
    bindings = dataflow(ctx).reaching(tensor)
    return bool(bindings) and all(
        binding.kind == "assign"
        and ctx.enclosing_function(binding.stmt) is function
        and not ctx.enclosing_loops(binding.stmt)
        and isinstance(binding.value, ast.Call)
        and (ctx.call_qualname(binding.value) or "").startswith("torch.")
        and _reads_only(ctx, binding.value, set())
        for binding in bindings
    )


def _handed_to_optimizer(ctx: FileContext, tensor: ast.Name, optimizer: ast.Name) -> bool:
    """``tensor`` is an element of the parameter list of a construction of ``optimizer``."""
    params = ctx.parent(tensor)
    construction = ctx.parent(params)
    return (
        isinstance(params, (ast.List, ast.Tuple))
        and isinstance(construction, ast.Call)
        and construction.args[:1] == [params]
        and any(b.value is construction for b in dataflow(ctx).reaching(optimizer))
    )


def _schedule_use(ctx: FileContext, name: ast.Name, function: ast.AST | None) -> bool:
    """A use of the optimizer that reads nothing it learned: stepped or cleared as a statement, its
    learning rate read (``opt.param_groups[0]["lr"]``), or handed to a schedule that the code only
    steps (``sched = Warmup(opt, ...)`` ... ``sched.step()``)."""
    if _optimizer_use(ctx, name):
        return True
    parent = ctx.parent(name)
    if isinstance(parent, ast.Attribute) and parent.attr == "param_groups":
        group = ctx.parent(parent)
        entry = ctx.parent(group)
        return (
            isinstance(group, ast.Subscript)
            and isinstance(entry, ast.Subscript)
            and isinstance(entry.ctx, ast.Load)
            and isinstance(entry.slice, ast.Constant)
            and entry.slice.value != "params"
        )
    if isinstance(parent, ast.Call) and name in parent.args:
        stmt = ctx.parent(parent)
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
            return False
        schedule = stmt.targets[0].id
        loads = [
            n
            for n in ast.walk(function or ctx.tree)
            if isinstance(n, ast.Name) and n.id == schedule and isinstance(n.ctx, ast.Load)
        ]
        return bool(loads) and all(_stepped(ctx, n) for n in loads)
    return False


def _stepped(ctx: FileContext, name: ast.Name) -> bool:
    parent = ctx.parent(name)
    call = ctx.parent(parent)
    return (
        isinstance(parent, ast.Attribute)
        and parent.attr == "step"
        and isinstance(call, ast.Call)
        and call.func is parent
        and isinstance(ctx.parent(call), ast.Expr)
    )


_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _flat(target: ast.AST) -> list[ast.AST]:
    if isinstance(target, (ast.Tuple, ast.List)):
        return [t for elt in target.elts for t in _flat(elt)]
    return [target]
