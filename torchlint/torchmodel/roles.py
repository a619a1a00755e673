"""What an object is in training code (``Role``): a model, an optimizer, a scheduler, a gradient
scaler, a criterion -- told from how the object is built and used, its name only as a last resort.

``object_roles(ctx).role_of(expr_or_symbol)``, in this order:

1. data flow (``value_role``): the constructor that built the value (``constructors``), through the
   assignments that reach the use (``analysis.dataflow``), ``self.attr`` set in any method (an
   attribute set in ``__init__``), wrappers and moves (``DDP(model)``, ``model.cuda()``),
   ``accelerator.prepare``-style unpacking, what a function of the file returns
   (``def build(): return Net()``), and for a parameter the argument every call site of its
   function passes (``train(model, criterion)`` called from ``main()`` with
   ``nn.CrossEntropyLoss()``; ``Trainer(net, opt)`` for ``__init__``'s parameters);
2. ``symbol_role``: what the file assigns to the same symbol anywhere (for attribute chains, and
   names whose value comes from elsewhere in the file);
3. use (``used_as``): an object whose ``.parameters()`` feed an optimizer, or that is switched with
   ``.eval()`` / ``.train(False)``, is a model (``G_AB``, ``E1``, ``Enc1``);
4. the conventional name (``self.optimizer``, ``opt_g``, ``netG``) -- unless the data flow showed
   an object of another kind (``Role.OTHER``: ``ema_optimizer = WeightEMA(...)``).

``optimizer_models``: optimizer symbol -> the models whose ``.parameters()`` built it.
"""

from __future__ import annotations

import ast
import re
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING

