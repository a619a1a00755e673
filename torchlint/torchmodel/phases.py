"""One function for both phases: ``run_epoch(model, loader, optimizer, mode)``,
``_run_batch(..., train: bool)``.

A function whose backward pass runs only under a condition on one of its parameters (``if mode ==
"train":``, ``if train:``, ``if optimizer is not None:``) trains on some calls and evaluates on the
others. Its evaluation phase is a call of this file that passes a value for which that condition
fails (``run_epoch(model, val_loader, None, "val")``, ``train=False``, or the default). On that path
the modes come from what the function does with that value: ``model.train(mode == "train")``,
``model.eval()`` in the other branch, ``torch.set_grad_enabled(train)``, ``torch.no_grad() if not
train else nullcontext()``. When the function sets a mode nowhere, its caller's mode decides.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from torchlint.analysis.call_values import passed_on_parameter, through_truth_aliases
from torchlint.analysis.callgraph import call_graph, parameter_default, resolve_class
from torchlint.analysis.conditions import NOT_NONE, conditions_at, truth_under
from torchlint.analysis.constants import UNKNOWN, constant_value
from torchlint.analysis.context import FUNCTION_TYPES
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.expected_failures import expected_to_raise
from torchlint.analysis.imports import symbol
from torchlint.analysis.nodes import argument, position
from torchlint.analysis.unpacking import call_argument, passes_unknown
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.constructors import constructor_role
from torchlint.torchmodel.events import BACKWARD_KINDS, STEP_KINDS
from torchlint.torchmodel.forward_calls import model_expression, same_model
from torchlint.torchmodel.gradmode import grad_effect, grad_mode_statements, restores_grad_mode, statement_effect
from torchlint.torchmodel.walk import event_walker

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext
    from torchlint.torchmodel.forward_calls import ForwardCalls

_TRAINING_KINDS = BACKWARD_KINDS | STEP_KINDS
_NOT_A_VALUE = object()


class Undecided:
    """A mode the function sets with a value the evaluation path does not decide."""


UNDECIDED = Undecided()


@dataclass(frozen=True)
class EvaluationPhase:
    """The evaluation path of a function that serves both phases."""

    func: ast.AST
    param: str  # the parameter that selects the phase
    value: object  # the value the evaluating call gives it
    site: ast.Call  # the call of this file that runs the evaluation phase
    model_call: ast.Call  # the first model call on the evaluation path

    @property
    def label(self) -> str:
        return (
            f"the evaluation phase of `{self.func.name}()` "
            f"(`{self.param}={self.value!r}`, called at line {self.site.lineno})"
        )


class PhaseFunctions:
    def __init__(self, ctx: FileContext, forward: ForwardCalls):
        self.ctx = ctx
        self.forward = forward

    @cached_property
    def phases(self) -> dict[ast.AST, EvaluationPhase]:
        """Function -> its evaluation phase, for the functions of this file that serve both phases."""
        found = {}
        for func in self._guarded_trainers():
            phase = self._split(func)
            if phase is not None:
                found[func] = phase
        return found

    def _guarded_trainers(self) -> list[ast.AST]:
        """Functions with a backward call of their own under an ``if`` (a cheap filter)."""
        found = []
        for call in self.ctx.calls:
            func = call.func
            if isinstance(func, ast.Attribute) and func.attr in ("backward", "step"):
                owner = self.ctx.enclosing_function(call)
                if owner is not None and owner not in found and any(True for _ in conditions_at(self.ctx, call)):
                    found.append(owner)
        return found

    def _split(self, func) -> EvaluationPhase | None:
        training = [e for e in event_walker(self.ctx).function_events(func) if e.kind in _TRAINING_KINDS]
        if not training:
            return None
        params = {a.arg for a in func.args.posonlyargs + func.args.args + func.args.kwonlyargs}
        for test, branch in training[0].guards:
            names = {n.id for n in ast.walk(test) if isinstance(n, ast.Name)} & params
            if len(names) != 1 or not isinstance(test, ast.expr):
                continue
            param = names.pop()
            for site in call_graph(self.ctx).callers(func):
                value = self._value_at(site, func, param)
                if value is _NOT_A_VALUE or self._truth(test, {param: value}) in (None, branch):
                    continue
                if any(self._runs(e.site, param, value) is not False for e in training):
                    continue  # some training still runs on that path: not an evaluation phase
                model_call = self._first_model_call(func, param, value)
                if model_call is not None:
                    return EvaluationPhase(func, param, value, site, model_call)
        return None

    def _value_at(self, site: ast.Call, func, param: str):
        return _value_passed(self.ctx, site, func, param)

    def _truth(self, test: ast.AST, values: dict[str, object]) -> bool | None:
        return _truth(self.ctx, test, values)

    def _runs(self, node: ast.AST, param: str, value) -> bool | None:
        """Whether ``node`` runs on the path where ``param`` holds ``value`` (None: cannot tell)."""
        verdict = True
        for test, holds in conditions_at(self.ctx, node):
            truth = self._truth(test, {param: value})
            if truth is None:
                verdict = None
            elif truth != holds:
                return False
        return verdict

    def _first_model_call(self, func, param: str, value) -> ast.Call | None:
        calls = [
            c
            for c in self.ctx.calls
            if self.ctx.enclosing_function(c) is func and self.forward.is_model_call(c) and self._runs(c, param, value)
        ]
        return min(calls, key=position) if calls else None

    # ----- the modes on the evaluation path ------------------------------------------------------------
    def eval_mode(self, phase: EvaluationPhase) -> bool | None:
        """True when the path switches the model to eval mode before its model call, False when it
        leaves or puts it in train mode, None when the function switches nothing on that path."""
        model = symbol(model_expression(phase.model_call))
        found = None
        for call in sorted(self._switches(phase.func), key=position):
            if position(call) >= position(phase.model_call):
                break
            if not same_model(symbol(call.func.value), model):
                continue
            runs = self._runs(call, phase.param, phase.value)
            if runs is False:
                continue
            mode = self._switch_mode(call, phase)
            if runs is None or mode is None:
                return None  # a switch that may or may not run, or an unknown mode
            found = mode == "eval"
        return found

    def _switches(self, func) -> list[ast.Call]:
        return [
            c
            for c in self.ctx.calls
            if isinstance(c.func, ast.Attribute)
            and c.func.attr in ("eval", "train")
            and self.ctx.enclosing_function(c) is func
        ]

    def _switch_mode(self, call: ast.Call, phase: EvaluationPhase) -> str | None:
        if call.func.attr == "eval":
            return "eval" if not call.args else None
        mode = argument(call, 0, "mode")
        if mode is None:
            return "train"
        truth = self._truth(mode, {phase.param: phase.value})
        return None if truth is None else "train" if truth else "eval"

    def grad_off(self, phase: EvaluationPhase) -> bool | None | Undecided:
        """True when autograd is off at the path's model call, False when it is switched on there,
        None when the function does not say, ``UNDECIDED`` when it sets the mode with a value the
        path does not decide. The nearest switch wins: a ``with`` block around the call, else the
        last bare ``torch.set_grad_enabled(...)`` statement before it, else a decorator."""
        for ancestor in self.ctx.ancestors(phase.model_call):
            if ancestor is phase.func or isinstance(ancestor, FUNCTION_TYPES):
                break
            if isinstance(ancestor, (ast.With, ast.AsyncWith)):
                for item in ancestor.items:
                    effect = self._context_effect(item.context_expr, phase)
                    if effect is not None:
                        return not effect
        statement = self._statement_effect(phase)
        if statement is not None:
            return statement if statement is UNDECIDED else not statement
        if any(grad_effect(self.ctx, d) is False for d in phase.func.decorator_list):
            return True
        return None

    def _statement_effect(self, phase: EvaluationPhase) -> bool | None | Undecided:
        """What the last bare ``torch.set_grad_enabled(expr)`` statement of the function that may run
        before the path's model call sets: the mode ``expr`` has under the path's value (True: on),
        ``UNDECIDED`` when the path decides neither ``expr`` nor whether the statement runs."""
        before = [
            c
            for c in grad_mode_statements(self.ctx)
            if self.ctx.enclosing_function(c) is phase.func and position(c) < position(phase.model_call)
        ]
        for call in sorted(before, key=position, reverse=True):
            runs = self._runs(call, phase.param, phase.value)
            if runs is False:
                continue
            if restores_grad_mode(self.ctx, call):
                return None  # an `__exit__` puts back the mode from before: not fixed by the statement
            if self.ctx.call_qualname(call) in torch_names.SET_GRAD_ENABLED:
                mode = argument(call, 0, "mode")
                truth = None if mode is None else self._truth(mode, {phase.param: phase.value})
            else:
                truth = statement_effect(self.ctx, call)
            return UNDECIDED if runs is None or truth is None else truth
        return None

    def _context_effect(self, expr: ast.AST, phase: EvaluationPhase) -> bool | None:
        """Autograd on (True) or off (False) inside ``with expr:`` on the path; None: no effect known."""
        if isinstance(expr, ast.IfExp):
            truth = self._truth(expr.test, {phase.param: phase.value})
            if truth is None:
                return None
            return self._context_effect(expr.body if truth else expr.orelse, phase)
        if isinstance(expr, ast.Call) and self.ctx.call_qualname(expr) in torch_names.SET_GRAD_ENABLED:
            if expr.args:
                truth = self._truth(expr.args[0], {phase.param: phase.value})
                return truth
        return grad_effect(self.ctx, expr)


def _truth(ctx: FileContext, test: ast.AST, values: dict[str, object]) -> bool | None:
    """``truth_under`` that also reads the names that stand for one constant (``LoopPhase.TRAIN``)."""
    return truth_under(test, values, lambda expr: constant_value(ctx, expr))


def _value_passed(ctx: FileContext, site: ast.Call, func, param: str, bound: bool = False, via: tuple = ()):
    """The constant ``site`` passes for ``param`` of ``func`` (its default when left out): a
    literal or a name that stands for one (``phase=LoopPhase.VAL``, ``analysis.constants``);
    ``_NOT_A_VALUE`` when it is neither or may hide in ``*args``/``**kwargs``. ``via``: the calls
    that ran the function ``site`` is written in (outermost first): a parameter of that function
    handed on unchanged (``train=train``) has the value the call before passes for it."""
    given = call_argument(ctx, site, func, param, bound)
    caller = ctx.enclosing_function(site)
    handed_on = passed_on_parameter(ctx, given, caller) if via and given is not None else None
    if handed_on is not None:
        return _value_passed(ctx, via[-1], caller, handed_on, via=via[:-1])
    if given is None:
        if passes_unknown(ctx, site):
            return _NOT_A_VALUE
        given = parameter_default(func, param)
    value = constant_value(ctx, given) if given is not None else UNKNOWN
    if value is UNKNOWN and given is not None and _holds_an_object(ctx, given):
        return NOT_NONE  # decides `if optimizer is None:` for `train(optimizer)` after `optimizer = SGD(...)`
    return _NOT_A_VALUE if value is UNKNOWN else value


# Expressions that always make a new object, never None.
_OBJECT_LITERALS = (ast.List, ast.Tuple, ast.Dict, ast.Set, ast.ListComp, ast.SetComp, ast.DictComp, ast.Lambda)


def _holds_an_object(ctx: FileContext, expr: ast.AST) -> bool:
    """Whether every value ``expr`` may hold is shown to be an object, never None: a container or
    lambda, or a constructor (a known PyTorch one or a class of the project) it was assigned from."""
    origins = dataflow(ctx).origins(expr)
    return bool(origins) and all(
        isinstance(origin, _OBJECT_LITERALS)
        or (
            isinstance(origin, ast.Call)
            and (constructor_role(ctx, origin) is not None or resolve_class(ctx, origin.func) is not None)
        )
        for origin in origins
    )


def runs_when_called(
    ctx: FileContext, site: ast.Call, func, node: ast.AST, bound: bool = False, via: tuple = ()
) -> bool:
    """Whether ``node`` (in ``func``) may run when ``site`` calls ``func``: False when a condition
    around it, read with the constants the call passes for the function's parameters
    (``_run_one_epoch(epoch, train=False)`` for ``if train: loss.backward()``), fails on that path.
    ``bound``: ``site`` calls an object whose method ``func`` is (``model(x)`` runs ``forward``).
    ``via``: the calls that ran ``site``'s own function, outermost first (``_value_passed``)."""
    params = {a.arg for a in func.args.posonlyargs + func.args.args + func.args.kwonlyargs}
    for test, holds in conditions_at(ctx, node):
        test = through_truth_aliases(ctx, test)  # `train = phase == "train"` ... `if train:`
        names = {n.id for n in ast.walk(test) if isinstance(n, ast.Name)} & params
        values = {name: _value_passed(ctx, site, func, name, bound, via) for name in names}
        values = {name: value for name, value in values.items() if value is not _NOT_A_VALUE}
        if values and _truth(ctx, test, values) is (not holds):
            return False
    return True


