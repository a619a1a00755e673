"""What a function does to what its caller hands it: the training events of its body, told in terms
of its parameters, so that a call can be read without walking the callee again (the callee may
live in another file).

``effects_of(ctx, function, events)`` turns the events of one execution of a function's body
(``walk.EventWalker.function_events``) into ``Effect``s: ``opt.step()`` on a parameter ``opt`` is
"steps parameter ``opt``"; ``for p in params: p.grad = None`` is "clears the gradients of
parameter ``params``"; ``loss.backward()`` on a parameter is "runs backward on parameter
``loss``"; ``model.eval()`` is "switches parameter ``model`` to eval mode". An event on anything
else (``self.optimizer.step()``, a model the function builds) keeps its kind with no parameter:
the caller learns that it happens, not to what. Branch conditions inside the callee are not kept:
an effect is something one call may do. Their order is the order in which one call may run them: an
effect on a branch that leaves the turn or the function (``if skip: opt.zero_grad(); continue``)
comes after what the jump passes over (the backward and the step that the skipped batch never
reaches), since the next thing it precedes is whatever runs after that.

``events_at_call(call, function, effects)`` places those effects at a call site: each becomes an
``Event`` written at the call, with the argument the call passes for the parameter as its target
(or, for a backward, as the loss).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import find_method, resolve_class, resolve_local_call
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.definitions import Definition
from torchlint.analysis.imports import symbol
from torchlint.analysis.nodes import argument_for, method_call, value_operands
from torchlint.analysis.reachability import exit_after, jump_skips
from torchlint.analysis.unpacking import call_argument
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.constructors import Role, constructor_role, same_module
from torchlint.torchmodel.events import Event, EventKind

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

# Events that say where control goes, not what happens to the training state.
_CONTROL = frozenset({EventKind.CONTINUE, EventKind.BREAK, EventKind.RETURN, EventKind.PROCESS_EXIT})


@dataclass(frozen=True)
class Effect:
    """One thing a call of the function does: ``kind`` to ``parameter`` (a parameter's name, None when
    the event applies to something the caller does not pass), reached through ``path`` (``.module``
    of ``model.module.zero_grad()``)."""

    kind: EventKind
    parameter: str | None = None
    path: str = ""


def effects_of(ctx: FileContext, function: ast.AST, events: list[Event]) -> tuple[Effect, ...]:
    """The effects of one execution of ``function``'s body, in order (see the module docstring)."""
    params = _parameter_names(function)
    kept = [event for event in events if event.kind not in _CONTROL]
    order = sorted(range(len(kept)), key=lambda index: (_runs_after(ctx, kept, index), index))
    return tuple(_effect(ctx, kept[index], params) for index in order)


def _runs_after(ctx: FileContext, events: list[Event], index: int) -> float:
    """Where the event at ``index`` falls in one call's order: its own place, or just after the last
    later event that the jump ending its branch passes over (``optimizer.zero_grad(); continue``
    on a skipped batch runs after this turn's backward and step would have, never between them)."""
    jump = exit_after(ctx, events[index].site)
    if jump is None:
        return index
    skipped = [later for later in range(index + 1, len(events)) if jump_skips(ctx, jump, events[later].site)]
    return skipped[-1] + 0.5 if skipped else index


def _effect(ctx: FileContext, event: Event, params: frozenset[str]) -> Effect:
    if event.kind is EventKind.BACKWARD:
        # `loss.backward()`, `accelerator.backward(loss)`: the loss matters.
        root = _outer(ctx, _loss_name(ctx, event), event)
        return Effect(event.kind, root if root in params else None)
    if event.kind is EventKind.CLEAR_GRAD:
        root = _outer(ctx, _cleared_name(ctx, event), event)
        return Effect(event.kind, root if root in params else None)
    if event.target is None:
        return Effect(event.kind)
    head, dot, rest = event.target.partition(".")
    root = _outer(ctx, head, event)
    return Effect(event.kind, root, dot + rest) if root in params else Effect(event.kind)


def _outer(ctx: FileContext, name: str | None, event: Event) -> str | None:
    """``name``, read where the event is written, as the name it comes from in the function that was
    walked: through each call followed to reach the event (``zero_grad(model.parameters())`` makes
    ``model_params`` of ``zero_grad`` the ``model`` of the caller). None for a local of a callee."""
    node = event.node
    for call in reversed(event.via):
        if name is None:
            return None
        function = ctx.enclosing_function(node)
        if function is None or resolve_local_call(ctx, call) is not function or name not in _parameter_names(function):
            return None  # a closure run by `optimizer.step(closure)`, or a local of the callee
        if not _still_argument(ctx, name, node):
            return None
        name = _root_name(call_argument(ctx, call, function, name))
        node = call
    function = ctx.enclosing_function(node)
    if name is not None and function is not None and name in _parameter_names(function):
        return name if _still_argument(ctx, name, node) else None
    return name


def _still_argument(ctx: FileContext, parameter: str, node: ast.AST) -> bool:
    """Whether ``parameter`` may still hold the caller's argument where ``node`` is written: an
    effect on a parameter rebound before it (``model = copy.deepcopy(model)``, ``params = []``)
    is an effect on something else. Rebinding to the same object (``model = model.to(device)``,
    ``model = DDP(model)``, ``params = list(params)``: the same parameters) keeps it."""
    return dataflow(ctx).still_parameter(parameter, node, lambda expr: _same_object(ctx, expr))


def _same_object(ctx: FileContext, expr: ast.AST) -> ast.AST | None:
    """The value ``expr`` hands back as the same object for training purposes: the receiver of a
    module method that returns it (``model.to(device)``, ``model.train()``), the model a wrapper
    wraps (``DDP(model)``), the iterable whose elements ``list(...)``/``tuple(...)`` copy."""
    func = expr.func if isinstance(expr, ast.Call) else None
    if isinstance(func, ast.Name) and func.id in _ELEMENT_COPIES and ctx.qualname(func) is None and len(expr.args) == 1:
        return expr.args[0]
    return same_module(ctx, expr)


