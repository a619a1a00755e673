"""Which function a call runs, in this file or another file of the project, and who calls whom.

One mechanism answers "which function does this call run" for every analysis:
``resolve_call(ctx, call)`` -> ``Definition`` (``analysis.definitions``) or None.

* a name visible from the call: a ``def`` of this file (nested in an enclosing function, else at
  the top level, where a block does not hide it), else an imported function of the project
  (``from .fp16_util import zero_grad``; ``analysis.project``);
* ``self.method(...)`` in a class: the method of the class or of its bases, in this file or,
  through imports, another (``class Trainer(BaseTrainer)`` with ``BaseTrainer`` in base.py);
  ``super().method(...)``: the same, from the bases;
* ``self.<name>.method(...)`` (same file only, ``resolve_local_call``): the method of the class of
  this file that every assignment to ``self.<name>`` in the class family instantiates
  (``self.tester = ModelTester(self)`` in ``setUp``; ``held_instance_class``);
* an attribute chain on an imported module or class: ``u.f(...)``, ``pkg.util.f(...)``,
  ``Helper.build(...)``.

``resolve_name(ctx, expr)`` is the same lookup for any name or attribute chain, functions and
classes alike: which class ``Generator()`` builds, wherever ``Generator`` is defined.
``resolve_callee``/``resolve_class`` give the same answers as (parsed file, node) pairs, for the
models that ask a function or class questions in its own file.

Calls on other objects (``model.forward``) need to know what the object is: that is the
business of the analyses above, which use ``find_method(definition, name)`` and
``class_bases(definition)`` once they know the class. Without a project (``ctx.project`` is
None: a string, standard input) only this file is searched; ``resolve_local_call`` is that
same-file answer as a node, for the analyses that walk the callee's body with this file's context.

``calls_elsewhere(ctx)``: the calls of this file that run a function of another file, once per file.

``call_graph(ctx)``: the call sites in this file of each function of this file, lazily built once;
``parameter_arguments(ctx, function, param)`` is what those call sites pass for one parameter
(``train(model, nn.CrossEntropyLoss())`` for ``def train(model, criterion)``; ``Trainer(net, opt)``
for ``Trainer.__init__``).
"""

from __future__ import annotations

import ast
import copy
from collections import defaultdict
from functools import cached_property
from typing import TYPE_CHECKING

from torchlint.analysis.definitions import FUNCTION_NODES, Definition, class_member, definition_at, module_names
from torchlint.analysis.imports import dotted_name
from torchlint.analysis.nodes import argument, last_name
from torchlint.analysis.unpacking import call_argument, call_keywords, passes_unknown

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext


FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
# Base classes followed from a class to find a method (a cycle -- ``class A(B)`` and
# ``class B(A)`` in odd code -- cannot loop forever).
MAX_BASE_DEPTH = 8


def resolve_call(ctx: FileContext, call: ast.Call) -> Definition | None:
    """The function ``call`` runs, when it can be told (see the module docstring)."""
    func = call.func
    if isinstance(func, ast.Name):
        local = resolve_function_name(ctx, func.id, call)
        if local is not None:
            return Definition(ctx, local)
    elif _is_self_method(func) or _is_super_method(func):
        cls = ctx.enclosing(call, ast.ClassDef)
        if cls is None:
            return None
        if _is_self_method(func):
            return find_method(Definition(ctx, cls), func.attr)
        bases = (b for b in class_bases(Definition(ctx, cls)) if isinstance(b, Definition))
        return next((m for m in (find_method(b, func.attr) for b in bases) if m is not None), None)
    target = resolve_name(ctx, func)
    return target if target is not None and target.is_function else None


