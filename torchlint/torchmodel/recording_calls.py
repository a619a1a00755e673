"""Which calls of evaluation code may record an autograd graph, and which surely cannot.

A call of a torch module records a graph when the module holds parameters that require
gradients. Two shapes the plain "model call" test gets wrong either way:

* a module *shown to hold no parameters* -- a metric written as an ``nn.Module`` whose
  ``__init__`` stores only settings with constant defaults (``EdgeAccuracy(threshold=0.5)``,
  whose ``__call__`` compares tensors) -- records nothing of its own;
* a *method of a model that runs its forward* (``self.edge_model.process(images, masks)``
  where ``process`` calls ``self(images, masks)``) records the model's graph like a call of the
  model itself.

Both are told from the class the receiver is built from (``EdgeModel(config).to(device)``), in
this file or another of the project; an object whose class cannot be read is neither.

A third shape is a *helper of the project that records a graph* (``self.score_critic(states)``
whose body runs ``self.critic(...)`` outside any no-grad block and trains nothing): its call
records the model's graph like a call of the model itself, whatever the helper is named. A helper
whose only modules are shown to hold no parameters (``self.distance(offsets, points)`` of a
parameter-free distance module) records a graph only if the tensors it is given require grad:
that is its caller's question, not the helper's.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import find_method, parameter_default, resolve_callee, resolve_class
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.definitions import Definition
from torchlint.analysis.nodes import method_call, walk_function_body
from torchlint.analysis.summaries import function_summary as run_summary
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.calls import call_events
from torchlint.torchmodel.events import STEP_KINDS, EventKind
from torchlint.torchmodel.forward_calls import ForwardCalls, model_expression
from torchlint.torchmodel.gradmode import grad_effect, lexical_grad_switch, runs_without_grad
from torchlint.torchmodel.stateless import stateless_definition

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

# Methods a model inherits from nn.Module that run no forward of their own.
_NOT_FORWARD_METHODS = frozenset({"forward", "parameters", "named_parameters", "state_dict", "load_state_dict"})


def instance_classes(
    ctx: FileContext, expr: ast.AST, parameters: bool = False, every: bool = True
) -> list[Definition] | None:
    """The project classes every value of ``expr`` is built from (``EdgeModel(config).to(device)``
    is an ``EdgeModel``), or None when one value is not shown to be such an instance; with
    ``every=False`` the classes of the values that are shown, whatever the others. With
    ``parameters`` a parameter is followed to what the call sites of its function pass."""
    found = []
    for origin in dataflow(ctx).origins(expr, parameters=parameters):
        while (moved := method_call(origin)) is not None and moved[0] in torch_names.DEVICE_DTYPE_MOVES:
            origin = moved[1]
        cls = resolve_class(ctx, origin.func) if isinstance(origin, ast.Call) else None
        if cls is not None:
            found.append(Definition(*cls))
        elif every:
            return None
    return found or None


def holds_no_parameters(ctx: FileContext, module: ast.AST) -> bool:
    """Every value of ``module`` is an instance of a direct ``nn.Module`` subclass whose ``__init__``
    stores only constants or arguments with constant defaults, and registers nothing, or of a class
    whose layers all are weightless (``stateless.stateless_definition``: a pairwise similarity
    wrapping ``nn.CosineSimilarity``): calling it records only its inputs' graph."""
    classes = instance_classes(ctx, module, parameters=True)
    return classes is not None and all(
        run_summary(cls, "torch.holds-no-parameters", _parameterless_class, False)
        or stateless_definition(cls.ctx, cls.node)
        for cls in classes
    )


def runs_model_method(ctx: FileContext, call: ast.Call) -> bool:
    """``model.process(x)``: a method of the receiver's class that calls the module itself
    (``self(...)``, ``self.forward(...)``), so it records the model's graph like ``model(x)``."""
    found = method_call(call)
    if found is None or found[0] in _NOT_FORWARD_METHODS or found[0].startswith("__"):
        return False
    methods = instance_methods(ctx, found[1], found[0])
    return methods is not None and all(
        run_summary(method, "torch.calls-own-forward", _calls_own_forward, False) for method in methods
    )