from torchlint.analysis.callers import callers_elsewhere
from torchlint.analysis.callgraph import (
    call_graph,
    find_method,
    parameter_arguments,
    parameter_defaults,
    resolve_callee,
    site_argument,
)
from torchlint.analysis.containers import element_origins, is_copying_call
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.definitions import Definition
from torchlint.analysis.imports import symbol
from torchlint.analysis.nodes import (
    argument,
    last_name,
    returns_of,
    target_elements,
    walk_function_body,
    walk_no_scopes,
)
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.constructors import (
    Role,
    constructor_role,
    defines_own_step,
    is_prepare_call,
    prepared_element,
    preserved_argument,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

    from torchlint.analysis.context import FileContext
    from torchlint.analysis.dataflow import Binding

__all__ = ["Role", "ObjectRoles", "object_roles", "role_from_name", "shown_torch_scheduler"]

_NAME_HINTS = (
    (re.compile(r"(^|_)sched(uler)?s?($|_)|lr_scheduler|scheduler", re.I), Role.SCHEDULER),
    (re.compile(r"scaler$", re.I), Role.SCALER),
    (re.compile(r"(^|_)(optim|optimi[sz]er|opt)s?($|_)|optimi[sz]er", re.I), Role.OPTIMIZER),
    # GAN code names its pairs optG/optD, optimD, netG/netD (case matters: `options` is no optimizer).
    (re.compile(r"^opt(im)?[A-Z]"), Role.OPTIMIZER),
    (re.compile(r"(^|_)(model|net|network|module)s?($|_)", re.I), Role.MODEL),
    (re.compile(r"^net[A-Z]"), Role.MODEL),
    (re.compile(r"(criterion|loss_fn|loss_func|lossfn)", re.I), Role.CRITERION),
)
# How far a value is followed (assignments, parameters to call sites, returns) before it is unknown.
MAX_FLOW_DEPTH = 8
# Roles whose objects cannot be indexed: a value taken as ``x[i]`` never came from an object of
# these, so where a helper returns one of them or a list of them (``return [StepLR(...), ...]``
# on one branch, ``return CosineAnnealingLR(...)`` on another), the element comes from the list.
_NOT_INDEXABLE = frozenset({Role.SCHEDULER, Role.OPTIMIZER, Role.SCALER})
# Functions whose parameters are being followed into the other files of the project: a chain of
# calls between files that comes back to one of them tells nothing more.
_ASKED_ELSEWHERE: set[ast.AST] = set()


@lru_cache(maxsize=4096)  # a pure function of the name; the same few names are asked about often
def role_from_name(name: str) -> Role | None:
    """Guess a role from a conventional name (last attribute only: ``self.optimizer`` -> optimizer)."""
    last = name.rsplit(".", 1)[-1]
    for pattern, role in _NAME_HINTS:
        if pattern.search(last):
            return role
    return None


class ObjectRoles:
    """The roles of the objects of one file; get the shared instance with ``object_roles(ctx)``."""

    def __init__(self, ctx: FileContext):
        self.ctx = ctx
        # Questions being answered: each is answered by a fresh flow walk, so a value whose role
        # depends on its own (a list element read back through the list, ``x = xs[0]``,
        # ``xs = [x]``) would recurse without end; asked again while open, it is unknown.
        self._open: set = set()

    def _answer(self, key, build) -> Role | None:
        if key in self._open:
            return None
        self._open.add(key)
        try:
            return self.ctx.shared(key, build)
        finally:
            self._open.discard(key)

    def role_of(self, expr_or_symbol: ast.AST | str, hint: bool = True) -> Role | None:
        """The role of an expression (where it is written) or of a symbol (``"self.opt"``): from
        data flow, then the file's symbol table, then use, then (with ``hint``) the name."""
        if isinstance(expr_or_symbol, str):
            key = expr_or_symbol
            role = None
        else:
            key = symbol(expr_or_symbol)
            role = self.value_role(expr_or_symbol)
        if role is None and key is not None:
            role = self.symbol_role(key)
            if role is None and hint:
                role = role_from_name(key.split("[", 1)[0])
        return role

    def value_role(self, expr: ast.AST, elsewhere: bool = False) -> Role | None:
        """The role of the value ``expr`` evaluates to, from data flow alone (no names, no uses)."""
        if elsewhere:  # parameters followed into the callers of other files too (``_RoleFlow``)
            return self._answer(("value-role-elsewhere", expr), lambda: _RoleFlow(self, True).value(expr, 0))
        return self._answer(("value-role", expr), lambda: _RoleFlow(self).value(expr, 0))

    def element_role(self, container: ast.AST, elsewhere: bool = False) -> Role | None:
        """The role every element of the list / tuple ``container`` evaluates to shares, from data
        flow alone (``scheds = [StepLR(o1, 5), StepLR(o2, 5)]``, a list filled with ``append``, a
        helper of another file that returns one): ``scheds[i]`` is then a scheduler too."""
        key = ("element-role", elsewhere, container)
        return self._answer(key, lambda: _RoleFlow(self, elsewhere, elements=True).value(container, 0))

    def symbol_role(self, key: str) -> Role | None:
        """The role of what the file assigns to a symbol anywhere (``self.opt``, ``model``): the
        latest assignment that gives a torch role, else ``OTHER`` if one shows another object."""
        if key not in self._assigned_symbols:
            return None  # the common case, told without building every scope's bindings
        bindings = [b for b in dataflow(self.ctx).bindings_anywhere(key) if b.kind in ("assign", "unpack")]
        if not bindings:
            return None
        return self.ctx.shared(
            ("symbol-role", key), lambda: _RoleFlow.combine(_RoleFlow(self).binding(b, 0) for b in reversed(bindings))
        )

    @cached_property
    def _assigned_symbols(self) -> frozenset[str]:
        """The symbols some assignment of the file targets (a cheap filter for ``symbol_role``)."""
        found = set()
        for node in self.ctx.nodes(ast.Assign, ast.AnnAssign):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                found.update(filter(None, (symbol(t) for t in target_elements(target))))
        return frozenset(found)

    def returned_role(self, function: ast.AST, index: int | None = None, elements: bool = False) -> Role | None:
        """The role of what a function of this file returns (element ``index`` of a returned tuple),
        when every ``return`` agrees: ``def build(): return Net()`` returns a model. With
        ``elements``, the role of the elements of the list it returns."""
        return self.ctx.shared(
            ("returned-role", function, index, elements),
            lambda: _RoleFlow(self, elements=elements).returned(function, index, 0),
        )

    @cached_property
    def used_as(self) -> dict[str, Role]:
        """Symbol -> role shown by use: ``opt = Adam(chain(G_AB.parameters(), G_BA.parameters()))``
        and ``E1.eval()`` / ``E1.train(False)`` make models."""
        found: dict[str, Role] = {}
        for call in self.ctx.calls:
            func = call.func
            if isinstance(func, ast.Attribute) and _is_mode_switch(call, func.attr):
                _mark(found, func.value, Role.MODEL)
            # Optimizer classes are capitalised (`Adam`, `bnb.optim.AdamW8bit`): a cheap test first.
            if (last_name(func) or "")[:1].isupper() and constructor_role(self.ctx, call) is Role.OPTIMIZER:
                for owner in _parameter_owners(call):
                    _mark(found, owner, Role.MODEL)
        return found

    # ----- which models feed which optimizer ---------------------------------------------------------
    @cached_property
    def optimizer_models(self) -> dict[str, frozenset[str]]:
        """Optimizer symbol -> symbols of the models whose ``.parameters()`` it was built from
        (``optimizerD = Adam(netD.parameters())`` -> {"netD"}); absent when it cannot be told."""
        found: dict[str, frozenset[str]] = {}
        for node in self.ctx.nodes(ast.Assign):
            value = node.value
            if not (
                isinstance(value, ast.Call)
                and len(node.targets) == 1
                and constructor_role(self.ctx, value) == Role.OPTIMIZER
            ):
                continue
            key = symbol(node.targets[0])
            models = frozenset(filter(None, map(symbol, _parameter_owners(value))))
            if key is not None and models:
                found[key] = models
        self._lightning_optimizer_models(found)
        return found

    def _lightning_optimizer_models(self, found: dict) -> None:
        """``opt_g, opt_d = self.optimizers()`` in a LightningModule: the optimizers
        ``configure_optimizers`` returns, in order (``return [opt_g, opt_d]`` or
        ``return [opt_g, opt_d], [sched]``), give their parameters to the unpacked names."""
        for node in self.ctx.nodes(ast.Assign):
            value = node.value
            if not (
                len(node.targets) == 1
                and isinstance(node.targets[0], (ast.Tuple, ast.List))
                and isinstance(value, ast.Call)
                and isinstance(value.func, ast.Attribute)
                and value.func.attr == "optimizers"
                and isinstance(value.func.value, ast.Name)
                and value.func.value.id == "self"
            ):
                continue
            cls = self.ctx.enclosing(node, ast.ClassDef)
            method = find_method(Definition(self.ctx, cls), "configure_optimizers", local=True) if cls else None
            if method is None:
                continue
            configure = method.node
            for ret in walk_function_body(configure):
                if not isinstance(ret, ast.Return) or not isinstance(ret.value, (ast.List, ast.Tuple)):
                    continue
                elts = ret.value.elts
                if elts and isinstance(elts[0], (ast.List, ast.Tuple)):
                    elts = elts[0].elts
                for target, returned in zip(node.targets[0].elts, elts):
                    models = found.get(symbol(returned) or "")
                    key = symbol(target)
                    if models and key and key not in found:
                        found[key] = models
                break


class _RoleFlow:
    """One question "what role does this value have?", followed through the file's data flow.
    ``active`` holds the functions and nodes being followed (recursion ends there, unknown)."""

    def __init__(self, roles: ObjectRoles, elsewhere: bool = False, elements: bool = False):
        # ``elsewhere``: a parameter of a top-level function this file never calls takes the role its
        # callers in the project's other files give it (each such query depends on the whole project).
        self.elsewhere = elsewhere
        # ``elements``: the question is the role the elements of the value share, not the value's own.
        self.elements = elements
        self.roles = roles
        self.ctx = roles.ctx
        self.flow = dataflow(roles.ctx)
        self.active: set = set()

    def value(self, expr: ast.AST, depth: int) -> Role | None:
        if depth > MAX_FLOW_DEPTH or expr in self.active:
            return None
        self.active.add(expr)
        try:
            return self._value(expr, depth)
        finally:
            self.active.discard(expr)

    def _value(self, expr: ast.AST, depth: int) -> Role | None:
        if self.elements:
            return self._elements(expr, depth)
        ctx = self.ctx
        if isinstance(expr, ast.Subscript) and not isinstance(expr.slice, ast.Slice):
            return self.roles.element_role(expr.value, self.elsewhere)
        if isinstance(expr, ast.Call):
            role = constructor_role(ctx, expr)
            if role is not None:
                return role
            func = expr.func
            wrapped = preserved_argument(ctx, expr)
            if wrapped is not None:
                return self.value(wrapped, depth + 1)
            if isinstance(func, ast.Attribute) and func.attr in torch_names.MODULE_SELF_RETURNING:
                return self.value(func.value, depth + 1)
            if is_prepare_call(expr) and len(expr.args) == 1:
                return self.value(expr.args[0], depth + 1)
            return self.call_returns(expr, None, depth + 1)
        if isinstance(expr, ast.IfExp):
            return self.combine(self.value(side, depth + 1) for side in (expr.body, expr.orelse))
        role = None
        if isinstance(expr, ast.Name):
            role = self.combine(self.binding(b, depth + 1) for b in self.flow.reaching(expr))
        else:
            owner = self.flow.self_attribute(expr)
            if owner is not None:
                role = self.combine(self.binding(b, depth + 1) for b in reversed(self.flow.attribute_bindings(*owner)))
        if role is None:
            key = symbol(expr)  # what the object is used as, where its building is not shown
            role = self.roles.used_as.get(key) if key is not None else None
        return role

    def _elements(self, container: ast.AST, depth: int) -> Role | None:
        """The role the elements of ``container`` share: a list a function returns or a parameter
        is given (also from other files) is followed as values are; a list built here (literal,
        ``append``, comprehension) through its element origins, which must all agree."""
        if isinstance(container, ast.Call) and not is_copying_call(self.ctx, container):
            return self.call_returns(container, None, depth + 1)
        if isinstance(container, ast.Name):
            bindings = self.flow.reaching(container)
            if bindings and all(_followed_as_value(self.ctx, b) for b in bindings):
                return self.combine(self.binding(b, depth + 1) for b in bindings)
        origins = element_origins(self.ctx, container)
        roles = {self.roles.value_role(o, self.elsewhere) if o is not None else None for o in origins}
        return roles.pop() if len(roles) == 1 else None

    @staticmethod
    def combine(roles) -> Role | None:
        """The latest role a value may have; ``OTHER`` only when no binding gives a torch role."""
        other = False
        for role in roles:
            if role is Role.OTHER:
                other = True
            elif role is not None:
                return role
        return Role.OTHER if other else None

    def binding(self, binding: Binding, depth: int) -> Role | None:
        kind = binding.kind
        if kind in ("assign", "walrus"):
            value = binding.value
            if value is None or (isinstance(value, ast.Constant) and value.value is None):
                return None  # `model = None` until it is built
            return self.value(value, depth)
        if kind == "unpack" and isinstance(binding.source, ast.Call) and binding.index is not None:
            source = binding.source
            if is_prepare_call(source):
                element = prepared_element(source, binding.index)
                return self.value(element, depth) if element is not None else None
            return self.call_returns(source, binding.index, depth)
        if kind == "param":
            function = self.ctx.parent(self.ctx.parent(binding.stmt))
            return self.parameter(function, binding.stmt, depth)
        return None

    def parameter(self, function: ast.AST, param: ast.arg, depth: int) -> Role | None:
        """The role every call site of ``function`` in this file gives ``param`` (or its default)."""
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) or function in self.active:
            return None
        called = called_elsewhere(self.ctx, function) if self.elsewhere else None
        if called is not None:
            roles = self._given_elsewhere(function, param, *called)
            if roles:
                return roles[0] if None not in roles and len(set(roles)) == 1 else None
            if self.elements:
                return None
        self.active.add(function)
        try:
            roles = [
                self.value(arg, depth + 1) if arg is not None else None
                for arg in parameter_arguments(self.ctx, function, param)
            ]
        finally:
            self.active.discard(function)
        if not roles or any(role is None for role in roles) or len(set(roles)) != 1:
            return None
        return roles[0]

    def _given_elsewhere(self, function: ast.AST, param: ast.arg, called: ast.AST, bound: int) -> list[Role | None]:
        """The role each call site of ``called`` in the project's other files gives ``param`` of
        ``function`` (``_called_elsewhere``), judged in the caller's file; empty when none is shown."""
        if function in _ASKED_ELSEWHERE:
            return []
        _ASKED_ELSEWHERE.add(function)
        try:
            sites = callers_elsewhere(Definition(self.ctx, called)) or []
            return [
                _role_in(object_roles(caller), arg, self.elements) if arg is not None else None
                for caller, site in sites
                for arg in [site_argument(caller, function, param, site, bound)]
            ]
        finally:
            _ASKED_ELSEWHERE.discard(function)

    def call_returns(self, call: ast.Call, index: int | None, depth: int) -> Role | None:
        """The role of what the function ``call`` runs returns (element ``index`` of a tuple): a
        function of this file followed here, one of another file asked in its own file."""
        callee = resolve_callee(self.ctx, call)
        if callee is None:
            return None
        callee_ctx, function = callee
        if callee_ctx is self.ctx:
            return self.returned(function, index, depth)
        return object_roles(callee_ctx).returned_role(function, index, self.elements)

    def returned(self, function: ast.AST, index: int | None, depth: int) -> Role | None:
        """The role of what ``function`` returns (element ``index`` of a returned tuple), when every
        ``return`` agrees."""
        if function in self.active:
            return None
        self.active.add(function)
        try:
            roles = []
            for ret in returns_of(function):
                value = ret.value
                if isinstance(value, ast.Constant) and value.value is None and index is None:
                    continue  # `return None` when there is nothing to build (no warm-up): no other object
                value = _returned_element(value, index)
                if self.elements and value is not None and self.roles.value_role(value) in _NOT_INDEXABLE:
                    continue  # the one object of a branch: what is indexed came from another return
                roles.append(self.value(value, depth + 1) if value is not None else None)
        finally:
            self.active.discard(function)
        if not roles or any(role is None for role in roles) or len(set(roles)) != 1:
            return None
        return roles[0]