def resolve_name(ctx: FileContext, expr: ast.AST) -> Definition | None:
    """The function or class a name or attribute chain of ``ctx``'s file refers to through its top
    level: a ``def``/``class`` of the file (``Net``, ``Net.forward``) or, with a project, one that
    its imports reach in another file. None for local variables and anything outside the project."""
    if ctx.project is not None:
        target = ctx.project.lookup(ctx, expr)
        return target if isinstance(target, Definition) else None
    attributes = []
    while isinstance(expr, ast.Attribute):
        attributes.append(expr.attr)
        expr = expr.value
    return definition_at(ctx, [expr.id, *reversed(attributes)]) if isinstance(expr, ast.Name) else None


def resolve_local_call(ctx: FileContext, call: ast.Call) -> FunctionNode | None:
    """``resolve_call`` restricted to this file, as the ``def`` node: a name visible from the call,
    or ``self.method(...)`` in a class of the file or its bases in the file."""
    func = call.func
    if isinstance(func, ast.Name):
        return resolve_function_name(ctx, func.id, call)
    if _is_self_method(func):
        cls = ctx.enclosing(call, ast.ClassDef)
        if cls is not None:
            found = find_method(Definition(ctx, cls), func.attr, local=True)
            return found.node if found is not None else None  # type: ignore[return-value]
    elif isinstance(func, ast.Attribute) and _is_self_method(func.value):
        held = held_instance_class(ctx, func.value)  # type: ignore[arg-type]
        if held is not None:
            found = find_method(Definition(ctx, held), func.attr, local=True)
            return found.node if found is not None else None  # type: ignore[return-value]
    return None


def held_instance_class(ctx: FileContext, attribute: ast.Attribute) -> ast.ClassDef | None:
    """The class of this file whose instance ``self.<name>`` holds: every assignment to
    ``self.<name>`` in the class around it, its bases and its subclasses of this file builds an
    instance of that one class (``self.tester = ModelTester(self)`` in ``setUp``); None when one
    assigns anything else, or none does."""
    cls = ctx.enclosing(attribute, ast.ClassDef)
    if cls is None:
        return None
    held = ctx.shared(("held-instances", cls), lambda: _held_instances(ctx, cls))
    return held.get(attribute.attr)


def _held_instances(ctx: FileContext, cls: ast.ClassDef) -> dict[str, ast.ClassDef | None]:
    family = {cls}
    base = local_base(ctx, cls)
    while base is not None and base not in family and len(family) < MAX_BASE_DEPTH:
        family.add(base)
        base = local_base(ctx, base)
    for other in ctx.nodes(ast.ClassDef):
        base, seen = local_base(ctx, other), {other}
        while base is not None and base not in seen:
            if base is cls:
                family.add(other)
                break
            seen.add(base)
            base = local_base(ctx, base)
    held: dict[str, ast.ClassDef | None] = {}
    assigned = ctx.shared("self-assignments-by-class", lambda: _self_assignments_by_class(ctx))
    for member in family:
        for name, built in assigned.get(member, ()):
            held[name] = built if held.get(name, built) is built else None
    return held


