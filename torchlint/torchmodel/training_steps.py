"""Functions whose returned value a caller backpropagates: training steps, whatever their name.

``def batch_loss(encoder, decoder, X, Y): ...; return l / n`` called as ``l = batch_loss(...)``
followed by ``l.backward()`` runs the model forward to be trained: it needs training mode and
autograd, so it is no evaluation (TL005, TL006), even when it is called from a training loop and
runs the model in a loop of its own. The backward's loss is followed back through names, tuple
unpacking, arithmetic (``loss / accum``), reductions (``.mean()``) and the elements of a list it is
summed or stacked from (``costs.append(cost)``, ``costs += [cost]``, ``costs[i] = cost``; also a
list handed to a helper that sums and backpropagates it) to the calls that produced it, and on through those calls' arguments (``loss_fn(positive, self._negative_scores(users))``: the
gradient flows into both); each call that runs a function of the file marks that function,
whatever mode an earlier ``predict()`` left the model in.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import call_graph, resolve_local_call
from torchlint.analysis.containers import additions
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.nodes import value_operands
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.graphs import backward_losses

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext


def training_step_functions(ctx: FileContext) -> frozenset:
    """The functions of the file whose return value some call site sends to a backward."""

    def build() -> frozenset:
        called = (resolve_local_call(ctx, call) for call in backpropagated_calls(ctx))
        return frozenset(func for func in called if func is not None)

    return ctx.shared("training-step-functions", build)


def only_training_steps(ctx: FileContext) -> frozenset:
    """The training-step functions every call of which in this file is backpropagated, directly or
    through a caller that is itself one. A helper that also serves an evaluation path
    (``extract_features`` for the loss and for the fixed targets) is judged by each path instead."""

    def build() -> frozenset:
        graph = call_graph(ctx)
        steps = training_step_functions(ctx)
        backpropagated = backpropagated_calls(ctx)
        found: set = set()
        changed = True
        while changed:
            changed = False
            for func in steps - found:
                sites = graph.callers(func)
                if all(site in backpropagated or ctx.enclosing_function(site) in found for site in sites):
                    found.add(func)
                    changed = True
        return frozenset(found)

    return ctx.shared("only-training-steps", build)


def backpropagated_calls(ctx: FileContext) -> frozenset:
    """The calls of the file whose returned value is sent to a backward (``outputs, losses =
    self.process_batch(inputs)`` followed by ``losses["loss"].backward()``): the path through such a
    call trains, it needs autograd on."""

    def build() -> frozenset:
        flow = dataflow(ctx)
        return frozenset(
            origin
            for loss, _ in backward_losses(ctx)
            for origin in _loss_origins(ctx, flow, loss)
            if isinstance(origin, ast.Call)
        )

    return ctx.shared("backpropagated-calls", build)


def backpropagated_list_elements(ctx: FileContext) -> frozenset:
    """The calls of the file whose results are added to a list that is summed or stacked into a
    backpropagated loss (``costs.append(model(x, y))``, then ``sum(costs).backward()`` here or in a
    helper handed ``costs``): each such call is a training forward itself."""

    def build() -> frozenset:
        flow = dataflow(ctx)
        listed: set = set()
        for loss, _ in backward_losses(ctx):
            _loss_origins(ctx, flow, loss, listed)
        return frozenset(listed)

    return ctx.shared("backpropagated-list-elements", build)


def _loss_origins(ctx: FileContext, flow, loss: ast.AST, listed: set | None = None) -> list:
    """The calls the loss may come from, looking through names (tuple unpacking too: ``loss,
    logits = step(batch)``), arithmetic (``loss / accum``), reductions (``.mean()``), item or
    attribute access (``out["loss"]``, ``out.loss``) and the elements added to a list it is made
    from. ``listed`` collects the calls reached through such a list."""
    found = []
    pending = [loss]
    seen: set[int] = set()
    through_list: set[int] = set()  # expressions reached through a list's elements
    while pending and len(seen) < 128:
        expr = pending.pop()
        if id(expr) in seen:
            continue
        seen.add(id(expr))
        before = len(pending)
        if isinstance(expr, ast.Name):
            bindings = flow.reaching(expr)
            for binding in bindings:
                if binding.kind == "unpack" and binding.source is not None:
                    pending.append(binding.source)
                elif binding.kind in ("assign", "walrus") and binding.value is not None:
                    pending.append(binding.value)
                elif binding.kind == "augassign" and binding.source is not None:
                    pending.append(binding.source)  # `total += loss`, `costs += [cost]`
            if bindings:
                # A list of per-sample losses (`costs.append(cost)`, `costs[i] = cost`) that is
                # summed or stacked into the loss backpropagates every element.
                # Only what was added to this list: where the value is added, the name must hold a
                # binding that also reaches here (a script reuses `vals = []` section after section).
                scope = flow.scope_of(bindings[0].stmt)
                held = {id(binding.stmt) for binding in bindings}
                elements = [
                    value
                    for value, _ in additions(ctx, expr.id, scope, items=True)
                    if value is not None and any(id(b.stmt) in held for b in flow.reaching(expr.id, value))
                ]
                through_list.update(id(value) for value in elements)
                pending += elements
        elif isinstance(expr, ast.IfExp):
            pending += [expr.body, expr.orelse]
        elif isinstance(expr, (ast.List, ast.Tuple)):
            pending += expr.elts
        elif isinstance(expr, ast.Starred):
            pending.append(expr.value)
        elif (operands := value_operands(expr, torch_names.LOSS_CARRYING_METHODS)) is not None:
            pending += operands
        elif isinstance(expr, ast.Call):
            found.append(expr)
            if listed is not None and id(expr) in through_list:
                listed.add(expr)
            # What a loss is computed from is backpropagated too: `loss_fn(pos, neg)` sends the
            # gradient into both predictions, whichever helper produced them.
            pending += [*expr.args, *(k.value for k in expr.keywords)]
        if id(expr) in through_list:
            through_list.update(id(later) for later in pending[before:])
    return found
