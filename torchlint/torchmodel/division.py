"""Loss division: was the loss a backward receives divided before it?

``loss_is_divided(ctx, event)`` for a backward (or opaque step) event:
``(loss / n).backward()``, ``loss = loss / n``, ``loss /= n``, ``loss.div(n)``, ``loss * (1 / n)``,
``criterion(out, y) / n``, a helper returning a divided loss (a function or a callable object, of
this file or another of the project), a parameter fed a
divided value at the call site the event was reached through (through assignments, helpers'
returns, tuple unpacking and closure parameters), a container built by a comprehension whose
element is divided (``tuple(l / n for l in losses)``, ``[l / n for l in ls]``; also through
``list()``/``tuple()`` copies and ``sum()``), read by indexing or unpacking. A value that cannot be traced (a parameter of
an unknown caller) counts as divided, so that the rules stay silent.
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import resolve_call, resolve_callee, resolve_local_call
from torchlint.analysis.containers import is_copying_call
from torchlint.analysis.dataflow import Binding, dataflow, resolve_instance_call, value_kept
from torchlint.analysis.definitions import Definition
from torchlint.analysis.imports import symbol
from torchlint.analysis.nodes import method_call, walk_function_body, walk_no_scopes
from torchlint.analysis.summaries import function_summary
from torchlint.analysis.unpacking import call_argument
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.calls import is_grad_attribute
from torchlint.torchmodel.modules import module_forward, module_forwards

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext
    from torchlint.torchmodel.events import Event

DIVIDING_METHODS = frozenset({"div", "div_", "divide", "true_divide", "true_divide_"})
DIVIDING_FUNCTIONS = frozenset({"torch.div", "torch.divide", "torch.true_divide"})
# Methods whose result keeps a loss's scaling (``loss.mean()``, ``loss.float()``).
SHAPE_KEEPING_METHODS = frozenset(
    {"float", "double", "half", "to", "squeeze", "unsqueeze", "view", "reshape", "flatten", "contiguous", "clone"}
)
LOSS_KEEPING_METHODS = SHAPE_KEEPING_METHODS | {"mean", "sum"}
# Reductions that keep one value per sample when given a dimension (``l.sum(-1)``, ``l.mean(dim=1)``).
REDUCING_METHODS = frozenset({"sum", "mean"})
MAX_TRACE_DEPTH = 40  # beyond this the value counts as divided (silence over guessing)


def loss_is_divided(ctx: FileContext, event: Event) -> bool:
    """Whether the loss a backward (or opaque step) receives was divided before it."""
    if event.arg is None:
        return True
    return _Trace(ctx).divided(event.arg, event.node, event.via, 0)


def gradients_divided_before(ctx: FileContext, backward: Event, step: Event) -> bool:
    """Whether every parameter's gradient is divided in place between ``backward`` and ``step``:
    ``for p in model.parameters(): p.grad.div_(n)`` (also ``p.grad.data.div_(n)``, ``p.grad /= n``,
    ``p.grad = p.grad / n``, ``p.grad.mul_(1 / n)``), written in the step's function after the
    backward (when the backward is written there too) and before the step. That is the normalisation
    of the accumulated sum, applied to the gradients instead of the loss."""
    scope = ctx.enclosing_scope(step.node)
    start = _position(backward.node) if ctx.enclosing_scope(backward.node) is scope else (0, 0)
    end = _position(step.node)
    trace = _Trace(ctx)
    return any(
        start < _position(node) < end and _scales_loop_gradient(ctx, trace, node)
        for node in walk_function_body(scope)
        if isinstance(node, (ast.Call, ast.AugAssign, ast.Assign))
    )


def _position(node: ast.AST) -> tuple[int, int]:
    return node.lineno, node.col_offset


def _scales_loop_gradient(ctx: FileContext, trace: _Trace, node: ast.AST) -> bool:
    """``p.grad.div_(n)`` / ``p.grad /= n`` / ``p.grad = p.grad / n`` (or a multiplication by a
    divided factor) with ``p`` the variable of a loop around it: every element's gradient."""
    if isinstance(node, ast.Call):
        found = method_call(node)
        if found is None or not is_grad_attribute(found[1]) or len(node.args) != 1:
            return False
        grad, factor, dividing = found[1], node.args[0], found[0] in DIVIDING_METHODS
        multiplying = found[0] in ("mul_", "multiply_")
    elif isinstance(node, ast.AugAssign):
        grad, factor = node.target, node.value
        dividing, multiplying = isinstance(node.op, ast.Div), isinstance(node.op, ast.Mult)
    else:
        value = node.value
        if len(node.targets) != 1 or not isinstance(value, ast.BinOp):
            return False
        grad, factor = node.targets[0], value.right
        same = is_grad_attribute(value.left) and symbol(_without_data(value.left)) == symbol(_without_data(grad))
        dividing, multiplying = same and isinstance(value.op, ast.Div), same and isinstance(value.op, ast.Mult)
    if not is_grad_attribute(grad) or not (dividing or (multiplying and trace.divided(factor, node, (), 0))):
        return False
    owner = symbol(_without_data(grad).value)
    return owner is not None and any(
        isinstance(loop, (ast.For, ast.AsyncFor)) and owner in _loop_names(loop.target)
        for loop in ctx.enclosing_loops(node)
    )