def _self_assignments_by_class(ctx: FileContext) -> dict[ast.ClassDef, list[tuple[str, ast.ClassDef | None]]]:
    """Class -> (name, class of this file built) of every ``self.<name> = ...`` anywhere inside it
    (nested classes and functions included): one pass over the file's assignments, instead of a
    walk of each class's whole family per class asked about."""
    index: dict[ast.ClassDef, list[tuple[str, ast.ClassDef | None]]] = {}
    for node in ctx.nodes(ast.Assign, ast.AnnAssign, ast.AugAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = [t.attr for t in targets if isinstance(t, ast.Attribute) and _is_self_method(t)]
        if not names:
            continue
        built = _instantiated_class(ctx, node.value)
        for ancestor in ctx.ancestors(node):
            if isinstance(ancestor, ast.ClassDef):
                index.setdefault(ancestor, []).extend((name, built) for name in names)
    return index


def _instantiated_class(ctx: FileContext, value: ast.AST | None) -> ast.ClassDef | None:
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        return ctx.classes.get(value.func.id)
    return None


def receiver_class(ctx: FileContext, expr: ast.AST) -> ast.ClassDef | None:
    """The class whose method ``expr`` is the receiver of (``self`` in a method), else None."""
    if not isinstance(expr, ast.Name):
        return None
    function = ctx.enclosing_function(expr)
    if function is None or not function.args.args or function.args.args[0].arg != expr.id:
        return None
    if any(dotted_name(d) in ("staticmethod", "classmethod") for d in function.decorator_list):
        return None  # its first parameter is no instance of the class
    parent = ctx.parent(function)
    return parent if isinstance(parent, ast.ClassDef) else None


# Decorators that turn a method into an attribute: ``self.<name>`` reads a value, not the method.
_ATTRIBUTE_DECORATORS = frozenset({"property", "cached_property"})


def receiver_method(ctx: FileContext, expr: ast.AST) -> Definition | None:
    """The method ``self.<name>`` names, when the receiver's class (or one of its bases in the
    project) defines a method ``<name>`` that is no property: ``self.restore_model`` in a class
    with ``def restore_model(self, ...)``. None for an attribute the class stores or reads as a
    property."""
    if not isinstance(expr, ast.Attribute):
        return None
    cls = receiver_class(ctx, expr.value)
    if cls is None:
        return None
    method = find_method(Definition(ctx, cls), expr.attr)
    if method is None or any(last_name(d) in _ATTRIBUTE_DECORATORS for d in method.node.decorator_list):
        return None
    return method


def _is_self_method(func: ast.expr) -> bool:
    return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"


def _is_super_method(func: ast.expr) -> bool:
    value = func.value if isinstance(func, ast.Attribute) else None
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super"


def resolve_function_name(ctx: FileContext, name: str, at: ast.AST) -> FunctionNode | None:
    """The function called ``name`` visible from ``at``: nested in an enclosing function, else module level."""
    candidates = ctx.functions.get(name)
    if not candidates:
        return None
    # A def may sit in a block (``for ...: def _backward(loss): ...``): its scope is what matters.
    for scope in ctx.ancestors(at):
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            defined = [cand for cand in candidates if ctx.enclosing_scope(cand) is scope]
            if defined:
                return _bound_at(ctx, defined, scope, at)
    return None


def _bound_at(ctx: FileContext, defined: list, scope: ast.AST, at: ast.AST) -> FunctionNode:
    """Which of the ``def``s of one name in ``scope`` a call runs: each ``def`` rebinds the name, so
    a call in the scope's own code runs the last one above it (a notebook that redefines
    ``validate()`` between experiments); a call from a function nested in the scope runs once the
    scope's code has run: the last one."""
    if len(defined) == 1:
        return defined[0]
    ordered = sorted(defined, key=lambda d: d.lineno)
    if ctx.enclosing_scope(at) is scope:
        above = [d for d in ordered if d.lineno < at.lineno]
        return above[-1] if above else ordered[0]
    return ordered[-1]


def local_base(ctx: FileContext, cls: ast.ClassDef) -> ast.ClassDef | None:
    """The first base class of ``cls`` defined in this file (``class_bases``, same file). A caller
    that climbs the bases with it keeps its own guard against ``class A(B)``/``class B(A)``."""
    return next((b.node for b in class_bases(Definition(ctx, cls), local=True) if isinstance(b, Definition)), None)  # type: ignore[return-value]


def class_bases(cls: Definition, local: bool = False) -> list[Definition | str | None]:
    """Each base class of ``cls``, in order: a ``Definition`` when this project defines it (in the
    class's file, or through its imports unless ``local``), else its imported qualified name
    (``torch.nn.Module``), else None (unknown: a call, a subscript, a local variable)."""
    ctx = cls.ctx
    found: list[Definition | str | None] = []
    for base in cls.node.bases:  # type: ignore[union-attr]
        if isinstance(base, ast.Name) and base.id in ctx.classes:
            found.append(Definition(ctx, ctx.classes[base.id]))
            continue
        if not local and ctx.project is not None:
            target = ctx.project.lookup(ctx, base)
            if isinstance(target, Definition) and target.is_class:
                found.append(target)
                continue
        found.append(ctx.qualname(base))
    return found


def find_method(cls: Definition, name: str, local: bool = False) -> Definition | None:
    """The method ``name`` of class ``cls`` or of its bases (depth first, left to right), in the
    project's files or only in ``cls``'s file with ``local``."""
    seen: set = set()
    pending = [(cls, 0)]
    while pending:
        current, depth = pending.pop()
        if current.key in seen:
            continue
        seen.add(current.key)
        member = class_member(current.node, name)  # type: ignore[arg-type]
        if member is not None and isinstance(member, FUNCTION_NODES):
            return current.member(member)
        if depth < MAX_BASE_DEPTH:
            bases = [b for b in class_bases(current, local) if isinstance(b, Definition)]
            pending.extend((base, depth + 1) for base in reversed(bases))
    return None


def is_abstract(func: FunctionNode) -> bool:
    """A function declared here and implemented elsewhere (a subclass, another file): decorated
    ``@abstractmethod``, or whose body is only a docstring, ``pass``, ``...`` or ``raise
    NotImplementedError``."""
    if any(last_name(d) == "abstractmethod" for d in func.decorator_list):
        return True
    body = [
        stmt
        for stmt in func.body
        if not (
            isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)
        )
    ]
    if len(body) != 1:
        return False
    stmt = body[0]
    if _inert(stmt):
        return True
    if isinstance(stmt, ast.Raise) and stmt.exc is not None:
        exc = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
        return last_name(exc) == "NotImplementedError"
    return False