def model_method(ctx: FileContext, call: ast.Call) -> Definition | None:
    """The method of a project model class that ``obj.method(...)`` runs, when data flow shows
    ``obj`` to be an instance of that one class (its construction, through moves, wrappers and the
    arguments every call site passes: ``discriminator.train_custom()`` in a function handed the
    ``Discriminator(...)`` built by its caller); None otherwise."""
    found = method_call(call)
    if found is None or not isinstance(found[1], (ast.Name, ast.Attribute)) or ctx.call_qualname(call):
        return None
    name, receiver = found
    classes = set()
    for origin in dataflow(ctx).origins(receiver, lambda expr: _same_object(ctx, expr), parameters=True):
        if not isinstance(origin, ast.Call) or constructor_role(ctx, origin) != Role.MODEL:
            return None
        cls = resolve_class(ctx, origin.func)
        if cls is None:
            return None
        classes.add(Definition(*cls))
    if len(classes) != 1:
        return None
    return find_method(classes.pop(), name)


# Builtins that build a new container of the same elements.
_ELEMENT_COPIES = frozenset({"list", "tuple"})


def _cleared_name(ctx: FileContext, event: Event) -> str | None:
    """``for p in params: p.grad = None`` (or ``for p in model.parameters(): p.grad.zero_()``): the
    name the loop around the clear ranges over, where the clear is written."""
    node = event.node
    grad_owner = node.targets[0] if isinstance(node, ast.Assign) else getattr(node.func, "value", None)
    while isinstance(grad_owner, ast.Attribute):
        grad_owner = grad_owner.value
    if not isinstance(grad_owner, ast.Name):
        return None
    for loop in ctx.enclosing_loops(node):
        if isinstance(loop, (ast.For, ast.AsyncFor)) and symbol(loop.target) == grad_owner.id:
            return _root_name(loop.iter)
    return None


def _loss_name(ctx: FileContext, event: Event) -> str | None:
    """The name a backward's loss is read from, where the backward is written: the root of the loss
    expression (``loss`` of ``loss.mean().backward()``), or the one parameter of the function around
    it that the loss is computed from by arithmetic and reductions (``batch_cost = sum(costs) /
    float(len(costs)); batch_cost.backward()``, ``torch.stack(losses).mean().backward()``): what the
    caller hands for that parameter is what the call backpropagates."""
    root = _root_name(event.arg)
    function = ctx.enclosing_function(event.node)
    if function is None or event.arg is None or root in _parameter_names(function):
        return root
    reduced = _reduced_parameters(ctx, event.arg, _parameter_names(function))
    return reduced.pop() if len(reduced) == 1 else root


def _reduced_parameters(ctx: FileContext, loss: ast.AST, params: frozenset[str]) -> set[str]:
    """The parameters ``loss`` is computed from through local names, arithmetic, graph-keeping
    methods and reductions of a collection (``sum(xs)``, ``torch.stack(xs)``); any other call ends
    the walk (``criterion(model(x), y)`` is computed from ``x``, it does not backpropagate it)."""
    flow = dataflow(ctx)
    found: set[str] = set()
    pending, seen = [loss], set()
    while pending and len(seen) < 64:
        expr = pending.pop()
        if id(expr) in seen:
            continue
        seen.add(id(expr))
        if isinstance(expr, ast.Name):
            for binding in flow.reaching(expr):
                if binding.kind == "param" and expr.id in params:
                    found.add(expr.id)
                elif binding.kind in ("assign", "walrus") and binding.value is not None:
                    pending.append(binding.value)
                elif binding.kind == "augassign" and binding.source is not None:
                    pending.append(binding.source)
        elif (operands := value_operands(expr, torch_names.LOSS_CARRYING_METHODS)) is not None:
            pending += operands
        elif isinstance(expr, ast.Call) and expr.args and _reduces_collection(ctx, expr):
            pending.append(expr.args[0])
    return found


def _reduces_collection(ctx: FileContext, call: ast.Call) -> bool:
    """``sum(xs)`` (the builtin, not shadowed), ``torch.stack(xs)``, ``torch.cat(xs)``..."""
    name = ctx.call_qualname(call)
    if name is None and isinstance(call.func, ast.Name) and not dataflow(ctx).reaching(call.func):
        name = call.func.id
    return name in torch_names.COLLECTION_REDUCTIONS


def _root_name(expr: ast.AST | None) -> str | None:
    """The name an expression starts from (``params`` of ``params``, ``model.parameters()``, ``loss.mean()``)."""
    while isinstance(expr, (ast.Attribute, ast.Subscript, ast.Call)):
        expr = expr.func if isinstance(expr, ast.Call) else expr.value
    return expr.id if isinstance(expr, ast.Name) else None


def _parameter_names(function: ast.AST) -> frozenset[str]:
    args = function.args
    return frozenset(a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs])


def events_at_call(call: ast.Call, function: ast.AST, effects: tuple[Effect, ...]) -> list[Event]:
    """The effects of ``function`` as events written at ``call``: a parameter becomes the argument
    the call passes for it (an effect on a parameter the call does not visibly pass applies to an
    unknown target)."""
    found = []
    for effect in effects:
        argument = argument_for(call, function, effect.parameter) if effect.parameter is not None else None
        if effect.kind is EventKind.BACKWARD:
            found.append(Event(effect.kind, call, arg=argument))
            continue
        key = symbol(argument) if argument is not None else None
        found.append(Event(effect.kind, call, target=key + effect.path if key is not None else None))
    return found