def _without_data(expr: ast.AST) -> ast.AST:
    """``p.grad`` of ``p.grad.data``."""
    return expr.value if isinstance(expr, ast.Attribute) and expr.attr == "data" else expr


def _loop_names(target: ast.AST) -> set[str]:
    """The names a loop binds (``p`` of ``for p in ...``, ``name, p`` of ``named_parameters()``)."""
    return {symbol(node) for node in ast.walk(target) if isinstance(node, ast.Name)}


class _Trace:
    """One question "was this loss divided?", traced back through the code, with its memo."""

    def __init__(self, ctx: FileContext):
        self.ctx = ctx
        self.memo: dict = {}

    def divided(self, expr: ast.AST, at: ast.AST, via: tuple, depth: int) -> bool:
        # Memoized per traced backward: sums of partial losses (`loss = loss + aux`) reach
        # the same definitions along many paths.
        key = (id(expr), id(at), via)
        memo = self.memo
        if key not in memo:
            memo[key] = True  # a cycle counts as divided until shown otherwise
            memo[key] = self._divided_uncached(expr, at, via, depth)
        return memo[key]

    def _divided_uncached(self, expr: ast.AST, at: ast.AST, via: tuple, depth: int) -> bool:
        if depth > MAX_TRACE_DEPTH:
            return True
        if isinstance(expr, ast.BinOp):
            if isinstance(expr.op, (ast.Div, ast.FloorDiv)):
                return True
            if isinstance(expr.op, ast.Mult) and (self._is_batch_size(expr.left) or self._is_batch_size(expr.right)):
                return True  # `loss * bs`: a sum over the batch, which accumulates into the large batch's sum
            return self.divided(expr.left, at, via, depth + 1) or self.divided(expr.right, at, via, depth + 1)
        if isinstance(expr, ast.UnaryOp):
            return self.divided(expr.operand, at, via, depth + 1)
        if isinstance(expr, ast.IfExp):
            # `x / n if n > 0 else zeros_like(x)`, `loss / accum if accum > 1 else loss`
            return self.divided(expr.body, at, via, depth + 1) or self.divided(expr.orelse, at, via, depth + 1)
        if isinstance(expr, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            # `tuple(l / n for l in losses)`: every element is the element expression (its names
            # are read where it stands, so the comprehension's own variables resolve)
            return self.divided(expr.elt, expr.elt, via, depth + 1)
        if isinstance(expr, ast.DictComp):
            return self.divided(expr.value, expr.value, via, depth + 1)
        if isinstance(expr, ast.Call):
            kept = value_kept(self.ctx, expr)
            if kept is not None:
                return self.divided(kept, at, via, depth + 1)  # `typing.cast(Tensor, loss / n)`
            if self._holds_elements_of(expr):
                # `tuple(gen)`, `list(gen)`: the elements of the argument; `sum(gen)`: their sum
                return self.divided(expr.args[0], at, via, depth + 1)
            if self.ctx.call_qualname(expr) == "torch.where" and len(expr.args) == 3:
                return any(self.divided(a, at, via, depth + 1) for a in expr.args[1:])
            summed = _sums_everything(self.ctx, expr)
            if summed is not None and self._per_sample(summed, 0):
                return True  # per-sample losses summed: the micro-batches add up to the nominal batch's sum
            func = expr.func
            if isinstance(func, ast.Attribute):
                if func.attr in DIVIDING_METHODS:
                    return True
                if func.attr in ("mul", "mul_", "multiply") and any(
                    self.divided(a, at, via, depth + 1) for a in expr.args
                ):
                    return True
                if self.ctx.call_qualname(expr) in DIVIDING_FUNCTIONS:
                    return True
            if self._sum_reduced(expr):
                return True
            callee = self._callee(expr)
            if callee is not None:
                return self._returns_divided_by(callee, None, depth + 1, expr, via)
            if isinstance(func, ast.Attribute) and func.attr in LOSS_KEEPING_METHODS:
                return self.divided(func.value, at, via, depth + 1)
            if isinstance(func, ast.Attribute) and func.attr in torch_names.LOSS_SCALING_METHODS and expr.args:
                return self.divided(expr.args[0], at, via, depth + 1)  # apex `amp.scale_loss(loss / n, opt)`
            return False
        if isinstance(expr, ast.Subscript):
            return self.divided(expr.value, at, via, depth + 1)
        key = symbol(expr)
        if key is None:
            return False
        return self._symbol_divided(key, at, via, depth)

    def _symbol_divided(self, key: str, at: ast.AST, via: tuple, depth: int) -> bool:
        bindings = dataflow(self.ctx).reaching(key, at)
        if not bindings:
            return self._set_in_another_method(key, at, depth)
        return any(self._binding_divides(binding, key, via, depth) for binding in bindings)

    def _binding_divides(self, binding: Binding, key: str, via: tuple, depth: int) -> bool:
        """Whether the value ``binding`` gives ``key`` was divided."""
        kind, node = binding.kind, binding.stmt
        if kind == "augassign":
            if isinstance(node.op, (ast.Div, ast.FloorDiv)):
                return True
            # `loss *= scale`, `loss += aux`: the update's operand, or the value it updates.
            return self.divided(node.value, node, via, depth + 1) or self._symbol_divided(key, node, via, depth + 1)
        if kind == "param":
            function = self.ctx.parent(self.ctx.parent(node))
            if via and resolve_local_call(self.ctx, via[-1]) is function:
                arg = call_argument(self.ctx, via[-1], function, key)
                if arg is None:
                    return True
                return self.divided(arg, via[-1], via[:-1], depth + 1)
            return True  # fed by a caller that cannot be seen: give it the benefit of the doubt
        if kind in ("assign", "walrus", "with"):
            return binding.value is not None and self.divided(binding.value, node, via, depth + 1)
        if kind == "unpack" and isinstance(binding.source, ast.Call):
            if self._holds_elements_of(binding.source):
                return self.divided(binding.source, node, via, depth + 1)  # `a, b = tuple(l / n for ...)`
            callee = self._callee(binding.source)
            return callee is not None and self._returns_divided_by(
                callee, binding.index, depth + 1, binding.source, via
            )
        if kind == "unpack" and binding.source is not None:
            # `main, aux = losses`, `main, *rest = [l / n for l in ls]`: an element of the container
            return self.divided(binding.source, node, via, depth + 1)
        return False  # a loop variable, an import, ...: not a loss this code divided

    def _holds_elements_of(self, call: ast.Call) -> bool:
        """``tuple(xs)``, ``list(xs)``, ``sorted(xs)`` (a copy of its argument's elements) or
        ``sum(xs)`` (their sum): builtins, with one positional argument, whose result keeps the
        scaling of the elements they are handed."""
        if len(call.args) != 1 or call.keywords or isinstance(call.args[0], ast.Starred):
            return False
        return is_copying_call(self.ctx, call) or (
            isinstance(call.func, ast.Name) and call.func.id == "sum" and not dataflow(self.ctx).reaching(call.func)
        )

    def _set_in_another_method(self, key: str, at: ast.AST, depth: int) -> bool:
        """``self.scale`` read in a method and set in another one (``self.scale = 1 / accum`` in
        ``__init__``): divided if one of those settings divides."""
        if not key.startswith("self."):
            return False
        method = self.ctx.enclosing_function(at)
        while method is not None and not isinstance(self.ctx.parent(method), ast.ClassDef):
            method = self.ctx.enclosing_function(method)
        if method is None:
            return False
        flow = dataflow(self.ctx)
        return any(
            self._binding_divides(binding, key, (), depth + 1)
            for other in self.ctx.parent(method).body
            if isinstance(other, (ast.FunctionDef, ast.AsyncFunctionDef)) and other is not method
            for binding in flow.flow(other).bindings.get(key, ())
        )

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
        assigned = list(
            {b.stmt: None for b in dataflow(self.ctx).visible_bindings(key, expr) if isinstance(b.stmt, ast.Assign)}
        )
        if assigned and depth < 2:
            return all(self._assigns_batch_size(a, key, depth) for a in assigned)
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
        """A loss call that sums over the batch (``reduction="sum"``, or a criterion built with it;
        a loss function or module of the project, every one the call may run, that returns a full
        sum of unaveraged terms): summed losses accumulate into the sum over the large batch,
        nothing to divide."""
        if self._reduction(call) == "sum":
            return True
        callees = _callees(self.ctx, call)
        return bool(callees) and all(function_summary(c, "torch.returns-sum", _returns_sum, False) for c in callees)

    def _reduction(self, call: ast.Call) -> str | None:
        """The reduction a loss call asks for, on the call or on the criterion it calls."""
        found = _reduction_of(call)
        if found is not None:
            return found
        for origin in dataflow(self.ctx).origins(call.func):
            if isinstance(origin, ast.Call) and _reduction_of(origin) is not None:
                return _reduction_of(origin)
        return None

    def _per_sample(self, expr: ast.AST, depth: int) -> bool:
        """Whether ``expr`` holds losses not reduced over the samples: a loss call with
        ``reduction="none"`` (on the call or its criterion), through products with a mask or
        weights, indexing, shape changes, reductions along a dimension and assignments."""
        if depth > MAX_TRACE_DEPTH:
            return False
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mult):
            return self._per_sample(expr.left, depth + 1) or self._per_sample(expr.right, depth + 1)
        if isinstance(expr, ast.Subscript):
            return self._per_sample(expr.value, depth + 1)
        if isinstance(expr, ast.Call):
            if self._reduction(expr) == "none":
                return True
            found = method_call(expr)
            if found is None:
                return False
            name, receiver = found
            along_a_dimension = name in REDUCING_METHODS and bool(expr.args or expr.keywords)
            if along_a_dimension or name in SHAPE_KEEPING_METHODS:
                return self._per_sample(receiver, depth + 1)
            return False
        key = symbol(expr)
        if key is None:
            return False
        return any(
            b.kind in ("assign", "walrus") and b.value is not None and self._per_sample(b.value, depth + 1)
            for b in dataflow(self.ctx).reaching(key, expr)
        )

    def _callee(self, call: ast.Call) -> Definition | None:
        """The function a call runs: one of this file, the ``__call__`` of an instance of a class of
        the project (the ``forward`` of a torch module's instance), or a function of another file."""
        local = resolve_local_call(self.ctx, call)
        if local is not None:
            return Definition(self.ctx, local)
        return resolve_instance_call(self.ctx, call) or module_forward(self.ctx, call) or resolve_call(self.ctx, call)

    def _returns_divided_by(
        self, callee: Definition, index: int | None, depth: int, call: ast.Call, via: tuple
    ) -> bool:
        """Whether what ``callee`` returns (element ``index`` of a returned tuple) was divided: traced
        here for a function of this file, asked once per run in its own file for another's (a
        function asked for while it is being answered, in a recursion, counts as divided)."""
        if callee.ctx is self.ctx:
            return self._returns_divided(callee.node, index, depth, call, via)
        return function_summary(
            callee, f"torch.returns-divided.{index}", lambda d: _Trace(d.ctx)._returns_divided(d.node, index, 0), True
        )

    def _returns_divided(
        self, func: ast.AST, index: int | None, depth: int, call: ast.Call | None = None, via: tuple = ()
    ) -> bool:
        """Whether ``func`` returns a divided loss (element ``index`` of a returned tuple). A
        function of this file reached by ``call`` reads its parameters as the arguments of that
        call (``def masked(values, mask): return (values * mask).sum()`` divides nothing it is not
        handed divided); other callees' parameters get the benefit of the doubt."""
        inner = via + (call,) if call is not None and resolve_local_call(self.ctx, call) is func else ()
        for node in walk_function_body(func):
            if isinstance(node, ast.Return) and node.value is not None:
                value = node.value
                if index is not None and isinstance(value, (ast.Tuple, ast.List)) and index < len(value.elts):
                    value = value.elts[index]
                if self.divided(value, node, inner, depth):
                    return True
        return False