def does_nothing(func: FunctionNode) -> bool:
    """A function whose body has no effect: only docstrings, ``pass``, ``...``, constant
    expressions (``None``) and ``return`` of nothing or of a constant."""
    return all(
        _inert(stmt) or (isinstance(stmt, ast.Return) and (stmt.value is None or isinstance(stmt.value, ast.Constant)))
        for stmt in func.body
    )


def _inert(stmt: ast.stmt) -> bool:
    """``pass`` or a bare constant (a docstring, ``...``, ``None``)."""
    return isinstance(stmt, ast.Pass) or (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant))


def parameter_default(func: FunctionNode, name: str) -> ast.AST | None:
    """The default value of parameter ``name`` of ``func``, if it has one."""
    return next((default for param, default in parameter_defaults(func.args) if param.arg == name), None)


def parameter_defaults(args: ast.arguments) -> list[tuple[ast.arg, ast.AST | None]]:
    """Each parameter with a default paired with it, positional ones first (a keyword-only one
    without a default pairs with None)."""
    positional = args.posonlyargs + args.args
    return [
        *zip(positional[len(positional) - len(args.defaults) :], args.defaults),
        *zip(args.kwonlyargs, args.kw_defaults),
    ]


def _assigned_names(func: FunctionNode) -> frozenset[str]:
    """Every plain name an assignment in ``func`` binds (nested scopes included, as a caution).
    Kept on the node: a helper's callers all ask, and the walk is the cost of the question."""
    found = func.__dict__.get("_torchlint_assigned_names")
    if found is None:
        found = func._torchlint_assigned_names = frozenset(
            t.id
            for node in ast.walk(func)
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign))
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
            for t in ast.walk(target)
            if isinstance(t, ast.Name)
        )
    return found


