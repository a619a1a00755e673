"""An optimizer built over the iteration's own model starts a run of its own.

A freshly constructed module has no gradients (``.grad`` is None) and a fresh optimizer has no
state, so an iteration that builds both (``for case in cases: net = Net(**case);
opt = SGD(net.parameters()); ...; opt.step()``) carries nothing over from the previous iteration:
no gradient accumulates and no optimizer state is thrown away. Such a loop is a sweep of
independent runs, whatever it iterates over. So is a loop that hands out a different model each
iteration and trains it, through a loop of steps, with an optimizer over that model
(``for net in ensemble: train(net, data)`` where ``train`` builds ``Adam(net.parameters())``): each
optimizer serves one model's run. The optimizer may be built in the iteration itself or in a
function it calls, its parameters followed from the call's argument; a function of another file
of the project is read from its summary (``trained_in_own_run``: the parameters whose model one
call trains with an optimizer it builds itself), so ``for n in sizes: net = Net(n);
train.main(net, cfg)`` is a sweep when ``train.main`` builds ``Adam(net.parameters())`` and steps it. A module is fresh when a
class is called (capitalised, or a class the loop hands out: ``for cls in [nn.RNN, nn.GRU]:
cls(2, 1)``, or one drawn from a table whose every entry builds a new model: ``build =
MODELS[name]; ...; build()``) and handed no model but fresh ones (``MAML(Net())``); models the
iteration builds in a list and hands out through a loop of its body are its own; a move (``.cuda()``,
``.to(device)``) or a wrapper (``DataParallel(net)``, ``torch.compile(net)``) keeps what it moves or
wraps fresh or not. An optimizer rebuilt over a
model that outlives the iteration, over a copy (``deepcopy`` keeps ``.grad``) or over a wrapper of
an outer model (``DDP(model)``, ``Wrapper(model)``) is not.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import call_graph, calls_elsewhere, resolve_callee, resolve_name
from torchlint.analysis.containers import written_items
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.definitions import Definition
from torchlint.analysis.imports import symbol
from torchlint.analysis.nodes import argument, last_name, returns_of
from torchlint.analysis.summaries import function_summary
from torchlint.analysis.unpacking import call_argument
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.constructors import class_reference_role, constructor_role, preserved_argument
from torchlint.torchmodel.events import STEP_KINDS
from torchlint.torchmodel.new_tensors import creates_leaf_tensor
from torchlint.torchmodel.roles import Role, object_roles
from torchlint.torchmodel.walk import event_walker

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

# Methods and builtins that hand on the parameters of what they are called on or given.
_PARAMETER_VIEWS = frozenset({"parameters", "named_parameters", "values", "items", "keys"})
_PARAMETER_BUILTINS = frozenset({"list", "tuple", "filter", "iter", "chain"})
_MAX_DEPTH = 8
_MAX_CALL_DEPTH = 2


@dataclass(frozen=True)
class _Iteration:
    """One loop iteration the optimizer is built for: the loop, the calls from its body down to the
    function that builds the optimizer (outermost first), and whether a model the loop hands out
    counts as the iteration's own."""

    loop: ast.AST
    sites: tuple[ast.Call, ...] = ()
    handed_out: bool = False


def fresh_model_sources(ctx: FileContext, optimizer: ast.Call) -> list[ast.AST] | None:
    """The constructions whose parameters ``optimizer`` (an optimizer's construction) is built
    over, when they all are fresh modules built in the optimizer's own loop iteration; else None."""
    loops = ctx.enclosing_loops(optimizer)
    return _own_model_sources(ctx, optimizer, _Iteration(loops[0])) if loops else None


def _own_model_sources(ctx: FileContext, optimizer: ast.Call, iteration: _Iteration) -> list[ast.AST] | None:
    params = argument(optimizer, 0, "params")
    return _own_sources(ctx, params, iteration) if params is not None else None


def _own_sources(ctx: FileContext, expr: ast.AST, iteration: _Iteration) -> list[ast.AST] | None:
    """The modules ``expr``'s parameters come from, when they all are the iteration's own; else None."""
    found: list[ast.AST] = []
    if not _sources(ctx, expr, iteration, found, 0) or not found:
        return None
    return found