def constants_passed(
    ctx: FileContext, site: ast.Call, func, func_ctx: FileContext, bound: bool, outer: tuple | None = None
) -> dict[str, object]:
    """The constants ``site`` (of ``ctx``) passes for the parameters of ``func`` (of ``func_ctx``)
    that ``func`` never rebinds: a literal or a name for one, the parameter's default where the
    call leaves it out, and for an argument that is a parameter of the function ``outer`` is judged
    under (``(function, values)``: ``Block(mode=mode)`` in an ``__init__`` built with ``mode="down"``)
    the value it has there. Parameters given nothing shown (``**config``) are left out."""
    rebound = {n.id for n in ast.walk(func) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    params = [a.arg for a in func.args.posonlyargs + func.args.args + func.args.kwonlyargs]
    values: dict[str, object] = {}
    for param in params:
        if param in rebound or (param is params[0] and param in ("self", "cls")):
            continue
        given = call_argument(ctx, site, func, param, bound)
        if given is None:
            if passes_unknown(ctx, site):
                continue
            default = parameter_default(func, param)
            value = UNKNOWN if default is None else constant_value(func_ctx, default)
        elif isinstance(given, ast.Name) and outer is not None and given.id in outer[1]:
            value = outer[1][given.id] if ctx.enclosing_function(site) is outer[0] else UNKNOWN
        else:
            value = constant_value(ctx, given)
        if value is not UNKNOWN:
            values[param] = value
    return values


def decided_off(ctx: FileContext, func, node: ast.AST, values: dict[str, object]) -> bool:
    """Whether a condition around ``node`` (in ``func``), read with ``values`` for the function's
    parameters (``constants_passed``), fails: that code does not run under them."""
    if not values or ctx.enclosing_function(node) is not func:
        return False
    return any(
        _truth(ctx, through_truth_aliases(ctx, test), values) is (not holds) for test, holds in conditions_at(ctx, node)
    )


def kept_by_every_call(ctx: FileContext, func, test: ast.AST, holds: bool) -> bool:
    """Whether ``test``, a condition on parameters of ``func`` only (``if do_zero_grad:``), has truth
    ``holds`` by the function's contract: no call of this file that runs (one a test expects to
    raise computes nothing) passes a value that decides it the other way, and when no call is
    shown, its defaults decide it that way. A call passing a value the file does not show keeps
    it: the caller asked for that behaviour."""
    params = {a.arg for a in func.args.posonlyargs + func.args.args + func.args.kwonlyargs}
    names = {n.id for n in ast.walk(test) if isinstance(n, ast.Name)}
    if not names or not names <= params:
        return False
    sites = call_graph(ctx).callers(func)
    if not sites:
        defaults = {name: parameter_default(func, name) for name in names}
        values = {name: constant_value(ctx, default) for name, default in defaults.items() if default is not None}
        return _truth(ctx, test, {n: v for n, v in values.items() if v is not UNKNOWN}) is holds
    for site in sites:
        if expected_to_raise(ctx, site):
            continue
        values = {name: _value_passed(ctx, site, func, name) for name in names}
        values = {name: value for name, value in values.items() if value is not _NOT_A_VALUE}
        if values and _truth(ctx, test, values) is (not holds):
            return False
    return True