def called_elsewhere(ctx: FileContext, function: ast.AST) -> tuple[ast.AST, int] | None:
    """What the project's other files call to run ``function`` when this file never runs it
    itself, with how many leading parameters such a call binds: a top-level function
    (``train_iteration(model, optimizer, scheduler)`` from the main script), or the ``__init__``
    of a top-level class they build (``Trainer(model, optimizer, lr_scheduler=sched)``; ``self``
    bound) that no class of this file extends (a subclass would bind the parameters too)."""
    graph = call_graph(ctx)
    if graph.callers(function):
        return None
    home = ctx.parent(function)
    if isinstance(home, ast.Module):
        return function, 0
    if not (function.name == "__init__" and isinstance(home, ast.ClassDef)):
        return None
    if not isinstance(ctx.parent(home), ast.Module) or graph.instantiations(home):
        return None
    if any(home.name in map(last_name, cls.bases) for cls in ctx.nodes(ast.ClassDef)):
        return None
    return home, 1


def _role_in(roles: ObjectRoles, expr: ast.AST, elements: bool) -> Role | None:
    """The role of ``expr`` (of its elements, with ``elements``) in its file, callers elsewhere followed."""
    return roles.element_role(expr, elsewhere=True) if elements else roles.value_role(expr, elsewhere=True)