def _parameter_parts(expr: ast.AST) -> list[ast.AST | None] | None:
    """What an optimizer's parameter argument written as a container is made of: a list's or tuple's
    elements, a parameter group's ``params`` (``{"params": m.parameters(), "lr": ...}``; ``[None]``
    when the group names none, a part nothing can be told of); None when ``expr`` is no container."""
    if isinstance(expr, (ast.List, ast.Tuple)):
        return list(expr.elts)
    if isinstance(expr, ast.Dict):
        group = [v for k, v in zip(expr.keys, expr.values) if isinstance(k, ast.Constant) and k.value == "params"]
        return group[:1] or [None]
    return None


def _sources(ctx: FileContext, expr: ast.AST, iteration: _Iteration, found: list, depth: int) -> bool:
    """Add to ``found`` the modules ``expr``'s parameters come from; False when one of them is not
    the iteration's own (or cannot be told)."""
    if depth > _MAX_DEPTH:
        return False
    parts = _parameter_parts(expr)
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        parts = [expr.left, expr.right]  # `a_params + b_params`: two lists joined
    if parts is not None:
        return all(part is not None and _sources(ctx, part, iteration, found, depth + 1) for part in parts)
    if isinstance(expr, (ast.ListComp, ast.GeneratorExp, ast.SetComp)) and _new_tensor(ctx, expr.elt, iteration):
        # `[nn.Parameter(a.clone()) for a in As]`: each element a leaf tensor the comprehension creates.
        found.append(expr.elt)
        return True
    if isinstance(expr, (ast.ListComp, ast.GeneratorExp, ast.DictComp, ast.SetComp)):
        return all(_sources(ctx, g.iter, iteration, found, depth + 1) for g in expr.generators)
    if isinstance(expr, ast.Name):
        bindings = dataflow(ctx).reaching(expr)
        if bindings and all(b.kind == "param" for b in bindings) and iteration.sites:
            # A parameter of the function the iteration calls: what that call passes.
            site, function = iteration.sites[-1], ctx.enclosing_function(expr)
            given = call_argument(ctx, site, function, expr.id) if function is not None else None
            outer = replace(iteration, sites=iteration.sites[:-1])
            return given is not None and _sources(ctx, given, outer, found, depth + 1)
        if bindings and all(b.kind == "for" and b.stmt is iteration.loop for b in bindings):
            # `for net in ensemble:` -- a different model every iteration.
            found.append(expr)
            return iteration.handed_out
        if bindings and all(b.kind == "for" and _hands_out_within(ctx, b.stmt, iteration) for b in bindings):
            # `nets = [Net() for _ in range(k)]; for net in nets: opt = SGD(net.parameters())`: each
            # model the inner loop hands out is one the iteration built.
            return all(
                _origin_sources(ctx, element, iteration, found, depth + 1)
                for loop in {b.stmt for b in bindings}
                for element in _built_elements(ctx, loop.iter)
            )
        rebound = _rebound_to_new_leaf(ctx, expr, bindings, iteration)
        if rebound is not None:
            found.extend(rebound)
            return True
    return all(_origin_sources(ctx, origin, iteration, found, depth) for origin in dataflow(ctx).origins(expr))


def _rebound_to_new_leaf(ctx: FileContext, name: ast.Name, bindings: list, iteration: _Iteration) -> list | None:
    """The new leaf tensors the loop's own body rebinds ``name`` to in every pass, after the use
    (``output = F.interpolate(output, scale_factor=2).detach()`` at the end of a multiscale phase),
    when every binding of ``name`` in the loop is one of them; None otherwise. A binding made
    before the loop (``bindings``, those reaching the use) reaches the first iteration only: each
    later one holds the tensor the previous iteration made, so no two iterations optimise the
    same tensor object and an optimizer built before the loop would hold none of the later ones."""
    loop = iteration.loop
    if iteration.sites or not isinstance(loop, (ast.For, ast.AsyncFor, ast.While)):
        return None
    if any(ctx.is_inside(b.stmt, loop) for b in bindings):
        return None  # bound earlier in the same pass: judged from those bindings
    inside = [b for b in dataflow(ctx).visible_bindings(name.id, name) if ctx.is_inside(b.stmt, loop)]
    if any(b.kind != "assign" or not creates_leaf_tensor(ctx, b.value) for b in inside):
        return None
    every_pass = [b.value for b in inside if b.stmt in loop.body and b.stmt.lineno > name.lineno]
    if not every_pass:
        return None
    if any(isinstance(n, ast.Continue) and ctx.enclosing_loops(n)[:1] == [loop] for n in ast.walk(loop)):
        return None  # a pass may skip the rebinding
    return every_pass


