"""Who calls whom inside one file: which local function a call runs, and the reverse.

Rules that judge a function by the place it runs from (an evaluation helper called
after ``model.eval()``, an optimizer built in a function called once per epoch) ask
for the call sites of a function here. The index is built once per file, lazily.
``parameter_arguments(ctx, function, param)`` is what those call sites pass for one parameter
(``train(model, nn.CrossEntropyLoss())`` for ``def train(model, criterion)``; ``Trainer(net, opt)``
for ``Trainer.__init__``).
"""

from __future__ import annotations

import ast
import copy
from collections import defaultdict
from typing import TYPE_CHECKING

from torchlint.analysis.nodes import argument, argument_for, last_name

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
            # Cheap pre-filter: only names of functions defined in this file can resolve.
            if last_name(call.func) not in functions:
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

    def instantiations(self, cls: ast.ClassDef) -> list[ast.Call]:
        """Calls in this file that build an instance of ``cls`` by its name (``Trainer(model, opt)``)."""
        classes = self.ctx.classes
        return [
            call
            for call in self.ctx.calls
            if isinstance(call.func, ast.Name) and call.func.id == cls.name and classes.get(cls.name) is cls
        ]


def call_graph(ctx: FileContext) -> CallGraph:
    return ctx.shared("callgraph", lambda: CallGraph(ctx))


def parameter_arguments(ctx: FileContext, function: ast.AST, param: ast.arg) -> list[ast.AST | None]:
    """What each call site of ``function`` in this file passes for ``param`` (its default when a
    call leaves it out; None when nothing is passed or the position is hidden in ``*args``), in
    source order; with no call site, the default alone, or nothing. A method's instantiations
    count for its ``__init__``."""
    args = function.args
    positional = args.posonlyargs + args.args
    method = isinstance(ctx.parent(function), ast.ClassDef)
    graph = call_graph(ctx)
    # (call, how many leading parameters the call binds itself: `self` of `obj.method(...)`)
    sites = [(site, 1 if method and isinstance(site.func, ast.Attribute) else 0) for site in graph.callers(function)]
    if method and function.name == "__init__":
        sites.extend((site, 1) for site in graph.instantiations(ctx.parent(function)))
    default = parameter_default(function, param.arg)
    if not sites:
        return [default] if default is not None else []
    found = []
    for site, bound in sorted(sites, key=lambda item: (item[0].lineno, item[0].col_offset)):
        index = positional.index(param) - bound if param in positional else len(site.args)
        value = argument(site, index, param.arg) if index >= 0 else None
        found.append(value if value is not None else default)
    return found


def resolve_callee(ctx: FileContext, call: ast.Call) -> tuple[FileContext, FunctionNode] | None:
    """The function ``call`` runs, with the parsed file that defines it. The one place that decides
    where a callee may come from: today a function of this file (``resolve_local_call``); the
    project phase widens it to the project's other files."""
    node = resolve_local_call(ctx, call)
    return (ctx, node) if node is not None else None


def resolve_class(ctx: FileContext, expr: ast.AST) -> tuple[FileContext, ast.ClassDef] | None:
    """The class a name stands for (``Net`` of ``Net(...)``), with the parsed file that defines it:
    today a class of this file not shadowed by an import; the project phase widens it, as for
    ``resolve_callee``."""
    if isinstance(expr, ast.Name) and expr.id in ctx.classes and ctx.qualname(expr) is None:
        return ctx, ctx.classes[expr.id]
    return None
