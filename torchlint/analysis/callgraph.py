"""Who calls whom inside one file: which local function a call runs, and the reverse.

Rules that judge a function by the place it runs from (an evaluation helper called
after ``model.eval()``, an optimizer built in a function called once per epoch) ask
for the call sites of a function here. The index is built once per file, lazily.
"""

from __future__ import annotations

import ast
import copy
from collections import defaultdict
from typing import TYPE_CHECKING

from torchlint.analysis.dataflow import dataflow

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext


FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


def resolve_local_call(ctx: FileContext, call: ast.Call) -> FunctionNode | None:
    """The function defined in this file that ``call`` runs, when it can be told: a name
    visible from the call, or ``self.method(...)`` in a class of the file or its local bases."""
    func = call.func
    if isinstance(func, ast.Name):
        return resolve_function_name(ctx, func.id, call)
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
        cls = ctx.enclosing(call, ast.ClassDef)
        if cls is not None:
            return find_method(ctx, cls, func.attr)
    return None


def find_method(ctx: FileContext, cls: ast.ClassDef, name: str) -> FunctionNode | None:
    """The method ``name`` of ``cls``, or of its bases defined in this file."""
    while cls is not None:
        for stmt in cls.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == name:
                return stmt
        cls = local_base(ctx, cls)
    return None


def resolve_instance_call(ctx: FileContext, call: ast.Call) -> FunctionNode | None:
    """The ``__call__`` that ``call`` runs when it calls an instance of a class of this file
    (``compute_loss = ComputeLoss(); compute_loss(pred, targets)``); None when any value the
    callee may hold is something else."""
    origins = dataflow(ctx).origins(call.func)
    found = None
    for origin in origins:
        if not (isinstance(origin, ast.Call) and isinstance(origin.func, ast.Name) and origin.func.id in ctx.classes):
            return None
        method = find_method(ctx, ctx.classes[origin.func.id], "__call__")
        if method is None or (found is not None and method is not found):
            return None
        found = method
    return found


def resolve_function_name(ctx: FileContext, name: str, at: ast.AST) -> FunctionNode | None:
    """The function called ``name`` visible from ``at``: nested in an enclosing function, else module level."""
    candidates = ctx.functions.get(name)
    if not candidates:
        return None
    # A def may sit in a block (``for ...: def _backward(loss): ...``): its scope is what matters.
    for scope in ctx.ancestors(at):
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            for cand in candidates:
                if ctx.enclosing_scope(cand) is scope:
                    return cand
    return None


def local_base(ctx: FileContext, cls: ast.ClassDef) -> ast.ClassDef | None:
    """The first base class defined in this file, if any (``None`` past a few levels, so
    that a cycle -- ``class A(B)`` and ``class B(A)`` in odd code -- cannot loop forever)."""
    base_depth = ctx.shared("local_base_depth", dict)
    depth = base_depth.get(cls, 0)
    if depth > 8:
        return None
    for base in cls.bases:
        if isinstance(base, ast.Name) and base.id in ctx.classes:
            found = ctx.classes[base.id]
            base_depth[found] = depth + 1
            return found
    return None


def argument_for(call: ast.Call, func: FunctionNode, name: str) -> ast.AST | None:
    """The argument expression ``call`` passes for parameter ``name`` of ``func`` (by keyword or
    position; ``self``/``cls`` skipped for a method call); None when it passes none or cannot be told."""
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    params = [a.arg for a in func.args.posonlyargs + func.args.args]
    if params and params[0] in ("self", "cls") and isinstance(call.func, ast.Attribute):
        params = params[1:]
    if name in params:
        index = params.index(name)
        if index < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[: index + 1]):
            return call.args[index]
    return None


def parameter_default(func: FunctionNode, name: str) -> ast.AST | None:
    """The default value of parameter ``name`` of ``func``, if it has one."""
    args = func.args
    positional = args.posonlyargs + args.args
    for param, default in zip(positional[len(positional) - len(args.defaults) :], args.defaults):
        if param.arg == name:
            return default
    for param, default in zip(args.kwonlyargs, args.kw_defaults):
        if param.arg == name:
            return default
    return None


def in_caller_terms(expr: ast.AST, call: ast.Call, func: FunctionNode) -> ast.AST | None:
    """``expr``, written inside ``func``, rewritten in the terms of the caller making ``call``: each
    parameter of ``func`` replaced by the argument the call passes (or its default). None when a
    parameter it uses gets no argument that can be told (``*args``), or it reads ``func``'s own locals."""
    params = {a.arg for a in func.args.posonlyargs + func.args.args + func.args.kwonlyargs}
    names = {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}
    local = {
        t.id
        for node in ast.walk(func)
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign))
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        for t in ast.walk(target)
        if isinstance(t, ast.Name)
    }
    if names & (local - params):
        return None
    replacements = {}
    for name in names & params:
        given = argument_for(call, func, name)
        if given is None:
            if passes_unknown_arguments(call):
                return None
            given = parameter_default(func, name)
        if given is None:
            return None
        replacements[name] = given

    class _Substitute(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            return replacements.get(node.id, node)

    return _Substitute().visit(copy.deepcopy(expr))


def passes_unknown_arguments(call: ast.Call) -> bool:
    """``f(*args)`` / ``f(**kwargs)``: any parameter may be given."""
    return any(isinstance(a, ast.Starred) for a in call.args) or any(kw.arg is None for kw in call.keywords)


class CallGraph:
    def __init__(self, ctx: FileContext):
        self.ctx = ctx
        self._callers: dict[ast.AST, list[ast.Call]] = defaultdict(list)
        self._callee: dict[ast.Call, ast.AST] = {}
        functions = ctx.functions
        for call in ctx.calls:
            func = call.func
            # Cheap pre-filter: only names of functions defined in this file can resolve.
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if name is None or name not in functions:
                continue
            target = resolve_local_call(ctx, call)
            if target is not None:
                self._callers[target].append(call)
                self._callee[call] = target

    def callers(self, func: ast.AST) -> list[ast.Call]:
        """Call sites in this file that run ``func`` (source order)."""
        return self._callers.get(func, [])

    def callee(self, call: ast.Call) -> ast.AST | None:
        return self._callee.get(call)


def call_graph(ctx: FileContext) -> CallGraph:
    return ctx.shared("callgraph", lambda: CallGraph(ctx))