def _origin_sources(ctx: FileContext, origin: ast.AST | None, iteration: _Iteration, found: list, depth: int) -> bool:
    if _is_container(origin):
        return _sources(ctx, origin, iteration, found, depth + 1)
    if not isinstance(origin, ast.Call):
        return False
    func = origin.func
    if isinstance(func, ast.Attribute) and func.attr in _PARAMETER_VIEWS:
        return _sources(ctx, func.value, iteration, found, depth + 1)
    if isinstance(func, ast.Attribute) and func.attr in torch_names.DEVICE_DTYPE_MOVES:
        # `x = x.cuda()`, `net.to(device)`: the moved object is the iteration's own or not, whichever
        # value it held before this move (a move that rebinds its own name reaches itself again).
        earlier = [o for o in dataflow(ctx).origins(func.value) if o is not origin]
        if len(earlier) == len(dataflow(ctx).origins(func.value)):
            return _sources(ctx, func.value, iteration, found, depth + 1)
        return bool(earlier) and all(_origin_sources(ctx, o, iteration, found, depth + 1) for o in earlier)
    if isinstance(func, ast.Attribute) and func.attr == "requires_grad_" and isinstance(func.value, ast.Name):
        # `SGD([x.requires_grad_()])`: marks `x` in place and hands back that same tensor.
        return _sources(ctx, func.value, iteration, found, depth + 1)
    wrapped = preserved_argument(ctx, origin)
    if wrapped is not None:
        # `DataParallel(net)`, `torch.compile(net)`: the same parameters, as fresh as the model wrapped.
        return _sources(ctx, wrapped, iteration, found, depth + 1)
    if isinstance(func, ast.Name) and func.id in _PARAMETER_BUILTINS and not dataflow(ctx).reaching(func):
        return bool(origin.args) and _sources(ctx, origin.args[-1], iteration, found, depth + 1)
    if not _fresh_module(ctx, origin, iteration, found, depth) and not _new_tensor(ctx, origin, iteration):
        return False
    found.append(origin)
    return True


def _hands_out_within(ctx: FileContext, loop: ast.AST, iteration: _Iteration) -> bool:
    """``loop`` is a ``for`` directly in the iteration's own body."""
    return isinstance(loop, ast.For) and not iteration.sites and ctx.enclosing_loops(loop)[:1] == [iteration.loop]


def _built_elements(ctx: FileContext, expr: ast.AST) -> list[ast.AST | None]:
    """The elements of the list ``expr`` holds, as written where it is built (``[Net() for _ in
    range(k)]``, ``[Net(), Net()]``); ``[None]`` when it cannot be told."""
    origins = dataflow(ctx).origins(expr) if isinstance(expr, ast.Name) else [expr]
    elements: list[ast.AST | None] = []
    for origin in origins:
        if isinstance(origin, ast.ListComp):
            elements.append(origin.elt)
        elif isinstance(origin, (ast.List, ast.Tuple)) and not any(isinstance(e, ast.Starred) for e in origin.elts):
            elements.extend(origin.elts)
        else:
            return [None]
    return elements or [None]


def _is_container(expr: ast.AST | None) -> bool:
    return isinstance(expr, (ast.List, ast.Tuple, ast.Dict, ast.ListComp, ast.GeneratorExp, ast.DictComp, ast.SetComp))


def _fresh_module(ctx: FileContext, call: ast.Call, iteration: _Iteration, found: list, depth: int) -> bool:
    """``call`` constructs a new module once per iteration (in the loop's body, or outside any loop
    of the function the body calls): a class (capitalised callee, or a class the loop hands out:
    ``for cls in [nn.RNN, nn.GRU]: cls(2, 1)``), not a copy or a torch wrapper, and handed no model
    but the iteration's own (``MAML(Net())`` wraps a module as new as itself)."""
    if not _once_per_iteration(ctx, call, iteration):
        return False
    if not (
        constructs_module(ctx, call)
        or _calls_handed_out_class(ctx, call, iteration)
        or _calls_model_table(ctx, call)
        or _calls_model_factory(ctx, call)
    ):
        return False
    roles = object_roles(ctx)
    return all(
        _sources(ctx, arg, iteration, found, depth + 1)
        for arg in _handed(call)
        if roles.role_of(arg, hint=False) == Role.MODEL
    )