def instance_methods(ctx: FileContext, receiver: ast.AST, name: str) -> list[Definition] | None:
    """The method ``name`` of each project class whose instance ``receiver`` holds
    (``instance_classes``); None when one value is not such an instance or its class lacks it."""
    classes = instance_classes(ctx, receiver)
    if classes is None:
        return None
    methods = [find_method(cls, name) for cls in classes]
    return None if any(method is None for method in methods) else methods


def runs_recording_helper(ctx: FileContext, call: ast.Call) -> bool:
    """``self.score_critic(states)``: a call of a function of the project whose own body runs a
    model not shown to hold no parameters with autograd on (not inside a no-grad block of its own, nor under a no-grad decorator)
    and trains nothing (no backward, no optimizer step): the call records that model's graph."""
    callee = resolve_callee(ctx, call)
    if callee is None or runs_without_grad(ctx, call):
        return False
    home, function = callee
    return run_summary(Definition(home, function), "torch.helper-records-graph", _records_graph, False)


_TRAINING_KINDS = STEP_KINDS | {EventKind.BACKWARD}


def _records_graph(helper: Definition) -> bool:
    ctx, function = helper.ctx, helper.node
    forward = ForwardCalls(ctx)
    events = call_events(ctx)
    records = False
    for node in walk_function_body(function):
        if not isinstance(node, ast.Call):
            continue
        event = events.classify(node)
        if event is not None and event.kind in _TRAINING_KINDS:
            return False  # a training step, not an evaluation helper
        if not records and forward.is_model_call(node) and not holds_no_parameters(ctx, model_expression(node)):
            switch = lexical_grad_switch(ctx, node)
            records = switch is None or grad_effect(ctx, switch) is not False
    return records


def _calls_own_forward(method: Definition) -> bool:
    function = method.node
    if not function.args.args:
        return False
    receiver = function.args.args[0].arg
    for node in walk_function_body(function):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id == receiver:
                return True
            if isinstance(func, ast.Attribute) and func.attr == "forward":
                if isinstance(func.value, ast.Name) and func.value.id == receiver:
                    return True
    return False


def _parameterless_class(cls: Definition) -> bool:
    ctx, node = cls.ctx, cls.node
    if not node.bases or any(ctx.qualname(b) != "torch.nn.Module" for b in node.bases):
        return False
    for sub in ast.walk(node):
        if (
            isinstance(sub, ast.Call)
            and isinstance(sub.func, ast.Attribute)
            and sub.func.attr in torch_names.REGISTERING_METHODS
        ):
            return False
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == "setattr":
            return False
    init = find_method(cls, "__init__", local=True)
    if init is None or init.node not in node.body:
        return False
    return all(_stores_a_setting(init.node, stmt) for stmt in init.node.body) and not _assigned_elsewhere(node, init)


def _stores_a_setting(init: ast.AST, stmt: ast.stmt) -> bool:
    """A docstring, ``super().__init__()``, or ``self.x = <constant or argument with a constant default>``."""
    if isinstance(stmt, ast.Expr):
        value = stmt.value
        if isinstance(value, ast.Constant):
            return True
        return (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr == "__init__"
            and not value.args
        )
    if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
        return False
    target = stmt.targets[0]
    if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)):
        return False
    value = stmt.value
    if isinstance(value, ast.Constant):
        return True
    return isinstance(value, ast.Name) and isinstance(parameter_default(init, value.id), ast.Constant)


def _assigned_elsewhere(cls: ast.ClassDef, init: Definition) -> bool:
    """An attribute of ``self`` stored by a method other than ``__init__`` (a layer built lazily)."""
    for method in cls.body:
        if method is init.node or not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in walk_function_body(method):
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) for t in targets):
                    return True
    return False
