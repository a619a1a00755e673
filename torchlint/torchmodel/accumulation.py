"""Gradient accumulation and loss division: the part of the training model TL009 (and TL001's
accumulation windows) stand on. Mixed into ``TrainingModel``; documented in ``training``'s
module docstring.

* ``is_accumulation_test(test)``: does an ``if`` test pick the optimizer-update iterations
  (``(i + 1) % accum == 0``, ``accum_count >= accum_steps``, a flag assigned from one)?
* ``accumulated_backwards(unit, i)``: backward passes whose gradients pile up over several
  iterations before the step ``unit.events[i]``, each with its ``Accumulation`` evidence;
  ``accumulating_opaque_steps()`` for ``loss_scaler(loss, opt, update_grad=...)``.
* ``loss_is_divided(event)``: was the loss a backward receives divided before it?
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import resolve_instance_call
from torchlint.analysis.dataflow import dataflow, method_call, value_kept
from torchlint.analysis.imports import symbol

if TYPE_CHECKING:
    from torchlint.torchmodel.training import Event, Unit


@dataclass(frozen=True)
class Accumulation:
    """Why a backward is taken to be accumulated over several iterations.

    ``kind``: "guard" (the step sits under ``test``), "exit" (``node``, a ``continue`` or
    ``return`` under ``test``, skips the step on non-update iterations), "micro_loop"
    (``node`` is the inner loop the backward runs in; ``test`` is None) or "argument"
    (an opaque step's ``update_grad=test`` keyword)."""

    kind: str
    node: ast.AST
    test: ast.AST | None

    def count(self) -> str | None:
        """The accumulation count as written, when it shows: the modulo's divisor, the micro-step
        loop's ``range(...)`` bound, or the other side of a counter comparison."""
        if self.kind == "micro_loop":
            it = self.node.iter
            if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range" and it.args:
                return ast.unparse(it.args[0] if len(it.args) == 1 else it.args[1])
            return None
        for node in ast.walk(self.test):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
                return ast.unparse(node.right)
        for node in ast.walk(self.test):
            if isinstance(node, ast.Compare) and node.comparators:
                return ast.unparse(node.comparators[-1])
        return None


# `accelerator.sync_gradients` is accelerate's "this micro-step ends an accumulation window".
ACCUMULATION_NAME = re.compile(r"accum|accumulat|grad_acc|sync_gradients", re.I)
MICRO_STEP_NAME = re.compile(r"accum|micro|chunk", re.I)
DIVIDING_METHODS = frozenset({"div", "div_", "divide", "true_divide", "true_divide_"})
DIVIDING_FUNCTIONS = frozenset({"torch.div", "torch.divide", "torch.true_divide"})
# Mixed-precision wrappers whose result is their first argument, scaled for fp16.
LOSS_SCALING_CALLS = frozenset({"scale", "scale_loss"})
# Methods whose result keeps a loss's scaling (``loss.mean()``, ``loss.float()``).
LOSS_KEEPING_METHODS = frozenset(
    {"mean", "sum", "float", "double", "half", "to", "squeeze", "view", "reshape", "contiguous", "clone"}
)


class AccumulationMixin:
    """Methods of ``TrainingModel`` (which supplies ``ctx``, ``assignments``, ``guard_key(s)``,
    ``clears``, ``stepped_optimizers``, ``resolve_local_call``, ``loop_events``, ``_text``)."""

    def is_accumulation_test(self, test: ast.AST, depth: int = 0) -> bool:
        """Whether an ``if`` test decides if this is an optimizer-update iteration of gradient
        accumulation: a modulo (``(i + 1) % accum == 0``), a counter or flag named for
        accumulation (``accum_count >= accum_steps``), or a name assigned from one of those
        (timm's ``need_update = last_batch or (batch_idx + 1) % accum_steps == 0``)."""
        if not isinstance(test, ast.expr):
            return False
        for node in _training._walk_no_scopes(test):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
                if not (
                    isinstance(node.left, (ast.Constant, ast.JoinedStr))
                    and not isinstance(getattr(node.left, "value", 0), (int, float))
                ):
                    return True
            elif isinstance(node, ast.Attribute) and ACCUMULATION_NAME.search(node.attr):
                return True
            elif isinstance(node, ast.Name):
                if ACCUMULATION_NAME.search(node.id):
                    return True
                if depth < 2:
                    for assign in self._visible_assignments(node.id, test):
                        value = getattr(assign, "value", None)
                        if (
                            isinstance(assign, ast.Assign)
                            and value is not None
                            and self.is_accumulation_test(value, depth + 1)
                        ):
                            return True
        return False

    def _visible_assignments(self, name: str, at: ast.AST) -> list:
        """Assignments of ``name`` in the innermost scope around ``at`` that has any (closures see
        their enclosing function's variables)."""
        scope = self.ctx.enclosing_scope(at)
        while True:
            found = self.assignments(scope).get(name)
            if found or isinstance(scope, ast.Module):
                return found or []
            scope = self.ctx.enclosing_scope(scope)

    def loss_is_divided(self, event: Event) -> bool:
        """Whether the loss a backward (or opaque step) receives was divided before it:
        ``(loss / n).backward()``, ``loss = loss / n``, ``loss /= n``, ``loss.div(n)``,
        ``loss * (1 / n)``, ``criterion(out, y) / n``, a helper of this file returning a
        divided loss, a parameter fed a divided value at the call site the event was
        reached through. A value that cannot be traced (a parameter of an unknown caller)
        counts as divided, so that the rules stay silent."""
        if event.arg is None:
            return True
        self._divided_memo = {}
        return self._divided(event.arg, event.node, event.via, 0)

    MAX_TRACE_DEPTH = 40  # beyond this the value counts as divided (silence over guessing)

    def _divided(self, expr: ast.AST, at: ast.AST, via: tuple, depth: int) -> bool:
        # Memoized per traced backward: sums of partial losses (`loss = loss + aux`) reach
        # the same definitions along many paths.
        key = (id(expr), id(at), via)
        memo = self._divided_memo
        if key not in memo:
            memo[key] = True  # a cycle counts as divided until shown otherwise
            memo[key] = self._divided_uncached(expr, at, via, depth)
        return memo[key]

    def _divided_uncached(self, expr: ast.AST, at: ast.AST, via: tuple, depth: int) -> bool:
        if depth > self.MAX_TRACE_DEPTH:
            return True
        if isinstance(expr, ast.BinOp):
            if isinstance(expr.op, (ast.Div, ast.FloorDiv)):
                return True
            if isinstance(expr.op, ast.Mult) and (self._is_batch_size(expr.left) or self._is_batch_size(expr.right)):
                return True  # `loss * bs`: a sum over the batch, which accumulates into the large batch's sum
            return self._divided(expr.left, at, via, depth + 1) or self._divided(expr.right, at, via, depth + 1)
        if isinstance(expr, ast.UnaryOp):
            return self._divided(expr.operand, at, via, depth + 1)
        if isinstance(expr, ast.Call):
            kept = value_kept(self.ctx, expr)
            if kept is not None:
                return self._divided(kept, at, via, depth + 1)  # `typing.cast(Tensor, loss / n)`
            func = expr.func
            if isinstance(func, ast.Attribute):
                if func.attr in DIVIDING_METHODS:
                    return True
                if func.attr in ("mul", "mul_", "multiply") and any(
                    self._divided(a, at, via, depth + 1) for a in expr.args
                ):
                    return True
                if self.ctx.call_qualname(expr) in DIVIDING_FUNCTIONS:
                    return True
            if self._sum_reduced(expr):
                return True
            callee = self.resolve_local_call(expr) or resolve_instance_call(self.ctx, expr)
            if callee is not None:
                return self._returns_divided(callee, None, depth + 1)
            if isinstance(func, ast.Attribute) and func.attr in LOSS_KEEPING_METHODS:
                return self._divided(func.value, at, via, depth + 1)
            if isinstance(func, ast.Attribute) and func.attr in LOSS_SCALING_CALLS and expr.args:
                return self._divided(expr.args[0], at, via, depth + 1)  # apex `amp.scale_loss(loss / n, opt)`
            return False
        if isinstance(expr, ast.Subscript):
            return self._divided(expr.value, at, via, depth + 1)
        key = symbol(expr)
        if key is None:
            return False
        return self._symbol_divided(key, at, via, depth)

    def _symbol_divided(self, key: str, at: ast.AST, via: tuple, depth: int) -> bool:
        ctx = self.ctx
        scope = ctx.enclosing_scope(at)
        while scope is not None:
            defs = [d for d in self.assignments(scope).get(key, ()) if _training.position(d) < _training.position(at)]
            # The definitions that reach `at`, approximately: going back, every in-place update
            # (`loss /= n`) up to the two latest plain assignments (`if`/`else` may each assign).
            # Bounded on purpose: long `loss = loss + part` chains must not multiply.
            plain = 0
            for node in reversed(defs):
                if self._definition_divides(node, key, at, via, depth):
                    return True
                if not isinstance(node, ast.AugAssign):
                    plain += 1
                    if plain == 2:
                        break
            if defs:
                return False
            if key.startswith("self.") and isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
                # An attribute set in another method (`self.scale = 1 / accum` in __init__).
                cls = ctx.parent(scope)
                if isinstance(cls, ast.ClassDef):
                    return any(
                        self._definition_divides(node, key, node, (), depth + 1)
                        for method in cls.body
                        if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) and method is not scope
                        for node in self.assignments(method).get(key, ())
                    )
            if isinstance(scope, ast.Lambda):
                at, scope = scope, ctx.enclosing_scope(scope)
                continue
            if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
                params = scope.args
                names = [a.arg for a in params.posonlyargs + params.args + params.kwonlyargs]
                if key in names:
                    if via and self.resolve_local_call(via[-1]) is scope:
                        arg = _training._argument_for(via[-1], scope, key)
                        if arg is None:
                            return True
                        return self._divided(arg, via[-1], via[:-1], depth + 1)
                    return True  # fed by a caller that cannot be seen: give it the benefit of the doubt
                at = scope
                scope = ctx.enclosing_scope(scope)  # a closure's free variable
                continue
            return False
        return False

    def _is_batch_size(self, expr: ast.AST, depth: int = 0) -> bool:
        """``x.size(0)``, ``x.shape[0]``, ``len(x)``, or a name assigned from one (``bs = imgs.shape[0]``);
        a name that says batch size (``bs``, ``batch_size``) when it is assigned nowhere visible."""
        if isinstance(expr, ast.Call):
            if isinstance(expr.func, ast.Name) and expr.func.id == "len" and len(expr.args) == 1:
                return True
            found = method_call(expr)
            return found is not None and found[0] == "size" and len(expr.args) == 1 and _is_zero(expr.args[0])
        if isinstance(expr, ast.Subscript):
            inner = expr.value
            is_shape = isinstance(inner, ast.Attribute) and inner.attr == "shape"
            return (is_shape or (method_call(inner) or ("",))[0] == "size") and _is_zero(expr.slice)
        key = symbol(expr)
        if key is None:
            return False
        assigned = [d for d in self._visible_assignments(key, expr) if isinstance(d, ast.Assign)]
        if assigned and depth < 2:
            return all(self._assigns_batch_size(d, key, depth) for d in assigned)
        return not assigned and bool(BATCH_SIZE_NAME.search(key.rsplit(".", 1)[-1]))

    def _assigns_batch_size(self, assign: ast.Assign, key: str, depth: int) -> bool:
        """``bs = x.size(0)``, or ``bs, c, h, w = x.shape`` with ``key`` first."""
        target = assign.targets[0] if len(assign.targets) == 1 else None
        if isinstance(target, (ast.Tuple, ast.List)):
            value = assign.value
            whole_shape = (isinstance(value, ast.Attribute) and value.attr == "shape") or (
                (method_call(value) or ("",))[0] == "size" and not value.args
            )
            return whole_shape and bool(target.elts) and symbol(target.elts[0]) == key
        return self._is_batch_size(assign.value, depth + 1)

    def _sum_reduced(self, call: ast.Call) -> bool:
        """A loss call that sums over the batch (``reduction="sum"``, or a criterion built with it):
        summed losses accumulate into the sum over the large batch, nothing to divide."""
        if _reduces_by_sum(call):
            return True
        for origin in dataflow(self.ctx).origins(call.func):
            if isinstance(origin, ast.Call) and _reduces_by_sum(origin):
                return True
        return False

    def _definition_divides(self, node: ast.AST, key: str, at: ast.AST, via: tuple, depth: int) -> bool:
        if isinstance(node, ast.AugAssign):
            if isinstance(node.op, (ast.Div, ast.FloorDiv)):
                return True
            return isinstance(node.op, ast.Mult) and self._divided(node.value, node, via, depth + 1)
        if isinstance(node, ast.withitem):
            return self._divided(node.context_expr, node.context_expr, via, depth + 1)
        value = node.value
        if value is None:
            return False
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if isinstance(target, (ast.Tuple, ast.List)):
                index = next((i for i, t in enumerate(target.elts) if symbol(t) == key), None)
                if index is None:
                    continue
                if isinstance(value, (ast.Tuple, ast.List)) and index < len(value.elts):
                    return self._divided(value.elts[index], node, via, depth + 1)
                if isinstance(value, ast.Call):
                    callee = self.resolve_local_call(value) or resolve_instance_call(self.ctx, value)
                    if callee is not None:
                        return self._returns_divided(callee, index, depth + 1)
                return False
        return self._divided(value, node, via, depth + 1)

    def _returns_divided(self, func: ast.AST, index: int | None, depth: int) -> bool:
        for node in _training._walk_no_scopes_body(func):
            if isinstance(node, ast.Return) and node.value is not None:
                value = node.value
                if index is not None and isinstance(value, (ast.Tuple, ast.List)) and index < len(value.elts):
                    value = value.elts[index]
                if self._divided(value, node, (), depth):
                    return True
        return False

    def accumulated_backwards(self, unit: Unit, index: int) -> list[tuple[Event, Accumulation]]:
        """Backward passes whose gradients pile up over several iterations before the step
        ``unit.events[index]`` applies them (gradient accumulation), each with its evidence
        (an ``Accumulation``):

        * the step runs under an accumulation test (``if (i + 1) % accum == 0:``), or after an
          exit taken on non-update iterations (``if not need_update: continue``), while the
          backward runs on every iteration and nothing clears the optimizer on every iteration;
        * or the backward runs in an inner micro-step loop (``for micro_step in
          range(gradient_accumulation_steps):``) that the step follows and that clears nothing.
        """
        events = unit.events
        step = events[index]
        # The step's own accumulation conditions, and an exit taken on non-update iterations:
        # events after it run only on update iterations (timm has both: `if need_update:
        # optimizer.step()` in a closure, then `if not need_update: continue` before the clear).
        step_gates = {self.guard_key(g): g[0] for g in step.guards if self.is_accumulation_test(g[0])}
        exit_test, exit_index = self._accumulation_exit(events, index, anywhere=True)
        if exit_index is not None and exit_index > index:
            exit_test = None  # an exit after the step gates what follows, not the step itself
        stepped = self.stepped_optimizers(unit)
        low = 0
        if len(stepped) > 1:  # several optimizers: only the backwards since the previous step feed this one
            for j in range(index - 1, -1, -1):
                if events[j].kind == "step" and not _training.exclusive(events[j], step):
                    low = j + 1
                    break

        def gated(event, position):
            """Runs only on update iterations: under all of the step's gates, or after the exit."""
            if exit_index is not None and position > exit_index and event.loops == step.loops:
                return True
            return bool(step_gates) and set(step_gates) <= self.guard_keys(event)

        if step_gates or exit_test is not None:
            for j, clear in enumerate(events):
                if (
                    clear.kind in _training.CLEAR_KINDS
                    and clear.loops == step.loops
                    and not _training.exclusive(clear, step)
                    and not gated(clear, j)
                    and not any(self.is_accumulation_test(t) for t, _ in clear.guards)
                    and self.clears(clear, step, stepped)
                ):
                    return []  # cleared on every iteration: steps are skipped, nothing accumulates
        found = []
        for j, event in enumerate(events):
            if (
                event.kind != "backward"
                or _training.exclusive(event, step)
                or (len(stepped) > 1 and not low <= j < index)
            ):
                continue
            if step_gates or exit_test is not None:
                if gated(event, j):
                    continue
                missing = [test for key, test in step_gates.items() if key not in self.guard_keys(event)]
                if missing:
                    found.append((event, Accumulation("guard", missing[0], missing[0])))
                elif exit_test is not None:
                    found.append((event, Accumulation("exit", events[exit_index].node, exit_test)))
                continue
            micro = next((lp for lp in event.loops if lp not in step.loops and self.is_micro_step_loop(lp)), None)
            if micro is not None and not any(
                c.kind in _training.CLEAR_KINDS and micro in c.loops and self.clears(c, step, stepped) for c in events
            ):
                found.append((event, Accumulation("micro_loop", micro, None)))
        return found

    def accumulation_gate(self, events, index: int) -> tuple:
        """``(test, exit index)``: the accumulation test that decides whether ``events[index]`` runs,
        as a condition around it (exit index None) or on an earlier ``continue``/``return`` at its level."""
        step = events[index]
        for test, _ in step.guards:
            if self.is_accumulation_test(test):
                return test, None
        return self._accumulation_exit(events, index)

    def _accumulation_exit(self, events, index: int, anywhere: bool = False) -> tuple:
        """The first ``continue``/``return`` under an accumulation test before ``events[index]``
        (anywhere in the iteration, with ``anywhere``) at its level."""
        step = events[index]
        for j in range(len(events) if anywhere else index):
            event = events[j]
            if (
                event.kind in ("continue", "return")
                and event.loops == step.loops
                and not _training.exclusive(event, step)
            ):
                for test, _ in event.guards:
                    if self.is_accumulation_test(test):
                        return test, j
        return None, None

    def is_micro_step_loop(self, loop: ast.AST) -> bool:
        """A loop over the micro-batches of one update, told by its names (``micro_step``,
        ``range(gradient_accumulation_steps)``, ``batch.chunk(n)``)."""
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            return False
        return bool(MICRO_STEP_NAME.search(self._text(loop.target) + " " + self._text(loop.iter)))

    def accumulating_opaque_steps(self) -> list[tuple[Event, Accumulation]]:
        """Opaque steps told to update only on some calls (MAE/DeiT's
        ``loss_scaler(loss, optimizer, update_grad=(i + 1) % accum_iter == 0)``), with that test."""
        found = []
        seen = set()
        if not any(kw.arg and "update" in kw.arg for call in self.ctx.calls for kw in call.keywords):
            return found
        for events in self.loop_events.values():
            for event in events:
                if event.kind != "opaque_step" or event.node in seen:
                    continue
                seen.add(event.node)
                for kw in event.node.keywords:
                    if kw.arg and "update" in kw.arg and self.is_accumulation_test(kw.value):
                        found.append((event, Accumulation("argument", kw.value, kw.value)))
                        break
        return found


BATCH_SIZE_NAME = re.compile(r"^(bs|batch_?size|batchsize|n_?batch|num_samples|n_samples)$", re.I)


def _is_zero(expr: ast.AST) -> bool:
    return isinstance(expr, ast.Constant) and expr.value == 0 and type(expr.value) is int


def _reduces_by_sum(call: ast.Call) -> bool:
    """``reduction="sum"`` (or the legacy ``size_average=False``) among a call's keywords."""
    for kw in call.keywords:
        if kw.arg == "reduction" and isinstance(kw.value, ast.Constant) and kw.value.value == "sum":
            return True
        if kw.arg == "size_average" and isinstance(kw.value, ast.Constant) and kw.value.value is False:
            return True
    return False


# Last, because ``training`` imports this module: by now every name above exists, whichever
# of the two is imported first. Only the module object is bound; its names are looked up
# when the methods run.
from . import training as _training  # noqa: E402