def _calls_model_factory(ctx: FileContext, call: ast.Call) -> bool:
    """``call`` calls a function, of this file or another, each of whose returns is a model it
    constructs there (``def generic(n): return NBeats(nn.ModuleList([Block(n) for _ in ...]))``):
    each call returns a new one."""
    callee = resolve_callee(ctx, call)
    return callee is not None and function_summary(Definition(*callee), "torch.new-model", _returns_new_model, False)


def _calls_handed_out_class(ctx: FileContext, call: ast.Call, iteration: _Iteration) -> bool:
    """``call`` calls the loop's own target, and the loop runs over classes written out in the code
    (``for rnn_class in [nn.RNN, nn.LSTM]:``): each iteration builds an object of a new class."""
    loop = iteration.loop
    if not (isinstance(call.func, ast.Name) and isinstance(loop, (ast.For, ast.AsyncFor))):
        return False
    bindings = dataflow(ctx).reaching(call.func)
    if not bindings or not all(b.kind == "for" and b.stmt is loop for b in bindings):
        return False
    listed = loop.iter
    return (
        isinstance(listed, (ast.List, ast.Tuple))
        and bool(listed.elts)
        and all((last_name(e) or "")[:1].isupper() for e in listed.elts)
    )


def _calls_model_table(ctx: FileContext, call: ast.Call) -> bool:
    """``call`` calls a constructor drawn from a table the file writes out, directly
    (``MODELS[name](...)``) or through a name bound to the drawn entry (``build = MODELS[name]``),
    and every entry of the table builds a new model each call: whichever is drawn, the result is new."""
    func = call.func
    drawn = [func] if isinstance(func, ast.Subscript) else dataflow(ctx).origins(func)
    if not drawn or not all(isinstance(d, ast.Subscript) for d in drawn):
        return False
    entries = [entry for d in drawn for entry in written_items(ctx, d)]
    return bool(entries) and all(entry is not None and _builds_new_model(ctx, entry) for entry in entries)


def _builds_new_model(ctx: FileContext, reference: ast.AST) -> bool:
    """Calling what ``reference`` names builds a new model: a model class or a known model factory,
    or a function of the project each of whose returns is a model it constructs there."""
    if class_reference_role(ctx, reference) == Role.MODEL:
        return True
    found = resolve_name(ctx, reference)
    return (
        found is not None
        and found.is_function
        and function_summary(found, "torch.new-model", _returns_new_model, False)
    )


def _returns_new_model(function: Definition) -> bool:
    """Every ``return`` of ``function`` hands back a module constructed in it (``m = ResNet(...);
    return m.to(device)``), handed no model but ones also constructed there: a new one each call
    (a cached or given model fails the test)."""
    ctx, returns = function.ctx, returns_of(function.node)
    if not returns or any(r.value is None for r in returns):
        return False
    return all(_constructed_in(ctx, r.value, function.node, 0) for r in returns)


def _constructed_in(ctx: FileContext, expr: ast.AST, function: ast.AST, depth: int) -> bool:
    """``expr`` is a module ``function`` constructs itself: a class called there (through moves),
    whose models handed in (``nn.ModuleList([Block(n) for _ in range(k)])``) are constructed there too."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(expr, (ast.List, ast.Tuple)):
        return all(_constructed_in(ctx, e, function, depth + 1) for e in expr.elts)
    if isinstance(expr, ast.Dict):
        return all(_constructed_in(ctx, v, function, depth + 1) for v in expr.values)
    if isinstance(expr, ast.ListComp):
        return _constructed_in(ctx, expr.elt, function, depth + 1)
    if isinstance(expr, ast.BinOp) and isinstance(
        expr.op, ast.Add
    ):  # `[a for _ in ...] + [b for _ in ...]`: lists joined
        return _constructed_in(ctx, expr.left, function, depth + 1) and _constructed_in(
            ctx, expr.right, function, depth + 1
        )
    origins = [expr] if isinstance(expr, ast.Call) else dataflow(ctx).origins(expr)
    if not origins:
        return False
    roles = object_roles(ctx)
    for origin in origins:
        if not isinstance(origin, ast.Call) or ctx.enclosing_function(origin) is not function:
            return False
        func = origin.func
        if isinstance(func, ast.Attribute) and func.attr in torch_names.DEVICE_DTYPE_MOVES:
            if not _constructed_in(ctx, func.value, function, depth + 1):
                return False
            continue
        if constructor_role(ctx, origin) != Role.MODEL or not constructs_module(ctx, origin):
            return False
        # What a layer container holds are modules, whatever their role tells; other arguments
        # count when they are models.
        container = ctx.call_qualname(origin) in torch_names.REGISTERING_CONTAINERS
        if not all(
            _constructed_in(ctx, arg, function, depth + 1)
            for arg in _handed(origin)
            if container or roles.role_of(arg, hint=False) == Role.MODEL
        ):
            return False
    return True


def _new_tensor(ctx: FileContext, call: ast.AST, iteration: _Iteration) -> bool:
    """``call`` creates a new leaf tensor to optimise once per iteration (where ``_fresh_module``
    builds a module): an optimizer over it cannot be built before the loop."""
    return isinstance(call, ast.Call) and _once_per_iteration(ctx, call, iteration) and creates_leaf_tensor(ctx, call)


def _once_per_iteration(ctx: FileContext, node: ast.AST, iteration: _Iteration) -> bool:
    """In the loop's body, or outside any loop of the function the body calls."""
    return ctx.enclosing_loops(node)[:1] == ([] if iteration.sites else [iteration.loop])


