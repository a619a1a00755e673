"""Whether an instance of a module class of this file may run in eval mode.

What a module does in eval mode only matters for a class some instance of which reaches eval mode:
a GAN script's discriminator, trained every step and never evaluated, runs in training mode
wherever it runs, while its generator is switched to eval mode to draw samples. The answer is
"never" only when the file shows every instance: the file trains (it has a training loop), each
instance is built in this file under a plain name (``D = Discriminator().cuda()``), that name is
only called, asked for attributes, or handed to functions of this file, and nothing switches a
value that may hold it to eval mode (``.eval()``, ``.train(<not True>)``), evaluates it (an
evaluation loop, even one that forgets ``eval()``), runs it under no-grad or loads weights into it. Anything else -- an instance built in a container or in another module,
a class no code of the file builds (it is built elsewhere), a subclass -- may run in eval mode.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import call_graph, resolve_local_call
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.nodes import argument
from torchlint.torchmodel.evaluation import evaluation_analysis
from torchlint.torchmodel.forward_calls import model_expression
from torchlint.torchmodel.gradmode import lexical_grad_disabler
from torchlint.torchmodel.iterations import iterations
from torchlint.torchmodel.provenance import through_model_keeping

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

# Methods after which a module is used for inference: weights loaded into it.
_LOADING_METHODS = frozenset({"load_state_dict"})


def may_run_in_eval_mode(ctx: FileContext, cls: ast.ClassDef) -> bool:
    """Some instance of ``cls`` may be in eval mode (or be evaluated) when it runs."""
    return ctx.shared(("may-run-in-eval-mode", cls), lambda: not _only_trained(ctx, cls))


def instances_shown(ctx: FileContext, cls: ast.ClassDef) -> bool:
    """The file shows every instance of ``cls``: it is a training script (it has a training loop)
    that builds the class itself, with no subclass. A file that only defines a class, or a class
    no code of the file builds, leaves its instances to other files, built with other arguments."""
    graph = call_graph(ctx)
    return bool(iterations(ctx).training_loops and graph.instantiations(cls) and not graph.subclasses(cls))


def _only_trained(ctx: FileContext, cls: ast.ClassDef) -> bool:
    if not instances_shown(ctx, cls):
        return False
    builds = call_graph(ctx).instantiations(cls)
    names = [_bound_name(ctx, build) for build in builds]
    if any(name is None for name in names):
        return False
    instances = set(builds)
    return (
        all(_plain_use(ctx, use) for use in _uses(ctx, set(names)))
        and not any(_switches_to_eval(ctx, call, instances) for call in ctx.calls)
        and not any(_may_hold(ctx, model_expression(call), instances) for call in _evaluating_calls(ctx))
    )


def _evaluating_calls(ctx: FileContext) -> list[ast.Call]:
    """The model calls of the file's evaluation code (TL005/TL006's units: a test loop run with
    autograd on and no ``eval()`` evaluates too)."""
    analysis = evaluation_analysis(ctx)
    return [call for unit in analysis.units for call in analysis.finder.calls_of(unit)]


def _may_hold(ctx: FileContext, expr: ast.AST, instances: set[ast.Call]) -> bool:
    origins = dataflow(ctx).origins(expr, through_model_keeping, parameters=True)
    return any(origin is None or origin in instances for origin in origins)


def _bound_name(ctx: FileContext, build: ast.Call) -> str | None:
    """The plain name a construction is assigned to, through moves (``Net().cuda()``); else None."""
    node: ast.AST = build
    parent = ctx.parent(node)
    while isinstance(parent, ast.Attribute) and isinstance(ctx.parent(parent), ast.Call):
        call = ctx.parent(parent)
        if through_model_keeping(call) is not node:
            return None
        node, parent = call, ctx.parent(call)
    if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name):
        return parent.targets[0].id
    return None


def _uses(ctx: FileContext, names: set[str]) -> list[ast.Name]:
    return [n for n in ctx.nodes(ast.Name) if n.id in names and isinstance(n.ctx, ast.Load)]


def _plain_use(ctx: FileContext, use: ast.Name) -> bool:
    """Called (outside no-grad), asked for an attribute other than a weight load, or handed to a
    function of this file (whose parameters data flow follows); a name put in a container, stored,
    returned or handed elsewhere escapes."""
    parent = ctx.parent(use)
    if isinstance(parent, ast.Call) and parent.func is use:
        return lexical_grad_disabler(ctx, parent) is None
    if isinstance(parent, ast.Attribute):
        return parent.attr not in _LOADING_METHODS
    if isinstance(parent, ast.Call) and use in parent.args:
        return resolve_local_call(ctx, parent) is not None
    return False


def _switches_to_eval(ctx: FileContext, call: ast.Call, instances: set[ast.Call]) -> bool:
    """``x.eval()`` or ``x.train(<not literally True>)`` where ``x`` may hold one of ``instances``
    (or a value that cannot be told)."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in ("eval", "train"):
        return False
    if func.attr == "train":
        mode = argument(call, 0, "mode")
        if mode is None or (isinstance(mode, ast.Constant) and mode.value is True):
            return False
    return _may_hold(ctx, func.value, instances)