BATCH_SIZE_NAME = re.compile(r"^(bs|batch_?size|batchsize|n_?batch|num_samples|n_samples)$", re.I)


def _is_zero(expr: ast.AST) -> bool:
    return isinstance(expr, ast.Constant) and expr.value == 0 and type(expr.value) is int


def _reduction_of(call: ast.Call) -> str | None:
    """``"sum"``, ``"none"`` or ``"mean"`` from a call's keywords (``reduction="sum"``, the legacy
    ``size_average=False`` / ``reduce=False``); None when the call does not say."""
    for kw in call.keywords:
        if not isinstance(kw.value, ast.Constant):
            continue
        if kw.arg == "reduction" and kw.value.value in ("sum", "none", "mean"):
            return kw.value.value
        if kw.arg == "reduce" and kw.value.value is False:
            return "none"
    for kw in call.keywords:
        if kw.arg == "size_average" and isinstance(kw.value, ast.Constant) and kw.value.value is False:
            return "sum"
    return None


def _sums_everything(ctx: FileContext, call: ast.Call) -> ast.AST | None:
    """What a full sum adds up: ``x`` of ``x.sum()`` or ``torch.sum(x)`` without a dimension."""
    found = method_call(call)
    if found is not None and found[0] == "sum" and not call.args and not call.keywords:
        return found[1]
    if ctx.call_qualname(call) == "torch.sum" and len(call.args) == 1 and not call.keywords:
        return call.args[0]
    return None