def constructs_new_module(ctx: FileContext, call: ast.Call) -> bool:
    """``call`` constructs a new module handed no model of the code around it."""
    roles = object_roles(ctx)
    return constructs_module(ctx, call) and not any(roles.role_of(a, hint=False) == Role.MODEL for a in _handed(call))


def constructs_module(ctx: FileContext, call: ast.Call) -> bool:
    """A class is called (capitalised callee), not a copy or a wrapper."""
    qual = ctx.call_qualname(call) or ""
    name = last_name(call.func) or ""
    return name[:1].isupper() and qual not in torch_names.MODEL_WRAPPERS and name not in torch_names.MODEL_WRAPPER_NAMES


def _handed(call: ast.Call) -> list[ast.AST]:
    return [a.value if isinstance(a, ast.Starred) else a for a in call.args] + [k.value for k in call.keywords]


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


def steps_fresh_model_once(ctx: FileContext, step: ast.AST) -> bool:
    """``step`` runs once per call of its function (no loop around it there) and steps an optimizer
    built in that function (outside any loop) over models built fresh there (through moves and
    wrappers: ``FSDP(nn.Linear(4, 4).cuda())``): each call starts from parameters with no
    gradient, so the single step cannot apply stale ones however often, or from wherever, the
    function is called."""
    function = ctx.enclosing_function(step)
    if not isinstance(step, ast.Call) or function is None or ctx.enclosing_loops(step):
        return False
    origins = dataflow(ctx).origins(stepped_optimizer(ctx, step))
    return bool(origins) and all(
        isinstance(o, ast.Call) and _once_in(ctx, o, function) and _over_fresh_models(ctx, o, function) for o in origins
    )


def stepped_optimizer(ctx: FileContext, step: ast.Call) -> ast.AST:
    """The optimizer ``opt.step()`` or ``scaler.step(opt)`` steps."""
    receiver = step.func.value if isinstance(step.func, ast.Attribute) else step.func
    if step.args and object_roles(ctx).role_of(receiver) == Role.SCALER:
        return step.args[0]
    return receiver


def _once_in(ctx: FileContext, node: ast.AST, function: ast.AST) -> bool:
    return ctx.enclosing_function(node) is function and not ctx.enclosing_loops(node)


def _over_fresh_models(ctx: FileContext, optimizer: ast.Call, function: ast.AST) -> bool:
    """Every model handed to the optimizer's construction (``SGD(net.parameters())``,
    ``build_optimizer(cfg, model)``) is built fresh in ``function``, and there is one."""
    found: list[ast.AST] = []
    return all(_fresh_in(ctx, arg, function, found, 0) for arg in _handed(optimizer)) and bool(found)