def _followed_as_value(ctx: FileContext, binding: Binding) -> bool:
    """A binding whose list comes whole from elsewhere: a parameter, or a call of a function."""
    if binding.kind == "param":
        return True
    value = binding.value if binding.kind in ("assign", "walrus") else None
    return isinstance(value, ast.Call) and not is_copying_call(ctx, value)


def _returned_element(value: ast.AST | None, index: int | None) -> ast.AST | None:
    """What a ``return value`` hands back as element ``index`` of a returned tuple (``None``: the
    whole value), or ``None`` where it is not written out."""
    if value is None or index is None:
        return value
    if isinstance(value, (ast.Tuple, ast.List)) and index < len(value.elts):
        return value.elts[index]
    return None


def _is_mode_switch(call: ast.Call, method: str) -> bool:
    """``x.eval()``, ``x.train(False)``, ``x.train(mode=True)``: what only a module does (a bare
    ``x.train()`` is also a trainer's "run the training")."""
    if method == "eval":
        return not call.args and not call.keywords
    if method == "train":
        mode = argument(call, 0, "mode")
        return isinstance(mode, ast.Constant) and isinstance(mode.value, bool)
    return False


def _parameter_owners(call: ast.Call) -> list[ast.AST]:
    """The objects whose ``.parameters()`` / ``.named_parameters()`` an optimizer call is given."""
    params = argument(call, 0, "params")
    if params is None:
        return []
    return [
        sub.func.value
        for sub in walk_no_scopes(params)
        if isinstance(sub, ast.Call)
        and isinstance(sub.func, ast.Attribute)
        and sub.func.attr in torch_names.PARAMETER_METHODS
    ]