def in_caller_terms(ctx: FileContext, expr: ast.AST, call: ast.Call, func: FunctionNode) -> ast.AST | None:
    """``expr``, written inside ``func``, rewritten in the terms of the caller making ``call``: each
    parameter of ``func`` replaced by the argument the call passes (or its default). None when a
    parameter it uses gets no argument that can be told (``*args``), or it reads ``func``'s own locals."""
    params = {a.arg for a in func.args.posonlyargs + func.args.args + func.args.kwonlyargs}
    names = {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}
    if names & (_assigned_names(func) - params):
        return None
    replacements = {}
    for name in names & params:
        given = call_argument(ctx, call, func, name)
        if given is None:
            if passes_unknown(ctx, call):
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
            for override in self._subclass_methods(call):
                if override is not target:
                    self._callers[override].append(call)

    def _subclass_methods(self, call: ast.Call) -> list[FunctionNode]:
        """``self.m(...)`` in a method of class B also runs the ``m`` of B's subclasses of this file
        (an instance of the subclass inherits the calling method: ``run_all_evals`` of a base
        evaluator calling ``self.evaluate_mt``, defined by a subclass only)."""
        func = call.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"):
            return []
        cls = self.ctx.enclosing(call, ast.ClassDef)
        if cls is None:
            return []
        found = []
        for sub in self._subclasses.get(cls, ()):
            for stmt in sub.body:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == func.attr:
                    found.append(stmt)
        return found

    @cached_property
    def _subclasses(self) -> dict[ast.ClassDef, list[ast.ClassDef]]:
        """Every class of the file with the classes of the file that derive from it (at any depth)."""
        found: dict[ast.ClassDef, list[ast.ClassDef]] = defaultdict(list)
        for cls in self.ctx.nodes(ast.ClassDef):
            base = local_base(self.ctx, cls)
            seen = {cls}
            while base is not None and base not in seen:
                seen.add(base)
                found[base].append(cls)
                base = local_base(self.ctx, base)
        return found

    def callers(self, func: ast.AST) -> list[ast.Call]:
        """Call sites in this file that run ``func`` (source order)."""
        return self._callers.get(func, [])

    def dead_callers(self, func: ast.AST) -> list[ast.Call]:
        """Call sites of ``func`` in this file's code that never runs (``FileContext.dead_calls``: an
        ``evaluate()`` written after a debugging ``exit()``), which ``callers`` leaves out."""
        name = getattr(func, "name", None)
        return [
            call
            for call in self.ctx.dead_calls
            if last_name(call.func) == name and resolve_local_call(self.ctx, call) is func
        ]

    def called_only_where_dead(self, func: ast.AST) -> bool:
        """``func`` has call sites in this file, all in code that never runs: the file never runs it."""
        return not self._callers.get(func) and bool(self.dead_callers(func))

    def subclasses(self, cls: ast.ClassDef) -> list[ast.ClassDef]:
        """The classes of this file deriving from ``cls`` (at any depth)."""
        return self._subclasses.get(cls, [])

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
    method = isinstance(ctx.parent(function), ast.ClassDef)
    graph = call_graph(ctx)
    # (call, how many leading parameters the call binds itself: `self` of `obj.method(...)`)
    sites = [(site, 1 if method and isinstance(site.func, ast.Attribute) else 0) for site in graph.callers(function)]
    if method and function.name == "__init__":
        sites.extend((site, 1) for site in graph.instantiations(ctx.parent(function)))
    default = parameter_default(function, param.arg)
    if not sites:
        return [default] if default is not None else []
    return [
        site_argument(ctx, function, param, site, bound)
        for site, bound in sorted(sites, key=lambda item: (item[0].lineno, item[0].col_offset))
    ]


def site_argument(
    ctx: FileContext, function: ast.AST, param: ast.arg, site: ast.Call, bound: int = 0
) -> ast.AST | None:
    """What the call ``site`` (of the file ``ctx``) of ``function`` passes for ``param``, also through
    a ``**`` shown to supply it (``call_keywords``); its default when the call leaves it out; None
    when nothing is passed, the position is hidden in ``*args`` or a ``**`` not shown may give it.
    ``bound`` leading parameters are bound by the call itself (``self`` of ``obj.method(...)``).
    The site may be in another file than ``function``."""
    positional = function.args.posonlyargs + function.args.args
    index = positional.index(param) - bound if param in positional else len(site.args)
    value = argument(site, index, param.arg) if index >= 0 else None
    if value is not None:
        return value
    unpacked = call_keywords(ctx, site)
    if param.arg in unpacked.given or unpacked.open:
        return unpacked.given.get(param.arg)
    return parameter_default(function, param.arg)