def _fresh_in(ctx: FileContext, expr: ast.AST, function: ast.AST, found: list, depth: int) -> bool:
    """Add to ``found`` the fresh models of ``function`` whose parameters ``expr`` hands on; False
    when it hands on a model (or its parameters) from anywhere else. A value that is no model
    (a configuration, a learning rate) is no source."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(expr, (ast.List, ast.Tuple)):
        return all(_fresh_in(ctx, e, function, found, depth + 1) for e in expr.elts)
    if isinstance(expr, ast.Dict):
        return all(_fresh_in(ctx, v, function, found, depth + 1) for v in expr.values)
    if isinstance(expr, ast.Call):
        func = expr.func
        if isinstance(func, ast.Attribute) and func.attr in torch_names.DEVICE_DTYPE_MOVES:
            return _fresh_in(ctx, func.value, function, found, depth + 1)
        if isinstance(func, ast.Attribute) and func.attr in _PARAMETER_VIEWS:
            before = len(found)  # parameters come from a model: it must be one of the fresh ones
            return _fresh_in(ctx, func.value, function, found, depth + 1) and len(found) > before
        wrapped = preserved_argument(ctx, expr)
        if wrapped is not None:
            return _fresh_in(ctx, wrapped, function, found, depth + 1)
        if constructor_role(ctx, expr) == Role.MODEL:
            # A container of layers built on the spot (`Sequential(Linear(...), ReLU())`) is fresh too.
            inner: list[ast.AST] = []
            if not (_once_in(ctx, expr, function) and constructs_module(ctx, expr)):
                return False
            if not all(_fresh_part(ctx, part, function, inner, depth + 1) for part in _handed(expr)):
                return False
            found.append(expr)
            return True
        if _built_from_fresh_models(ctx, expr, function, found, depth):
            return True
        return object_roles(ctx).role_of(expr, hint=False) != Role.MODEL
    if isinstance(expr, ast.Name):
        origins = dataflow(ctx).origins(expr)
        if None in origins:
            return object_roles(ctx).role_of(expr) != Role.MODEL
        return all(_fresh_in(ctx, o, function, found, depth + 1) for o in origins)
    return object_roles(ctx).role_of(expr) != Role.MODEL


def _built_from_fresh_models(ctx: FileContext, call: ast.Call, function: ast.AST, found: list, depth: int) -> bool:
    """What a call makes from fresh models of ``function`` and values not shown to be models (the
    same test as the optimizer's own arguments: ``get_peft_model(SimpleNet(), config)``,
    ``attach_head(Backbone(), n_classes=10)``): whatever parameters it holds are theirs, or new ones
    the call makes, so they start with no gradient too."""
    inner: list[ast.AST] = []
    if not _once_in(ctx, call, function) or not all(
        _fresh_in(ctx, part, function, inner, depth + 1) for part in _handed(call)
    ):
        return False
    found.extend(inner)
    return bool(inner)


def _fresh_part(ctx: FileContext, expr: ast.AST, function: ast.AST, found: list, depth: int) -> bool:
    """An argument of a fresh model's construction: a module built fresh too, or a value that is
    shown to be no model (a literal, something the data flow shows to be of another kind). A value
    of unknown origin (``Classifier(encoder)`` with ``encoder`` from the caller) may be a model
    that outlives the call, with gradients of its own."""
    if isinstance(expr, ast.Constant):
        return True
    if isinstance(expr, ast.Name) and None in dataflow(ctx).origins(expr):
        role = object_roles(ctx).role_of(expr, hint=False)
        return role is not None and role != Role.MODEL
    return _fresh_in(ctx, expr, function, found, depth)


def builds_fresh_run(ctx: FileContext, loop: ast.AST, optimizers: list[ast.Call], trains_handed_out: bool) -> bool:
    """One of ``optimizers`` (constructions) is built for ``loop``'s own iteration (in its body, or
    once per call of a function the body calls) over the iteration's own modules: fresh ones, or,
    when ``trains_handed_out`` (the iteration runs a loop of optimizer steps), the model the loop
    hands out."""
    return any(
        _own_model_sources(ctx, optimizer, _Iteration(loop, sites, trains_handed_out)) is not None
        for optimizer in optimizers
        for sites in _call_chains(ctx, optimizer, loop, 0)
    ) or hands_own_model_to_run(ctx, loop, trains_handed_out)


def hands_own_model_to_run(ctx: FileContext, loop: ast.AST, trains_handed_out: bool, min_loops: int = 0) -> bool:
    """``loop``'s iteration (its body, or once per call of a function the body calls) hands a model
    of its own to a function of another file that trains it with an optimizer it builds itself,
    stepped at least ``min_loops`` loops down in that function (``trained_in_own_run``). The
    optimizer is built in that file, out of this file's sight (and the loops around its steps with
    it: the call's effects are events at the call), so both are read from the function's summary;
    the argument is followed here as an optimizer's parameters would be."""
    for call, callee in calls_elsewhere(ctx).items():
        trained = function_summary(callee, "torch.trained-in-own-run", trained_in_own_run, frozenset())
        names = sorted({name for name, loops in trained if loops >= min_loops})
        if not names:
            continue
        for sites in _call_chains(ctx, call, loop, 0):
            iteration = _Iteration(loop, sites, trains_handed_out)
            for name in names:
                given = call_argument(ctx, call, callee.node, name)
                if given is not None and _own_sources(ctx, given, iteration) is not None:
                    return True
    return False