def _mark(found: dict[str, Role], expr: ast.AST, role: Role) -> None:
    key = symbol(expr)
    if key is not None and key not in ("self", "cls"):
        found.setdefault(key, role)


def object_roles(ctx: FileContext) -> ObjectRoles:
    """The file's object roles, built the first time a rule asks and then shared."""
    return ctx.shared("roles", lambda: ObjectRoles(ctx))


def shown_torch_scheduler(ctx: FileContext, expr: ast.AST) -> bool:
    """Whether the code shows ``expr`` to be a torch learning-rate scheduler (or a library one with
    its contract: ``step()`` after ``optimizer.step()``, reading the rate the optimizer already
    holds): data flow reaches a constructor of the vocabulary (``torch.optim.lr_scheduler``,
    ``transformers.get_*_schedule*``...) or a class whose bases, through the project, are torch's.
    A name (``scheduler``) is not enough: a project's own schedule class that writes the coming
    step's value into the param groups (``WarmupCosineSchedule.step()``) is meant to step first, and
    so is a subclass of torch's that replaces ``step()`` with its own (a warm-up scheduler stepped at
    the start of each epoch): torch's contract holds for the ``step()`` torch wrote."""
    roles = object_roles(ctx)
    if (
        roles.role_of(expr, hint=False) is not Role.SCHEDULER
        and roles.value_role(expr, elsewhere=True) is not Role.SCHEDULER
    ):
        return False
    return not any(defines_own_step(call_ctx, call) for call_ctx, call in _building_calls(ctx, expr, 0))