def calls_elsewhere(ctx: FileContext) -> dict[ast.Call, Definition]:
    """The calls of ``ctx``'s file that run a function of another file of the project, with that
    function (``resolve_call``), found once per file."""
    return ctx.shared("calls-elsewhere", lambda: _calls_elsewhere(ctx))


def _calls_elsewhere(ctx: FileContext) -> dict[ast.Call, Definition]:
    if ctx.project is None:
        return {}
    found = {}
    for call in ctx.calls:
        if _may_run_elsewhere(ctx, call.func):
            target = resolve_call(ctx, call)
            if target is not None and target.ctx is not ctx:
                found[call] = target
    return found


def _may_run_elsewhere(ctx: FileContext, func: ast.expr) -> bool:
    """A cheap filter before resolution: only a call through a name the file imports from the
    project (told from folder listings), a top-level alias, or a ``self``/``super()`` method can run
    a function of another file."""
    if _is_self_method(func) or _is_super_method(func):
        return True
    while isinstance(func, ast.Attribute):
        func = func.value
    if not isinstance(func, ast.Name):
        return False
    binding = ctx.imports.bindings.get(func.id)
    if binding is not None:
        return ctx.project.resolve_import(ctx, binding.level, binding.module) is not None
    return func.id in module_names(ctx).aliases


def resolve_callee(ctx: FileContext, call: ast.Call) -> tuple[FileContext, FunctionNode] | None:
    """The function ``call`` runs, with the parsed file that defines it: a function of this file
    as ``resolve_local_call`` finds it, else one of another file of the project (``resolve_call``)."""
    node = resolve_local_call(ctx, call)
    if node is not None:
        return ctx, node
    found = resolve_call(ctx, call)
    return (found.ctx, found.node) if found is not None else None  # type: ignore[return-value]


def resolve_class(ctx: FileContext, expr: ast.AST) -> tuple[FileContext, ast.ClassDef] | None:
    """The class a name or attribute chain stands for (``Net`` of ``Net(...)``, ``models.Net``), with
    the parsed file that defines it: a class of this file not shadowed by an import (nested ones
    included), else one its imports reach (``resolve_name``)."""
    if isinstance(expr, ast.Name) and expr.id in ctx.classes and ctx.qualname(expr) is None:
        return ctx, ctx.classes[expr.id]
    if not isinstance(expr, (ast.Name, ast.Attribute)):
        return None
    found = resolve_name(ctx, expr)
    return (found.ctx, found.node) if found is not None and found.is_class else None  # type: ignore[return-value]


def runs_repeatedly(ctx: FileContext, node: ast.AST, depth: int = 0, max_depth: int = 2) -> bool | None:
    """Whether ``node`` can run more than once per run of the program: it sits in a loop (``for``,
    ``while``, a comprehension's body aside), or in a function one of whose local callers does
    (followed ``max_depth`` calls up), or in a function called from more than one place. False when it
    is shown to run once (module level, or a function called from one place that runs once); None when that cannot be told (a function nothing in the
    file calls, or one called past the depth followed)."""
    if ctx.enclosing_loops(node):
        return True
    function = ctx.enclosing_function(node)
    if function is None:
        return False
    callers = call_graph(ctx).callers(function)
    if not callers or depth >= max_depth:
        return None
    if len(callers) > 1:
        return True  # called from two places: it runs twice
    return runs_repeatedly(ctx, callers[0], depth + 1, max_depth)
