"""Branch tests inside a called function, decided by the values its call may pass.

``call_scenarios(ctx, tests)`` takes ``(test, via)`` pairs: an ``if`` test written in a function of
this file that a walk reached through the calls ``via`` (outermost first). A test that reads only
parameters of its function, still holding what the call passed, is decided by the values that call
may pass for them (``constants.possible_values``: a constant, or each element of the literal a loop
runs over: ``for mode in ("none", "model"): reset(net, mode)``); a name the function set to a
comparison of them (``train = phase == "train"``) reads as that comparison
(``through_truth_aliases``). Each scenario is one choice of
those values for every call at once; it maps ``(test, call)`` to the test's truth under that choice
(absent: not decided). One empty scenario when nothing is decided, or when the choices would be
too many to try.

Why: a helper that branches on a mode string (``if mode == "a": ... elif mode == "b": ...``) with
no ``else`` does something on every path its callers can take, when every value they pass names a
branch. Nothing here knows about PyTorch.
"""

from __future__ import annotations

import ast
import copy
import itertools
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import resolve_local_call
from torchlint.analysis.conditions import truth_under
from torchlint.analysis.constants import constant_value, possible_values
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.unpacking import call_argument

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

# Choices of values tried at most; beyond that nothing is decided (the cautious answer).
MAX_SCENARIOS = 64


def call_scenarios(ctx: FileContext, tests: list[tuple[ast.AST, tuple]]) -> list[dict[tuple[int, int], bool]]:
    """The scenarios of the module docstring for ``tests``."""
    variables: dict[tuple, tuple] = {}  # what a call passes (`_source`) -> the values it may hold
    decided: list[tuple[ast.AST, ast.Call, dict[str, tuple]]] = []  # (test, call, parameter -> source)
    for test, via in tests:
        found = _passed_values(ctx, test, via)
        if found is not None:
            call, values = found
            variables.update(values.values())
            decided.append((test, call, {name: source for name, (source, _) in values.items()}))
    keys = list(variables)
    count = 1
    for key in keys:
        count *= len(variables[key])
    if not decided or count > MAX_SCENARIOS:
        return [{}]
    scenarios = []
    for choice in itertools.product(*(variables[key] for key in keys)):
        chosen = dict(zip(keys, choice))
        scenario = {}
        for test, call, sources in decided:
            values = {name: chosen[source] for name, source in sources.items()}
            truth = truth_under(through_truth_aliases(ctx, test), values, lambda expr: constant_value(ctx, expr))
            if truth is not None:
                scenario[(id(test), id(call))] = truth
        scenarios.append(scenario)
    return scenarios


def decided_in(scenario: dict[tuple[int, int], bool], test: ast.AST, via: tuple) -> bool | None:
    """The truth ``scenario`` gives ``test`` reached through ``via`` (None: not decided)."""
    for call in via:
        truth = scenario.get((id(test), id(call)))
        if truth is not None:
            return truth
    return None


def _passed_values(ctx: FileContext, test: ast.AST, via: tuple) -> tuple[ast.Call, dict[str, tuple]] | None:
    """The call of ``via`` that runs the function ``test`` is written in, and for each name the test
    reads, what the call passes for it (``_source``) with the values that may hold; None unless every
    such name is a parameter still holding the call's argument."""
    function = ctx.enclosing_function(test)
    call = next((c for c in via if resolve_local_call(ctx, c) is function), None)
    if call is None or not isinstance(test, ast.expr):
        return None
    values: dict[str, tuple] = {}
    for node in ast.walk(through_truth_aliases(ctx, test)):
        if isinstance(node, ast.Call):
            return None  # a call's result is no parameter's value
        if not isinstance(node, ast.Name):
            continue
        if passed_on_parameter(ctx, node, function) is None:
            return None
        argument = call_argument(ctx, call, function, node.id)
        choices = possible_values(ctx, argument) if argument is not None else None
        if not choices:
            return None
        values[node.id] = (_source(ctx, call, argument), choices)
    return (call, values) if values else None