def _building_calls(ctx: FileContext, expr: ast.AST, depth: int) -> Iterator[tuple[FileContext, ast.Call]]:
    """The calls that may have built the value of ``expr``, each with its file: data flow followed
    as roles follow it, into what a function of the project returns (``sched = build()``,
    ``model, opt, sched = build(args)``), so a fact of the constructor (its class steps itself)
    holds wherever the object the role came from goes."""
    unpacked: list[tuple[ast.Call, int]] = []

    def note_unpacked(call: ast.AST, index: int) -> None:
        if isinstance(call, ast.Call):
            unpacked.append((call, index))

    open_parameters: list[ast.arg] = []
    for origin in dataflow(ctx).origins(expr, parameters=True, unpacked=note_unpacked, open_parameters=open_parameters):
        if isinstance(origin, ast.Subscript) and not isinstance(origin.slice, ast.Slice) and depth < MAX_FLOW_DEPTH:
            for element in element_origins(ctx, origin.value):  # `scheds[i]`: what built the elements
                if element is not None:
                    yield from _building_calls(ctx, element, depth + 1)
        if isinstance(origin, ast.Call):
            yield ctx, origin
            yield from _returned_calls(ctx, origin, None, depth)
        defaulted = _defaulted_parameter(ctx, origin)
        if defaulted is not None:  # the default stands in for callers elsewhere that may pass a value
            open_parameters.append(defaulted)
    for call, index in unpacked:
        yield from _returned_calls(ctx, call, index, depth)
    for param in open_parameters if depth < MAX_FLOW_DEPTH else ():
        yield from _calls_passed_elsewhere(ctx, param, depth)


def _defaulted_parameter(ctx: FileContext, origin: ast.AST | None) -> ast.arg | None:
    """The parameter whose default ``origin`` is (``lr_scheduler=None``), else None."""
    arguments = ctx.parent(origin) if origin is not None else None
    if not isinstance(arguments, ast.arguments):
        return None
    return next((param for param, default in parameter_defaults(arguments) if default is origin), None)


def _calls_passed_elsewhere(ctx: FileContext, param: ast.arg, depth: int) -> Iterator[tuple[FileContext, ast.Call]]:
    """``_building_calls`` of what the project's other files pass for ``param`` of a function this
    file never runs itself (``called_elsewhere``), so the facts of what they build follow the role."""
    function = ctx.parent(ctx.parent(param))
    called = called_elsewhere(ctx, function) if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
    if called is None:
        return
    for caller, site in callers_elsewhere(Definition(ctx, called[0])) or []:
        arg = site_argument(caller, function, param, site, called[1])
        if arg is not None:
            yield from _building_calls(caller, arg, depth + 1)


def _returned_calls(
    ctx: FileContext, call: ast.Call, index: int | None, depth: int
) -> Iterator[tuple[FileContext, ast.Call]]:
    """``_building_calls`` of what the project function ``call`` runs returns (element ``index``)."""
    callee = resolve_callee(ctx, call) if depth < MAX_FLOW_DEPTH else None
    if callee is None:
        return
    callee_ctx, function = callee
    for ret in returns_of(function):
        value = _returned_element(ret.value, index)
        if value is not None:
            yield from _building_calls(callee_ctx, value, depth + 1)