def trained_in_own_run(function: Definition) -> frozenset[tuple[str, int]]:
    """The parameters of ``function`` whose model one call trains with an optimizer of its own, each
    with the fewest loops around a step of that optimizer: the call builds an optimizer (once,
    outside any loop of its body) over that model's parameters alone (``model = model.to(device);
    Adam(filter(f, model.parameters()))``) and steps it (in its body, a helper of its file or a
    closure). A fresh model handed to such a call starts a run of its own: fresh weights, fresh
    optimizer state, and no optimizer of the caller holds its parameters. A function handed the
    optimizer too (``train_one_epoch(model, optimizer, loader)``) builds none: it has no such
    parameter, and a model rebuilt around it is trained by the caller's optimizer, or by none."""
    ctx, node = function.ctx, function.node
    trained: set[tuple[str, int]] = set()
    for call in ctx.calls:
        if not (_once_in(ctx, call, node) and constructor_role(ctx, call) == Role.OPTIMIZER):
            continue
        params = argument(call, 0, "params")
        models: set[str] = set()
        if params is None or not _handed_parameters(ctx, params, node, models, 0) or not models:
            continue
        loops = _step_loops(ctx, node, call)
        if loops is not None:
            trained |= {(model, loops) for model in models}
    return frozenset(trained)


def _handed_parameters(ctx: FileContext, expr: ast.AST, function: ast.AST, found: set[str], depth: int) -> bool:
    """Add to ``found`` the parameters of ``function`` whose models ``expr`` hands on the parameters
    of (``model.parameters()``, through moves, wrappers, parameter groups, ``filter``/``list``);
    False when it hands on anything else (a model built or kept elsewhere, a tensor, an unknown call)."""
    if depth > _MAX_DEPTH:
        return False
    parts = _parameter_parts(expr)
    if parts is not None:
        return all(part is not None and _handed_parameters(ctx, part, function, found, depth + 1) for part in parts)
    if isinstance(expr, ast.Name):
        bindings = dataflow(ctx).reaching(expr)
        own = {id(a) for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)}
        for binding in bindings:
            if binding.kind == "param" and id(binding.stmt) in own:
                found.add(expr.id)
                continue
            assigned = binding.kind in ("assign", "walrus") and binding.value is not None
            if not assigned or not _handed_parameters(ctx, binding.value, function, found, depth + 1):
                return False
        return bool(bindings)
    if not isinstance(expr, ast.Call):
        return False
    func = expr.func
    if isinstance(func, ast.Attribute) and func.attr in torch_names.DEVICE_DTYPE_MOVES | _PARAMETER_VIEWS:
        return _handed_parameters(ctx, func.value, function, found, depth + 1)
    wrapped = preserved_argument(ctx, expr)
    if wrapped is not None:
        return _handed_parameters(ctx, wrapped, function, found, depth + 1)
    if isinstance(func, ast.Name) and func.id in _PARAMETER_BUILTINS and not dataflow(ctx).reaching(func):
        return bool(expr.args) and _handed_parameters(ctx, expr.args[-1], function, found, depth + 1)
    return False


def _step_loops(ctx: FileContext, function: ast.AST, optimizer: ast.Call) -> int | None:
    """How many loops down one call of ``function`` steps the optimizer ``optimizer`` builds (the
    fewest, over its steps: ``opt.step()``, ``scaler.step(opt)``, or a helper handed the optimizer
    that steps it); None when it never does."""
    flow = dataflow(ctx)
    found = [
        len(event.loops)
        for event in event_walker(ctx).function_events(function)
        if event.kind in STEP_KINDS
        and isinstance(event.node, ast.Call)
        and optimizer in flow.origins(_stepped_expression(ctx, event.node, event.target), parameters=True)
    ]
    return min(found) if found else None


