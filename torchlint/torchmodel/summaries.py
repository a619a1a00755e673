"""Function summaries, PyTorch side: what one function does, as plain data, wherever it is defined.

``function_summary(ctx, function)`` for a function of the file ``ctx`` (or ``call_summary(ctx,
call)`` for the function a call runs, in this file or -- through ``analysis.callgraph.resolve_callee``
-- another file of the project) gives a ``FunctionSummary``:

* ``effects``: what a call does to what it is handed, in order (``effects.Effect``): clears the
  gradients of a parameter, steps it, switches it to eval or train mode, runs backward on it...
* ``runs_without_grad``: its body runs with autograd off (``@torch.no_grad()``,
  ``@torch.inference_mode()``);
* ``returns``: the role of what it returns (``def build(): return Net()`` returns a model);
* ``returns_activation``: the output activation everything it returns went through
  (``softmax``, ``log_softmax``, ``sigmoid``), if one.

``backpropagated_arguments(ctx, call)`` reads the effects at a call site: the arguments the call
hands to parameters its function runs backward on (``self.optimize(opt, d_loss)`` whose body
calls ``loss.backward()`` backpropagates ``d_loss``), whatever the function or the value is named.

Each part is answered in the function's own file by the model that owns the question (the walk,
the roles, the activations), so a function of another file is summarised exactly as a local one.
The models consult the same answers themselves: the walk turns the effects of a function of
another file into events at the call site, the roles and the activations follow what a called
function returns.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import resolve_callee
from torchlint.analysis.definitions import Definition
from torchlint.analysis.nodes import argument_for
from torchlint.analysis.summaries import function_summary as run_summary
from torchlint.torchmodel.activations import activations
from torchlint.torchmodel.effects import Effect
from torchlint.torchmodel.events import EventKind
from torchlint.torchmodel.gradmode import grad_effect
from torchlint.torchmodel.roles import Role, object_roles
from torchlint.torchmodel.walk import event_walker

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext


@dataclass(frozen=True)
class FunctionSummary:
    effects: tuple[Effect, ...]
    runs_without_grad: bool
    returns: Role | None
    returns_activation: str | None

    def does(self, kind: EventKind, parameter: str | None = None) -> bool:
        """Whether a call does ``kind`` (to ``parameter``, when given)."""
        return any(e.kind is kind and (parameter is None or e.parameter == parameter) for e in self.effects)


def function_summary(ctx: FileContext, function: ast.FunctionDef | ast.AsyncFunctionDef) -> FunctionSummary:
    """The summary of a function of the file ``ctx`` (computed once per run, in its own file)."""
    return run_summary(Definition(ctx, function), "torch.summary", lambda _: _summarise(ctx, function), _UNKNOWN)


# While a function's summary is being worked out (recursion): nothing known yet.
_UNKNOWN = FunctionSummary(effects=(), runs_without_grad=False, returns=None, returns_activation=None)


def call_summary(ctx: FileContext, call: ast.Call) -> FunctionSummary | None:
    """The summary of the function ``call`` runs, when the linter can read it; None otherwise
    (unknown calls stay unknown)."""
    callee = resolve_callee(ctx, call)
    return function_summary(*callee) if callee is not None else None


def backpropagated_arguments(ctx: FileContext, call: ast.Call) -> list[ast.AST] | None:
    """The arguments ``call`` passes for the parameters its function runs backward on (an empty
    list when it runs none on what it is handed); None when the linter cannot read the function."""
    callee = resolve_callee(ctx, call)
    if callee is None:
        return None
    function = callee[1]
    found = []
    for effect in function_summary(*callee).effects:
        if effect.kind is EventKind.BACKWARD and effect.parameter is not None:
            argument = argument_for(call, function, effect.parameter)
            if argument is not None:
                found.append(argument)
    return found


def _summarise(ctx: FileContext, function: ast.FunctionDef | ast.AsyncFunctionDef) -> FunctionSummary:
    output = activations(ctx).returns_output(function)
    return FunctionSummary(
        effects=event_walker(ctx).effects(function),
        runs_without_grad=any(grad_effect(ctx, d) is False for d in function.decorator_list),
        returns=object_roles(ctx).returned_role(function),
        returns_activation=output[0] if output is not None else None,
    )