def passed_on_parameter(ctx: FileContext, expr: ast.AST, function) -> str | None:
    """The parameter of ``function`` that ``expr``, written in ``function``, reads unchanged (every
    binding that reaches it is that parameter's: ``step(x, train=train)`` hands ``train`` on to the
    next call); None for anything else."""
    if not isinstance(expr, ast.Name) or not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    params = function.args.posonlyargs + function.args.args + function.args.kwonlyargs
    bindings = dataflow(ctx).reaching(expr)
    if bindings and all(b.kind == "param" and any(b.stmt is p for p in params) for b in bindings):
        return expr.id
    return None


# `a == b`, `x in (...)`, `not a`: the value is the truth; `True if a == b else False`: a choice
# between two constants, whose truth the test decides.
_TRUTH_VALUED = (ast.Compare, ast.UnaryOp, ast.IfExp)


def through_truth_aliases(ctx: FileContext, test: ast.expr) -> ast.expr:
    """``test`` with each name that holds a truth computed from other names in its function
    (``train = phase == "train"`` ... ``if train:``) read as that expression: the one binding that
    reaches the name is such an assignment (a comparison or a ``not``, no call), and every name it
    reads is a parameter (or such a name) still holding, at ``test``, the value it held there. The
    expression's own nodes are kept (not copied), so that what is known of its names still applies;
    ``test`` itself when nothing is read through. Worked out once per test and file: the scenarios
    of a call ask it again for every choice of values."""
    return ctx.shared(("truth-aliases", test), lambda: _expand_truth_aliases(ctx, test))


def _expand_truth_aliases(ctx: FileContext, test: ast.expr) -> ast.expr:
    flow = dataflow(ctx)

    def expanded(node: ast.AST, depth: int) -> ast.AST:
        if isinstance(node, ast.Name) and depth < MAX_ALIAS_DEPTH:
            alias = _truth_alias(ctx, flow, node)
            return node if alias is None else expanded(alias, depth + 1)
        changed = {}
        for field, value in ast.iter_fields(node):
            if isinstance(value, ast.AST):
                new = expanded(value, depth)
                if new is not value:
                    changed[field] = new
            elif isinstance(value, list) and any(isinstance(v, ast.AST) for v in value):
                items = [expanded(v, depth) if isinstance(v, ast.AST) else v for v in value]
                if any(a is not b for a, b in zip(items, value)):
                    changed[field] = items
        if not changed:
            return node
        rebuilt = copy.copy(node)
        for field, value in changed.items():
            setattr(rebuilt, field, value)
        return rebuilt

    return expanded(test, 0)


MAX_ALIAS_DEPTH = 3  # names read through names (`evaluating = ...`, `training = not evaluating`)


def _truth_alias(ctx: FileContext, flow, name: ast.Name, depth: int = 0) -> ast.expr | None:
    if depth > MAX_ALIAS_DEPTH:
        return None
    bindings = flow.reaching(name)
    if len(bindings) != 1 or bindings[0].kind != "assign" or not isinstance(bindings[0].value, _TRUTH_VALUED):
        return None
    value = bindings[0].value
    if isinstance(value, ast.UnaryOp) and not isinstance(value.op, ast.Not):
        return None
    if isinstance(value, ast.IfExp) and not (
        isinstance(value.body, ast.Constant) and isinstance(value.orelse, ast.Constant)
    ):
        return None
    if ctx.enclosing_function(value) is not ctx.enclosing_function(name):
        return None
    for node in ast.walk(value):
        if isinstance(node, ast.Call):
            return None
        if isinstance(node, ast.Name) and not _still_parameter(ctx, flow, node, name, depth):
            return None
    return value


def _still_parameter(ctx: FileContext, flow, node: ast.Name, test_name: ast.Name, depth: int) -> bool:
    """A name an alias reads holds its parameter's value, there and still at the test (not rebound
    between), or is itself such an alias."""
    bindings = flow.reaching(node)
    if bindings != flow.reaching(node.id, at=test_name):
        return False
    if bindings and all(b.kind == "param" for b in bindings):
        return True
    return _truth_alias(ctx, flow, node, depth + 1) is not None


def _source(ctx: FileContext, call: ast.Call, argument: ast.AST) -> tuple:
    """What a call passes, as one variable of the scenarios: a name with the same reaching bindings
    at several calls (the loop variable of one iteration) holds one value at all of them."""
    if isinstance(argument, ast.Name):
        return ("name", argument.id, frozenset(id(b.stmt) for b in dataflow(ctx).reaching(argument)))
    return ("argument", id(call), id(argument))