def _callees(ctx: FileContext, call: ast.Call) -> list[Definition]:
    """The functions ``call`` may run: one function of the project, or the ``forward`` of every
    project module class its callee may be an instance of."""
    found = resolve_callee(ctx, call)
    if found is not None:
        return [Definition(*found)]
    return module_forwards(ctx, call) or []


def _returns_sum(definition: Definition) -> bool:
    """Whether every value ``definition`` returns is a full sum of terms nothing averaged
    (``return torch.sum(torch.clamp(d_pos - d_neg + margin, min=0))``), also through names and
    the loss functions it returns the result of: a loss that sums over its samples."""
    returns = [n.value for n in walk_function_body(definition.node) if isinstance(n, ast.Return)]
    return bool(returns) and all(r is not None and _is_full_sum(definition.ctx, r, 0) for r in returns)


def _is_full_sum(ctx: FileContext, expr: ast.AST, depth: int) -> bool:
    if depth > MAX_TRACE_DEPTH:
        return False
    summed = _sums_everything(ctx, expr) if isinstance(expr, ast.Call) else None
    if summed is not None:
        return not _averages(ctx, summed, set())
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        return _is_full_sum(ctx, expr.left, depth + 1) and _is_full_sum(ctx, expr.right, depth + 1)
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mult):
        # `0.5 * torch.sum(...)`: a constant weight keeps a sum a sum
        sides = (expr.left, expr.right)
        return any(isinstance(s, ast.Constant) for s in sides) and any(
            _is_full_sum(ctx, s, depth + 1) for s in sides if not isinstance(s, ast.Constant)
        )
    if isinstance(expr, ast.Name):
        bindings = dataflow(ctx).reaching(expr)
        return bool(bindings) and all(
            b.kind == "assign" and b.value is not None and _is_full_sum(ctx, b.value, depth + 1) for b in bindings
        )
    if isinstance(expr, ast.Call):
        callees = _callees(ctx, expr)
        return bool(callees) and all(function_summary(c, "torch.returns-sum", _returns_sum, False) for c in callees)
    return False


def _averages(ctx: FileContext, expr: ast.AST, seen: set) -> bool:
    """Whether ``expr`` (or a value a name in it was assigned) averages anything: a mean
    (``x.mean()``, ``torch.mean(x)``) or a functional loss with its default mean reduction."""
    for node in walk_no_scopes(expr):
        if isinstance(node, ast.Call):
            found = method_call(node)
            qualname = ctx.call_qualname(node) or ""
            if (found is not None and found[0] in torch_names.MEAN_REDUCTION_METHODS) or (
                qualname in torch_names.MEAN_REDUCTION_FUNCTIONS
            ):
                return True
            if (
                qualname.startswith(torch_names.FUNCTIONAL)
                and qualname[len(torch_names.FUNCTIONAL) :] in torch_names.FUNCTIONAL_LOSSES
                and _reduction_of(node) not in ("none", "sum")
            ):
                return True
        elif isinstance(node, ast.Name) and node not in seen:
            seen.add(node)
            for binding in dataflow(ctx).reaching(node):
                if binding.kind == "assign" and binding.value is not None and _averages(ctx, binding.value, seen):
                    return True
    return False