def _stepped_expression(ctx: FileContext, step: ast.Call, target: str | None) -> ast.AST:
    """The expression of the optimizer a step event steps: the argument named by its target when the
    event is a call that hands it on (a helper of another file stepping what it is given), else
    the receiver of the step."""
    for arg in (*step.args, *(k.value for k in step.keywords)):
        if target is not None and symbol(arg) == target:
            return arg
    return stepped_optimizer(ctx, step)


def optimizes_new_tensors(ctx: FileContext, loop: ast.AST, optimizers: list[ast.Call]) -> bool:
    """One of ``optimizers`` is built for ``loop``'s own iteration over tensors that iteration
    creates and nothing else: whatever the loop is, the optimizer cannot be built before it."""
    for optimizer in optimizers:
        for sites in _call_chains(ctx, optimizer, loop, 0):
            found = _own_model_sources(ctx, optimizer, _Iteration(loop, sites))
            if found and all(isinstance(f, ast.Call) and creates_leaf_tensor(ctx, f) for f in found):
                return True
    return False


def _call_chains(ctx: FileContext, node: ast.AST, loop: ast.AST, depth: int) -> Iterator[tuple[ast.Call, ...]]:
    """The chains of calls (outermost first) by which ``loop``'s body runs ``node`` once per call:
    ``()`` when ``node`` sits in the body itself; none through a loop of the called function."""
    loops = ctx.enclosing_loops(node)
    if loops:
        # In the body, or in a `for` directly there (over models the iteration built, see `_sources`).
        if loops[0] is loop or (isinstance(loops[0], ast.For) and loops[1:2] == [loop]):
            yield ()
        return
    function = ctx.enclosing_function(node)
    if function is None or depth >= _MAX_CALL_DEPTH:
        return
    for site in call_graph(ctx).callers(function):
        for chain in _call_chains(ctx, site, loop, depth + 1):
            yield (*chain, site)


def trained_state_used_up_in_iteration(ctx: FileContext, loop: ast.AST, trained_until: tuple[int, int]) -> bool:
    """What ``loop``'s iteration trains is the outcome of a run of its own: a model or optimizer
    the iteration binds is read in it after its training (``trained_until``, where the last
    stretch of optimizer steps ends: a result checked or recorded), and read nowhere else (see
    ``_trained_state_stays_in_iteration``). An iteration that trains and never looks at the result
    is a fragment of a longer run whose state was meant to carry over (a shard of an epoch)."""
    names = _trained_names(ctx, loop)
    if not names or not _trained_state_stays_in_iteration(ctx, loop, names):
        return False
    return any(
        isinstance(node, ast.Name)
        and isinstance(node.ctx, ast.Load)
        and node.id in names
        and (node.lineno, node.col_offset) > trained_until
        for node in ast.walk(loop)
    )


def _trained_names(ctx: FileContext, loop: ast.AST) -> set[str] | None:
    """The names ``loop``'s iteration binds to models and optimizers; None when it stores one
    anywhere but in a local name (``self.net = ...``, ``nets[i] = ...`` keep it for later)."""
    roles = object_roles(ctx)
    trained: set[str] = set()
    for node in ast.walk(loop):
        if not isinstance(node, ast.expr) or not isinstance(getattr(node, "ctx", None), ast.Store):
            continue
        # A stored name's role may come from its name (`net`, `opt`); an attribute's must be shown
        # (`_state.allow_model_fp16 = True` holds no model).
        if roles.role_of(node, hint=isinstance(node, ast.Name)) not in (Role.MODEL, Role.OPTIMIZER):
            continue
        if not isinstance(node, ast.Name):
            return None
        trained.add(node.id)
    return trained


def _trained_state_stays_in_iteration(ctx: FileContext, loop: ast.AST, names: set[str]) -> bool:
    """No read of ``names`` (bound in ``loop``'s iteration) sees a binding of another iteration:
    every read in the loop sees only the iteration's own bindings (none left by an earlier
    iteration or made before the loop), and no read after the loop sees one of them."""
    flow = dataflow(ctx)
    scope = ctx.enclosing_scope(loop)
    for node in ast.walk(scope):
        if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in names):
            continue
        if ctx.enclosing_scope(node) is not scope:
            return False  # read by a nested function or class: it may run at any time
        in_loop = [ctx.is_inside(binding.stmt, loop) for binding in flow.reaching(node)]
        if ctx.is_inside(node, loop):
            if not in_loop or not all(in_loop):
                return False  # read before the iteration binds it: what an earlier one left there
        elif any(in_loop):
            return False  # read after the loop
    return True
